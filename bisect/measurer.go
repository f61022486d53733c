package bisect

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/measure"
	"github.com/lpmbisect/lpmbisect/vmrunner"
)

// BootResults are the results of one completed boot.
type BootResults []*benchfmt.Result

// Measurer boots kernels and returns what the completed boots delivered.
type Measurer interface {
	// Measure boots each kernel boots times, interleaving the kernels, and
	// returns per kernel the results of each completed boot. When it fails
	// part way it returns what it has with the error; an error wrapping
	// measure.ErrBootFailed means a kernel did not deliver results, which
	// the error names.
	Measure(ctx context.Context, kernels []Target, boots int) ([][]BootResults, error)
}

// Target is a kernel to measure.
type Target struct {
	Input string // anything kernel.Resolve accepts
	Label string // what progress lines call it; "" for its release
}

// VMMeasurer measures kernels under QEMU with the measure package.
type VMMeasurer struct {
	Guest     string // guest binary
	CacheDir  string // kernel and initramfs cache
	NoModules bool
	GuestArgs []string // the guest's run plan (measure.GuestPlan.KernelArgs)
	// Selector boots with the requested accelerator. Parallel boots use
	// their own selectors with the same request.
	Selector *vmrunner.Selector
	VM       vmrunner.Config // QEMU, memory, CPUs, deadlines
	RunDir   string          // each Measure call gets a numbered subdirectory
	// Parallel is how many boots may run at once. It only applies under
	// icount, whose instruction counts do not change when VMs share the
	// host; wall-time boots never overlap.
	Parallel int
	Log      io.Writer // a line per boot; nil for none

	mu   sync.Mutex
	runs int
}

// Measure implements Measurer.
func (m *VMMeasurer) Measure(ctx context.Context, kernels []Target, boots int) ([][]BootResults, error) {
	out := make([][]BootResults, len(kernels))
	if boots <= 0 || len(kernels) == 0 {
		return out, nil
	}
	inputs := make([]string, len(kernels))
	for i, k := range kernels {
		inputs[i] = k.Input
	}
	sides, err := measure.Prepare(inputs, m.Guest, m.CacheDir, m.NoModules)
	if err != nil {
		return out, err
	}
	for i, s := range sides {
		if kernels[i].Label != "" {
			s.Label = kernels[i].Label
		}
	}
	m.mu.Lock()
	m.runs++
	runDir := filepath.Join(m.RunDir, fmt.Sprintf("%03d", m.runs))
	m.mu.Unlock()
	for _, s := range sides {
		if s.ChannelNote != "" {
			m.logf("%s: %s", s.Label, s.ChannelNote)
		}
	}

	workers := 1
	if m.Selector.Requested == vmrunner.Icount && m.Parallel > 1 {
		workers = min(m.Parallel, boots)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		firstEr error
		started = time.Now()
		done    int
	)
	total := boots * len(kernels)
	perSide := map[string]int{}
	for w := range workers {
		n := boots / workers
		if w < boots%workers {
			n++
		}
		sel := m.Selector
		if workers > 1 {
			sel = &vmrunner.Selector{Requested: m.Selector.Requested, Notify: m.Selector.Notify}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf bytes.Buffer
			plan := measure.Plan{
				Sides: sides, Boots: n, GuestArgs: m.GuestArgs, Selector: sel, VM: m.VM,
				RunDir: filepath.Join(runDir, fmt.Sprintf("w%d", w+1)), Results: benchfmt.NewWriter(&buf),
				OnBoot: func(r measure.BootReport) {
					if r.Result.Outcome == vmrunner.Canceled {
						return // a signal, or a sibling's failure, which is reported
					}
					mu.Lock()
					defer mu.Unlock()
					status := string(r.Result.Outcome)
					if r.Result.Outcome == vmrunner.OK {
						done++
						perSide[r.Side.Name]++
						status += fmt.Sprintf(", %d results over %s", r.Written, r.Result.Channel)
					} else {
						status += ": " + r.Result.Detail + " (console: " + r.Result.ConsoleLog + ")"
					}
					m.logf("[%d/%d] %s boot %d (%s): %s in %s, elapsed %s", done, total, r.Side.Label,
						perSide[r.Side.Name], r.Result.Accel, status, r.Result.Duration.Round(100*time.Millisecond), measure.Elapsed(started))
				},
			}
			_, err := measure.Run(ctx, plan)
			results, perr := measure.ReadResults(&buf, "boots")
			mu.Lock()
			defer mu.Unlock()
			if perr != nil && err == nil {
				err = perr
			}
			group(out, results, w)
			if err != nil && firstEr == nil {
				firstEr = err
				cancel(err)
			}
		}()
	}
	wg.Wait()
	return out, firstEr
}

// group files results by side (A is kernel 0) and boot.
func group(out [][]BootResults, results []*benchfmt.Result, worker int) {
	type key struct {
		side int
		boot string
	}
	idx := map[key]int{}
	for _, r := range results {
		side := strings.IndexByte("ABCDEFGHIJKLMNOPQRSTUVWXYZ", r.GetConfig(measure.KeySide)[0])
		if side < 0 || side >= len(out) {
			continue
		}
		k := key{side, r.GetConfig(measure.KeyBoot)}
		i, ok := idx[k]
		if !ok {
			i = len(out[side])
			out[side] = append(out[side], nil)
			idx[k] = i
		}
		out[side][i] = append(out[side][i], r)
	}
}

func (m *VMMeasurer) logf(format string, args ...any) {
	if m.Log != nil {
		fmt.Fprintf(m.Log, "lpmbisect: "+format+"\n", args...)
	}
}

// ParamsKey identifies measurement parameters: results measured with
// different keys are never compared. It covers the accelerator, the guest's
// run plan, the VM shape and the guest binary itself.
func ParamsKey(accel vmrunner.Accel, guestArgs []string, memoryMB, cpus int, guest string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "accel=%s\nmemory=%d\ncpus=%d\n", accel, memoryMB, cpus)
	for _, a := range guestArgs {
		fmt.Fprintf(h, "arg=%s\n", a)
	}
	f, err := os.Open(guest)
	if err != nil {
		return "", fmt.Errorf("guest binary: %w", err)
	}
	defer f.Close()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("guest binary: %w", err)
	}
	return string(accel) + "-" + hex.EncodeToString(h.Sum(nil))[:12], nil
}

// isBootFailure reports whether err says a kernel did not deliver results.
func isBootFailure(err error) bool { return errors.Is(err, measure.ErrBootFailed) }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

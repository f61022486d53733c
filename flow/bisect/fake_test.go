package bisect

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/host/measure"
)

// Fake kernels for tests that boot nothing: a kernel is a small text file
// whose lines say what a boot of it measures:
//
//	value=1000     insn/op of the lookup benchmark
//	noise=0.03     boot-to-boot wobble of ±3 % (deterministic)
//	noboot         every boot fails
//	extra          any other line changes the image hash, not the value
func writeKernel(t *testing.T, path string, value float64, extra ...string) string {
	t.Helper()
	text := fmt.Sprintf("value=%g\n%s", value, strings.Join(extra, "\n"))
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeResolve resolves a fake kernel: its SHA-256 is the content's.
func fakeResolve(input string) (*kernel.Kernel, error) {
	data, err := os.ReadFile(input)
	if err != nil {
		return nil, fmt.Errorf("kernel %q: %w", input, kernel.ErrNotFound)
	}
	if !strings.HasPrefix(string(data), "value=") {
		return nil, fmt.Errorf("kernel %q: %w", input, kernel.ErrNotKernel)
	}
	sum := sha256.Sum256(data)
	return &kernel.Kernel{Input: input, Image: input, Release: "6.12.0-test", SHA256: hex.EncodeToString(sum[:])}, nil
}

// fakeMeasurer "boots" fake kernels: each boot gives 3 samples of the
// kernel's value with a deterministic wobble of ±0.02 % (like icount).
type fakeMeasurer struct {
	mu       sync.Mutex
	boots    map[string]int // boots per image hash
	calls    int
	cancel   func() // when set, called once calls reaches cancelAt
	cancelAt int
}

func (f *fakeMeasurer) Measure(ctx context.Context, kernels []Candidate, boots int) ([][]BootResults, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.cancel != nil && f.calls == f.cancelAt {
		f.cancel()
		return make([][]BootResults, len(kernels)), context.Canceled
	}
	if f.boots == nil {
		f.boots = map[string]int{}
	}
	out := make([][]BootResults, len(kernels))
	for i, k := range kernels {
		data, err := os.ReadFile(k.Input)
		if err != nil {
			return out, err
		}
		if strings.Contains(string(data), "noboot") {
			return out, fmt.Errorf("kernel %s: %w: truncated", k.Label, measure.ErrBootFailed)
		}
		rk, _ := fakeResolve(k.Input)
		var value, noise float64
		fmt.Sscanf(string(data), "value=%g", &value)
		if _, after, ok := strings.Cut(string(data), "noise="); ok {
			fmt.Sscanf(after, "%g", &noise)
		}
		for b := 0; b < boots; b++ {
			f.boots[rk.SHA256]++
			n := f.boots[rk.SHA256]
			var boot BootResults
			for s := 0; s < 3; s++ {
				v := value * (1 + 2e-4*math.Sin(float64(7*n+s)) + noise*math.Sin(float64(13*n)))
				r := &benchfmt.Result{Name: benchfmt.Name("LPMTrie/op=lookup/keys=random/entries=10000"), Iters: 1000,
					Values: []benchfmt.Value{{Value: v, Unit: "insn/op"}}}
				r.SetConfig("kernel", k.Label)
				r.SetConfig("side", string(rune('A'+i)))
				r.SetConfig("boot", strconv.Itoa(b+1))
				boot = append(boot, r)
			}
			out[i] = append(out[i], boot)
		}
	}
	return out, nil
}

// imagesMeasured counts the distinct images the fake booted.
func (f *fakeMeasurer) imagesMeasured() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.boots)
}

func newBench(t *testing.T, m Measurer, dir string, reverse bool) *Bench {
	t.Helper()
	return &Bench{
		Judge:    Judge{Alpha: 0.05, MinEffectPct: 1},
		Store:    &Store{Dir: dir},
		Measurer: m,
		Resolve:  fakeResolve,
		MaxBoots: 8,
		Reverse:  reverse,
	}
}

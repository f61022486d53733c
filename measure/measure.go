// Package measure runs boots of one or more kernels and turns what the guests
// send into labelled benchmark results: it resolves each kernel input, packs
// the initramfs for it, boots it the planned number of times (interleaving
// kernels A B A B … so slow drift of the host hits both sides alike), and
// writes every completed boot's results, labelled with the kernel, the side,
// the boot number and the accelerator, as soon as the boot ends.
//
// Only boots whose stream ended with a valid trailer are written as results;
// the samples of a boot that panicked or stalled stay in its run directory
// (results.out) for inspection but never count, since a partial boot is not a
// complete unit of measurement.
package measure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/sys/unix"

	"github.com/lpmbisect/lpmbisect/initramfs"
	"github.com/lpmbisect/lpmbisect/kernel"
	"github.com/lpmbisect/lpmbisect/vmrunner"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Configuration keys the host adds to every result.
const (
	KeySide  = "side"       // A or B (run: A)
	KeyBoot  = "boot"       // boot number within the side, from 1
	KeyImage = "image"      // first 12 hex digits of the image's sha256
	KeySeed  = "order-seed" // seed of the randomized boot order
	KeyPair  = "pair"       // round of a paired run: its A and B boot ran side by side
)

// Side is one kernel under test.
type Side struct {
	Name   string         // "A" or "B"
	Kernel *kernel.Kernel // resolved kernel
	Label  string         // what results call the kernel (config key "kernel")
	Image  *initramfs.Image
	// Channel notes how results will travel, for the user: empty when
	// virtio is expected to work.
	ChannelNote string
}

// Prepare resolves kernel inputs and packs the initramfs of each. Errors are
// the user's (a missing file, not a kernel) and come before any VM starts.
func Prepare(inputs []string, guest, cacheDir string, noModules bool) ([]*Side, error) {
	var sides []*Side
	for i, in := range inputs {
		k, err := kernel.Resolve(in, cacheDir)
		if err != nil {
			return nil, err
		}
		s := &Side{Name: string(rune('A' + i)), Kernel: k, Label: k.Release}
		var mods []initramfs.Module
		if noModules {
			s.ChannelNote = "modules not packed (--no-modules): results use the virtio port only if virtio console is built in, else the serial fallback"
		} else {
			km, err := k.ChannelModules(cacheDir)
			switch {
			case errors.Is(err, kernel.ErrModulesUnknown), errors.Is(err, kernel.ErrModuleNotFound):
				s.ChannelNote = fmt.Sprintf("%v: if virtio console is not built in, results use the serial fallback", err)
			case err != nil:
				return nil, err
			}
			for _, m := range km {
				mods = append(mods, initramfs.Module{Name: m.Name, Path: m.Path})
			}
		}
		img, err := initramfs.Build(initramfs.Spec{Guest: guest, Modules: mods}, cacheDir)
		if err != nil {
			return nil, err
		}
		s.Image = img
		sides = append(sides, s)
	}
	// Two different images with the same release (a rebuilt tree) must not
	// share a label, or benchstat -col kernel would merge them.
	if len(sides) == 2 && sides[0].Label == sides[1].Label && sides[0].Kernel.SHA256 != sides[1].Kernel.SHA256 {
		for _, s := range sides {
			s.Label += "@" + s.Kernel.SHA256[:12]
		}
	}
	return sides, nil
}

// Plan says what to run.
type Plan struct {
	Sides []*Side
	Boots int // boots per side (the minimum, when adaptive)
	// MaxBoots, when above Boots, lets More add rounds of boots (one more
	// boot per side each) while it returns true, up to MaxBoots per side.
	MaxBoots int
	More     func() bool
	// Seed drives the order of sides within each round of boots (A B or
	// B A …), so drift of the host does not always hit the same side first.
	// Record it to reproduce a run's order.
	Seed      uint64
	GuestArgs []string // run plan for the guest (kernel parameters)
	Selector  *vmrunner.Selector
	VM        vmrunner.Config // template: QEMU, memory, CPUs, deadlines, limits
	RunDir    string          // one subdirectory per boot
	MaxFailed int             // failed boots tolerated per side (default 2)
	Results   *benchfmt.Writer
	OnBoot    func(BootReport) // called after every boot
	// Boot boots one VM; nil means Selector.Boot. Tests inject a fake.
	Boot        func(context.Context, vmrunner.Config) (*vmrunner.Result, error)
	OnBootStart func(side *Side, boot, done, total int)
	// Paired runs two sides in pairs (see runPaired): each round boots A and
	// B at once, pinned to one host CPU, and lets them take their steps in
	// turn. Boots, MaxBoots and More then count complete pairs.
	Paired bool
}

// BootReport describes one finished boot.
type BootReport struct {
	Side    *Side
	Boot    int // 1-based within the side
	Done    int // boots finished so far, all sides
	Total   int
	Result  *vmrunner.Result
	Written int // results written
}

// Summary is what Run did.
type Summary struct {
	OK     map[string]int // completed boots per side
	Accels []string       // accelerators the completed boots ran under
	Failed []BootReport
	Notes  []wire.Note // distinct notes (unsupported benchmarks, …)
	Pairs  int         // complete pairs of a paired run
	Steps  int         // steps the guests of a paired run took in turn
	// PinnedCPU is the host CPU the VMs of a paired run were pinned to, -1
	// if they could not be pinned.
	PinnedCPU int
}

// ErrNoResults is wrapped by Run's error when a kernel booted but none of
// the selected benchmarks produced results (all unsupported or failed): the
// kernel cannot be tested with them.
var ErrNoResults = errors.New("no benchmark produced results")

// ErrBootFailed is wrapped by Run's error when a kernel failed to deliver
// results: the infrastructure (or the kernel) failed, not the comparison.
var ErrBootFailed = errors.New("did not deliver results")

// Run boots the sides in rounds, one boot per side per round in an order
// drawn from Seed, until each has Boots completed boots (more while
// p.More asks, up to MaxBoots). It returns early, with what it has, when the context is canceled or
// a side keeps failing (its first boot fails, or more than MaxFailed do).
func Run(ctx context.Context, p Plan) (*Summary, error) {
	if p.MaxFailed == 0 {
		p.MaxFailed = 2
	}
	if p.Boot == nil {
		p.Boot = p.Selector.Boot
	}
	if p.Paired {
		if len(p.Sides) != 2 {
			return &Summary{OK: map[string]int{}}, fmt.Errorf("a paired run needs two kernels, not %d", len(p.Sides))
		}
		return runPaired(ctx, p)
	}
	st := newRunState()
	sum := st.sum
	target := p.Boots
	st.total = target * len(p.Sides)
	order := rand.New(rand.NewPCG(p.Seed, 0x6c706d62)) // "lpmb"
	for {
		if sum.minOK(p.Sides) >= target {
			if target >= p.MaxBoots || p.More == nil || !p.More() {
				break
			}
			target++
			st.total = target * len(p.Sides)
		}
		sides := append([]*Side(nil), p.Sides...)
		order.Shuffle(len(sides), func(i, j int) { sides[i], sides[j] = sides[j], sides[i] })
		for _, s := range sides {
			if sum.OK[s.Name] >= target {
				continue
			}
			if err := ctx.Err(); err != nil {
				return sum, context.Cause(ctx)
			}
			boot := st.nextBoot(s)
			if p.OnBootStart != nil {
				p.OnBootStart(s, boot, st.done, st.total)
			}
			cfg := bootConfig(p, s, boot)
			r, err := p.Boot(ctx, cfg)
			if err != nil {
				return sum, err
			}
			if err := st.record(ctx, p, s, boot, 0, cfg, r); err != nil {
				return sum, err
			}
		}
	}
	return sum, nil
}

// runState is the bookkeeping of a run.
type runState struct {
	sum      *Summary
	failed   map[string]int
	seenNote map[wire.Note]bool
	done     int // boots finished, all sides
	total    int // boots planned, all sides
}

func newRunState() *runState {
	return &runState{sum: &Summary{OK: map[string]int{}}, failed: map[string]int{}, seenNote: map[wire.Note]bool{}}
}

// nextBoot numbers the next boot of side s, from 1, failed boots included.
func (st *runState) nextBoot(s *Side) int { return st.sum.OK[s.Name] + st.failed[s.Name] + 1 }

// bootConfig is the VM configuration of one boot.
func bootConfig(p Plan, s *Side, boot int) vmrunner.Config {
	cfg := p.VM
	cfg.Kernel, cfg.Initramfs = s.Kernel.Image, s.Image.Path
	cfg.KernelArgs = append(append([]string(nil), p.GuestArgs...), "lpmbisect.accel="+string(accelFor(p.Selector)))
	cfg.RunDir = filepath.Join(p.RunDir, fmt.Sprintf("%s-%02d", s.Name, boot))
	return cfg
}

// record writes the results of a finished boot (labelled with pair when not
// 0), counts it, reports it, and returns an error when the run must stop:
// the context was canceled, the kernel produced no results, or it keeps
// failing (its first boot failed, or more than MaxFailed did).
func (st *runState) record(ctx context.Context, p Plan, s *Side, boot, pair int, cfg vmrunner.Config, r *vmrunner.Result) error {
	sum := st.sum
	rep := BootReport{Side: s, Boot: boot, Result: r, Total: st.total}
	if r.Outcome == vmrunner.OK {
		n, err := writeResults(p.Results, s, boot, pair, p.Seed, r)
		if err != nil {
			return err
		}
		rep.Written = n
		sum.OK[s.Name]++
		if !slices.Contains(sum.Accels, string(r.Accel)) {
			sum.Accels = append(sum.Accels, string(r.Accel))
		}
		st.done++
		for _, n := range r.Stream.Notes {
			if !st.seenNote[n] && n.Key != wire.KeyInfo {
				st.seenNote[n] = true
				sum.Notes = append(sum.Notes, n)
			}
		}
		if n == 0 {
			if p.OnBoot != nil {
				rep.Done = st.done
				p.OnBoot(rep)
			}
			return fmt.Errorf("kernel %s (%s): %w%s", s.Name, s.Label, ErrNoResults, whyNoResults(r.Stream.Notes))
		}
	} else {
		st.failed[s.Name]++
		sum.Failed = append(sum.Failed, rep)
	}
	rep.Done = st.done
	if p.OnBoot != nil {
		p.OnBoot(rep)
	}
	if r.Outcome == vmrunner.Canceled {
		return context.Cause(ctx)
	}
	if r.Outcome != vmrunner.OK && (sum.OK[s.Name] == 0 || st.failed[s.Name] > p.MaxFailed) {
		kept := ""
		if n := len(r.Stream.Results); n > 0 {
			kept = fmt.Sprintf("; its %d finished samples are kept in %s but not counted", n, filepath.Join(cfg.RunDir, "results.out"))
		}
		return fmt.Errorf("kernel %s (%s): %w: %s: %s (console log: %s%s)", s.Name, s.Label, ErrBootFailed, r.Outcome, r.Detail, r.ConsoleLog, kept)
	}
	return nil
}

func (s *Summary) minOK(sides []*Side) int {
	m := -1
	for _, side := range sides {
		if n := s.OK[side.Name]; m < 0 || n < m {
			m = n
		}
	}
	return m
}

// accelFor is the accelerator the guest is told about. Under Auto the first
// boot may still change it (KVM → TCG); the host relabels results with the
// accelerator actually used.
func accelFor(s *vmrunner.Selector) vmrunner.Accel {
	if s == nil {
		return vmrunner.TCG
	}
	if a := s.Accel(); a != "" {
		return a
	}
	return vmrunner.KVM
}

// writeResults labels a boot's results and writes them; pair is the round
// of a paired run, 0 for none.
func writeResults(w *benchfmt.Writer, s *Side, boot, pair int, seed uint64, r *vmrunner.Result) (int, error) {
	n := 0
	for _, res := range r.Stream.Results {
		res.SetConfig(wire.KeyKernel, s.Label)
		res.SetConfig(wire.KeyAccel, string(r.Accel))
		res.SetConfig(KeySide, s.Name)
		res.SetConfig(KeyBoot, strconv.Itoa(boot))
		if pair > 0 {
			res.SetConfig(KeyPair, strconv.Itoa(pair))
		}
		res.SetConfig(KeyImage, s.Kernel.SHA256[:12])
		res.SetConfig(KeySeed, strconv.FormatUint(seed, 10))
		for i := range res.Config {
			res.Config[i].File = true
		}
		// Units follow the accelerator actually used, never the guest's guess.
		for i := range res.Values {
			if u := res.Values[i].Unit; u == "ns/op" || u == "insn/op" {
				res.Values[i].Unit = r.Accel.Unit()
			}
		}
		if err := w.Write(res); err != nil {
			return n, fmt.Errorf("write results: %w", err)
		}
		n++
	}
	return n, nil
}

// ResultsFile is a results file that is written boot by boot and only
// renamed to its final name when the run ends as planned, so a file under
// the final name is always complete. An interrupted run leaves its finished
// boots in the partial file, whose name Close reports.
type ResultsFile struct {
	final, partial string // both empty for standard output
	f              *os.File
	*benchfmt.Writer
}

// StreamResults writes results to w (standard output) as they come.
func StreamResults(w io.Writer) *ResultsFile {
	return &ResultsFile{Writer: benchfmt.NewWriter(w)}
}

// CheckWritable tells, without creating anything, whether a results file
// could be created at path: its directory must exist and be writable.
func CheckWritable(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("results file %s: %w (create the directory or choose another --out)", path, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("results file %s: %s is not a directory (choose another --out)", path, dir)
	}
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return fmt.Errorf("results file %s: directory not writable: %w (choose another --out)", path, err)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("results file %s is a directory (choose a file name for --out)", path)
	}
	return nil
}

// CreateResultsFile checks that path can be written before any VM starts.
func CreateResultsFile(path string) (*ResultsFile, error) {
	if path == "" {
		return nil, errors.New("results file: empty path")
	}
	partial := path + ".partial"
	f, err := os.Create(partial)
	if err != nil {
		return nil, fmt.Errorf("results file: %w (choose a writable --out)", err)
	}
	return &ResultsFile{final: path, partial: partial, f: f, Writer: benchfmt.NewWriter(f)}, nil
}

// Path is where the file is while it is written (FILE.partial); empty for
// standard output.
func (rf *ResultsFile) Path() string { return rf.partial }

// Sync flushes what has been written to disk.
func (rf *ResultsFile) Sync() error {
	if rf.final == "" {
		return nil
	}
	if err := rf.f.Sync(); err != nil {
		return fmt.Errorf("results file %s: %w", rf.partial, err)
	}
	return nil
}

// Close ends the file. When complete, it is renamed to its final name;
// otherwise it keeps the .partial name. Close returns the path it is under.
func (rf *ResultsFile) Close(complete bool) (string, error) {
	if rf.final == "" {
		return "standard output", nil
	}
	if err := rf.f.Sync(); err != nil {
		rf.f.Close()
		return rf.partial, fmt.Errorf("results file %s: %w", rf.partial, err)
	}
	if err := rf.f.Close(); err != nil {
		return rf.partial, fmt.Errorf("results file %s: %w", rf.partial, err)
	}
	if !complete {
		return rf.partial, nil
	}
	if err := os.Rename(rf.partial, rf.final); err != nil {
		return rf.partial, fmt.Errorf("results file: %w", err)
	}
	return rf.final, nil
}

// ReadResultsFile reads the benchfmt results file at path.
func ReadResultsFile(path string) ([]*benchfmt.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	defer f.Close()
	return ReadResults(f, path)
}

// ReadResults reads a benchfmt results file.
func ReadResults(r io.Reader, name string) ([]*benchfmt.Result, error) {
	var out []*benchfmt.Result
	br := benchfmt.NewReader(r, name)
	for br.Scan() {
		if res, ok := br.Result().(*benchfmt.Result); ok {
			out = append(out, res.Clone())
		}
	}
	if err := br.Err(); err != nil {
		return nil, fmt.Errorf("read results %s: %w", name, err)
	}
	return out, nil
}

// Elapsed is a helper for progress lines.
func Elapsed(since time.Time) string { return time.Since(since).Round(100 * time.Millisecond).String() }

// whyNoResults summarises the notes of a boot without results.
func whyNoResults(notes []wire.Note) string {
	var why []string
	for _, n := range notes {
		if n.Key == wire.KeyUnsupported || n.Key == wire.KeyFailed {
			why = append(why, n.Text)
		}
	}
	switch len(why) {
	case 0:
		return " (check --bench: lpmbisect list shows the benchmarks)"
	case 1:
		return ": " + why[0]
	}
	return fmt.Sprintf(": %s (and %d more)", why[0], len(why)-1)
}

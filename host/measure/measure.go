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
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/sys/unix"

	"github.com/lpmbisect/lpmbisect/host/initramfs"
	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/internal/version"
	"github.com/lpmbisect/lpmbisect/internal/words"
	"github.com/lpmbisect/lpmbisect/wire"
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
	// Labels are configuration lines added to every result of this side
	// (commit, compiler, date, …), besides those the host always writes.
	Labels map[string]string
	// Insight is the compressed insight document (wire.DecodeInsight) of
	// the side's first boot, when the run's guest arguments armed the
	// pass (wire.InsightArgs); InsightProblem says why a boot's document
	// was dropped.
	Insight        []byte
	InsightProblem string
	// Memory is what the memory plugin counted in the boot that ran the
	// insight pass (nil without the memory pass); MemoryProblem says why
	// there is nothing when the plugin was loaded.
	Memory        *vmrunner.MemCounts
	MemoryProblem string
	// BootImage is the file QEMU boots when it is not Kernel.Image: the
	// kernel ELF for a PVH boot (pvhImage), which Setup.Prepare picks
	// under icount.
	BootImage string
	// StaticSymbols says the host reads this kernel's symbols from a
	// static source (a vmlinux, a -dbg package): its boots tell an armed
	// insight pass not to send kallsyms (wire.SkipKallsyms).
	StaticSymbols bool
	// NoInsight leaves an armed insight pass out of this side's boots: a
	// side whose findings nobody reads (nightly's reference).
	NoInsight bool
	// Variant is the side's CPU profile and its own extra kernel
	// parameters (Setup.Start sets them: the setup's, or
	// RunOptions.Variants'), Params its measurement parameters
	// (paramsKey; "" for none), which label every result.
	Variant Variant
	Params  string

	// kernelParams are the side's extra kernel parameters, the setup's
	// and its Variant's, which label its results (wire.KeyAppend).
	kernelParams string

	// insightAgain arms the insight pass in the side's next boot, without
	// the memory plugin: QEMU died in the boot that loaded it (Runner's
	// plugin fault rule).
	insightAgain bool
}

// prepare resolves kernel inputs and packs the initramfs of each, with
// files besides the guest and modules. Errors are the user's (a missing
// file, not a kernel) and come before any VM starts.
func prepare(inputs []string, guest, cacheDir string, noModules bool, files ...initramfs.File) ([]*Side, error) {
	var sides []*Side
	for i, in := range inputs {
		k, err := kernel.Resolve(in, cacheDir)
		if err != nil {
			return nil, err
		}
		s := &Side{Name: string(rune('A' + i)), Kernel: k, Label: k.Release}
		var mods []initramfs.Module
		if noModules {
			s.ChannelNote = "modules not packed (as asked): results use the virtio port only if virtio console is built in, else the serial fallback"
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
		img, err := initramfs.Build(initramfs.Spec{Guest: guest, Modules: mods, Files: files}, cacheDir)
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
			s.Label += "@" + words.ShortHash(s.Kernel.SHA256)
		}
	}
	return sides, nil
}

// BootReport describes one finished boot.
type BootReport struct {
	Side    *Side
	Boot    int // 1-based within the side
	Done    int // boots finished so far, all sides
	Total   int
	Result  *vmrunner.Result
	Written int // results written
	// Results are the boot's labelled results (none unless it completed).
	Results []*benchfmt.Result
}

// Summary is what a Runner did.
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

// ErrNoResults is wrapped by Measure's error when a kernel booted but none
// of the selected benchmarks produced results (all unsupported or failed):
// the kernel cannot be tested with them.
var ErrNoResults = errors.New("no benchmark produced results")

// ErrBootFailed is wrapped by Measure's error when a kernel failed to
// deliver results: the infrastructure (or the kernel) failed, not the
// comparison.
var ErrBootFailed = errors.New("did not deliver results")

// labelResults labels a boot's results with what the host knows (kernel
// label, accelerator used, side, boot, pair when not 0, image, order seed)
// and returns them; the guest's own labels are kept where the host has none.
func labelResults(s *Side, boot, pair int, seed uint64, params string, r *vmrunner.Result) []*benchfmt.Result {
	out := make([]*benchfmt.Result, 0, len(r.Stream.Results))
	phases := ""
	if r.Accel == wire.AccelIcount {
		phases = wire.FormatPhases(r.Phases) // the boot's, the same on each result
	}
	for _, res := range r.Stream.Results {
		res = res.Clone()
		res.SetConfig(wire.KeyKernel, s.Label)
		res.SetConfig(wire.KeyAccel, string(r.Accel))
		res.SetConfig(wire.KeySide, s.Name)
		res.SetConfig(wire.KeyBoot, strconv.Itoa(boot))
		if pair > 0 {
			res.SetConfig(wire.KeyPair, strconv.Itoa(pair))
		}
		res.SetConfig(wire.KeyImage, words.ShortHash(s.Kernel.SHA256))
		res.SetConfig(wire.KeyOrderSeed, strconv.FormatUint(seed, 10))
		res.SetConfig(wire.KeyVersion, version.String())
		if params != "" {
			res.SetConfig(wire.KeyParams, params)
		}
		for _, k := range slices.Sorted(maps.Keys(s.Labels)) {
			if v := s.Labels[k]; v != "" {
				res.SetConfig(k, v)
			}
		}
		if r.QEMUVersion != "" {
			res.SetConfig(wire.KeyQEMU, r.QEMUVersion)
		}
		if r.CPUModel != "" {
			res.SetConfig(wire.KeyCPUModel, r.CPUModel)
		}
		if s.kernelParams != "" {
			res.SetConfig(wire.KeyAppend, s.kernelParams)
		}
		if phases != "" {
			res.SetConfig(wire.KeyPhases, phases)
		}
		for i := range res.Config {
			res.Config[i].File = true
		}
		// Units follow the accelerator actually used, never the guest's guess.
		for i := range res.Values {
			if u := res.Values[i].Unit; u == wire.UnitNsPerOp || u == wire.UnitInsnPerOp {
				res.Values[i].Unit = r.Accel.Unit()
			}
		}
		out = append(out, res)
	}
	return out
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

// streamResults writes results to w (standard output) as they come.
func streamResults(w io.Writer) *ResultsFile {
	return &ResultsFile{Writer: benchfmt.NewWriter(w)}
}

// OpenResults is where a run's results go: the file path
// (CreateResultsFile), or w (standard output) as they come when path is "".
func OpenResults(path string, w io.Writer) (*ResultsFile, error) {
	if path == "" {
		return streamResults(w), nil
	}
	return CreateResultsFile(path)
}

// CheckWritable tells, without creating anything, whether a results file
// could be created at path: its directory must exist and be writable.
func CheckWritable(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("results file %s: %w (create the directory or choose another file)", path, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("results file %s: %s is not a directory (choose another file)", path, dir)
	}
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return fmt.Errorf("results file %s: directory not writable: %w (choose another file)", path, err)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("results file %s is a directory (choose a file name)", path)
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
		return nil, fmt.Errorf("results file: %w", err)
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

// ReadResults reads a benchfmt results file. A line longer than
// bufio.MaxScanTokenSize (64 KiB), which benchfmt's reader allows, is an
// error: a file from elsewhere costs at most that per line besides its
// results.
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
		return " (check the benchmark selection: lpmbisect list shows the benchmarks)"
	case 1:
		return ": " + why[0]
	}
	return fmt.Sprintf(": %s (and %d more)", why[0], len(why)-1)
}

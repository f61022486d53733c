package measure

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/lpmbisect/lpmbisect/workloads"
)

// GuestPlan is the guest's run plan, passed on the kernel command line as
// lpmbisect.* parameters (the guest reads them from /proc/cmdline).
type GuestPlan struct {
	// Bench selects benchmarks: a preset name (see workloads.Presets), a
	// comma-separated list of presets, or a regexp over result names
	// without "Benchmark". KernelArgs passes the resolved regexp.
	Bench        string
	Samples      int // samples per benchmark per boot
	Entries      int // LPM trie entries
	PrefixLen    int // LPM key prefix length (0: 32)
	BatchEntries int // elements of the MapBatch maps (0: the guest's default)
	Rounds       int // test-run repetitions (of 10000 ops) per sample
	Fault        string
}

// maxBenchArg bounds the resolved --bench regexp: the x86 kernel command
// line holds 2048 bytes in all, and the console and QEMU settings need some.
const maxBenchArg = 1024

// Pattern returns the regexp the guest gets: presets resolved.
func (g GuestPlan) Pattern() string { return workloads.ResolveBench(g.Bench) }

// Validate checks the plan before any VM starts.
func (g GuestPlan) Validate() error {
	pat := g.Pattern()
	if g.Bench == "" || strings.ContainsAny(pat, " \t\n\"") {
		return fmt.Errorf("--bench %q: must be a preset or a non-empty regexp without spaces or quotes", g.Bench)
	}
	if len(pat) > maxBenchArg {
		return fmt.Errorf("--bench: the pattern is %d bytes; the kernel command line allows about %d (use a shorter regexp)", len(pat), maxBenchArg)
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return fmt.Errorf("--bench %q: %w (presets: %s)", g.Bench, err, presetNames())
	}
	for _, c := range []struct {
		name      string
		v, lo, hi int
	}{
		{"--samples", g.Samples, 1, 1000},
		{"--entries", g.Entries, 1, 1 << 26},
		{"--rounds", g.Rounds, 1, 1 << 20},
		{"--prefix-len", g.prefixLen(), 1, 32},
		{"--batch-entries", g.batchEntries(), 1, workloads.MaxBatchEntries},
	} {
		if c.v < c.lo || c.v > c.hi {
			return fmt.Errorf("%s %d: must be between %d and %d", c.name, c.v, c.lo, c.hi)
		}
	}
	if p := g.prefixLen(); p < 32 && g.Entries > 1<<p {
		return fmt.Errorf("--prefix-len %d has only %d distinct prefixes, fewer than --entries %d (raise --prefix-len)", p, 1<<p, g.Entries)
	}
	if len(workloads.Select(workloads.Registry(), re, g.params())) == 0 {
		return fmt.Errorf("--bench %q selects no benchmark (see lpmbisect list; presets: %s)", g.Bench, presetNames())
	}
	return nil
}

func (g GuestPlan) prefixLen() int {
	if g.PrefixLen == 0 {
		return 32
	}
	return g.PrefixLen
}

func (g GuestPlan) batchEntries() int {
	if g.BatchEntries == 0 {
		return workloads.DefaultBatchEntries
	}
	return g.BatchEntries
}

// params are the workload parameters the plan gives the guest (vCPUs
// unknown: every producer count may match).
func (g GuestPlan) params() workloads.Params {
	return workloads.Params{Entries: uint32(g.Entries), PrefixLen: uint32(g.prefixLen()), BatchEntries: uint32(g.batchEntries()), Samples: g.Samples, Rounds: g.Rounds}
}

func presetNames() string {
	var names []string
	for _, p := range workloads.Presets {
		names = append(names, p.Name)
	}
	return strings.Join(names, ", ")
}

// KernelArgs renders the plan as kernel parameters.
func (g GuestPlan) KernelArgs() []string {
	args := []string{
		"lpmbisect.bench=" + g.Pattern(),
		"lpmbisect.samples=" + strconv.Itoa(g.Samples),
		"lpmbisect.entries=" + strconv.Itoa(g.Entries),
		"lpmbisect.rounds=" + strconv.Itoa(g.Rounds),
		"lpmbisect.prefix_len=" + strconv.Itoa(g.prefixLen()),
		"lpmbisect.batch_entries=" + strconv.Itoa(g.batchEntries()),
	}
	if g.Fault != "" {
		args = append(args, "lpmbisect.fault="+g.Fault)
	}
	return args
}

// WithControls returns the plan with the harness controls (noop and
// baseline, workloads preset "controls") added to its selection, so that a
// comparison can tell a changed environment from a changed kernel.
func (g GuestPlan) WithControls() GuestPlan {
	controls := workloads.ResolveBench("controls")
	if pat := g.Pattern(); pat != controls {
		g.Bench = "(" + pat + ")|(" + controls + ")"
	}
	return g
}

// Benchmarks counts the benchmarks the plan selects.
func (g GuestPlan) Benchmarks() int {
	re, err := regexp.Compile(g.Pattern())
	if err != nil {
		return 0
	}
	return len(workloads.Select(workloads.Registry(), re, g.params()))
}

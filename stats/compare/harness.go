package compare

import (
	"slices"

	"github.com/lpmbisect/lpmbisect/stats/sample"
	"github.com/lpmbisect/lpmbisect/wire"
)

// A user's program (wire.WorkloadBench) runs inside a harness of its own,
// BPF_PROG_TEST_RUN's loop and context reset, which its noop
// (wire.WorkloadNoop) measures alone; the built-in families share another,
// the bpf_loop around the operation, which defaultControls measure. Each
// benchmark is weighed against the controls of its own harness
// (checkDrift), and the program's own work, its value less the noop's,
// boot by boot, is a row of its own (wire.WorkloadOwn) with a verdict of
// its own: when the harness's cost changes with the kernel, that row says
// what the program's own work did.

// HarnessOf names the harness a benchmark runs in: its program's
// (wire.WorkloadBench) for a user's program, "" for the built-in
// families' bpf_loop. A control weighs only on the benchmarks of its
// harness.
func HarnessOf(bench string) string {
	if prog, ok := wire.WorkloadOf(bench); ok {
		return wire.WorkloadBench(prog)
	}
	return ""
}

// sourceOf is the benchmark a row's values come from, which selects it:
// for a user's program's own-work row (wire.WorkloadOwn), the program's;
// every other row is its own.
func sourceOf(bench string) string {
	if prog, ok := wire.WorkloadOf(bench); ok && bench == wire.WorkloadOwn(prog) {
		return wire.WorkloadBench(prog)
	}
	return bench
}

// deriveOwn adds, after each user's program's row that has its noop in the
// same unit, the program's own work (wire.WorkloadOwn): for every boot
// that ran both, the median of the program's samples less the median of
// the noop's. It returns the order of rows with them; results that
// already carry such a row keep theirs.
func deriveOwn(order []key, groups map[key]*[2]group) []key {
	out := make([]key, 0, len(order))
	for _, k := range order {
		out = append(out, k)
		prog, ok := wire.WorkloadOf(k.bench)
		if !ok || k.bench != wire.WorkloadBench(prog) {
			continue
		}
		noop, own := groups[key{wire.WorkloadNoop(prog), k.unit}], key{wire.WorkloadOwn(prog), k.unit}
		if noop == nil || groups[own] != nil {
			continue
		}
		total, g := groups[k], new([2]group)
		for side := range g {
			for _, boot := range total[side].boots {
				ns, ok := noop[side].samples[boot]
				if !ok {
					continue
				}
				g[side].add(boot, total[side].pairs[boot], sample.Median(total[side].samples[boot])-sample.Median(ns))
			}
		}
		if len(g[0].boots) == 0 && len(g[1].boots) == 0 {
			continue
		}
		groups[own] = g
		out = append(out, own)
	}
	return slices.Clip(out)
}

// totals are the user's programs' rows (wire.WorkloadBench) whose
// own-work row (wire.WorkloadOwn) in the same unit is among rows: Row.Total.
func totals(rows []Row) map[key]bool {
	own := map[key]bool{}
	for _, r := range rows {
		if prog, ok := wire.WorkloadOf(r.Benchmark); ok && r.Benchmark == wire.WorkloadOwn(prog) {
			own[key{wire.WorkloadBench(prog), r.Unit}] = true
		}
	}
	return own
}

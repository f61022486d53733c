package report

import (
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

func TestMemoryLines(t *testing.T) {
	a := &insight.Memory{Benchmark: "LPMTrie/op=lookup", Ops: 50000, Attribution: "not attributed: no symbols"}
	b := &insight.Memory{Benchmark: "LPMTrie/op=lookup", Ops: 50000, Attribution: "not attributed: no symbols"}
	d := &insight.Diff{
		A: &insight.Side{MemorySummary: &insight.MemorySummary{Model: "l1d 49152 12", Cost: 303994289}},
		B: &insight.Side{MemorySummary: &insight.MemorySummary{Problem: "not offered under kvm"}},
		Memory: []insight.MemoryDiff{{Benchmark: "LPMTrie/op=lookup", A: a, B: b,
			Rows: []insight.MemoryRow{{Metric: "l1d-miss/op", A: 6.4554, B: 12.91, DeltaPct: 100, Verdict: compare.Different}}}},
	}
	got := strings.Join(memoryLineList(d), "\n")
	for _, want := range []string{
		"A: l1d 49152 12; the pass took 304.0M instructions",
		"B: no memory counts: not offered under kvm",
		"Memory of LPMTrie/op=lookup (A → B):",
		"l1d-miss/op            6.455       12.910  +100.00%  DIFFERENT",
		"data misses per function: not attributed: no symbols",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("memory lines:\n%s\nwant a line with %q", got, want)
		}
	}
}

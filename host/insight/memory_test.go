package insight

import (
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/wire"
)

func memorySide(l1dMisses, segWindows uint64, problem string) *Side {
	s := &Side{}
	s.AddMemory(Input{
		Memory: &wire.MemoryDoc{Cost: 1000, Benchmarks: []wire.BenchMemory{{Benchmark: "LPMTrie/op=lookup", Segment: 1, Ops: 1000, Problem: problem}}},
		MemCounts: &vmrunner.MemCounts{Model: "l1d 49152 12", Complete: true, Segments: []vmrunner.MemSegment{{
			Number: 1, Windows: segWindows, Insns: 650_000,
			L1D: vmrunner.CacheCount{Accesses: 151_000, Misses: l1dMisses}, DTLB: vmrunner.CacheCount{Accesses: 150_000, Misses: 10},
			LLC: vmrunner.CacheCount{Accesses: l1dMisses, Misses: 50},
		}}},
	})
	return s
}

func TestCompareMemory(t *testing.T) {
	a, b := memorySide(2000, 10, ""), memorySide(2500, 10, "")
	d := compareMemory(a.Memory, b.Memory)
	// without the cycle model: the six rows of the memory pass alone
	if len(d) != 1 || len(d[0].Rows) != 6 {
		t.Fatalf("compareMemory() = %+v; want one benchmark with 6 rows", d)
	}
	want := map[string]compare.Verdict{"l1d-miss/op": compare.Different, "insn/op": compare.Same, "mem-access/op": compare.Same, "dtlb-miss/op": compare.Same}
	for _, r := range d[0].Rows {
		if v, ok := want[r.Metric]; ok && r.Verdict != v {
			t.Errorf("row %s %.3f → %.3f: %s; want %s", r.Metric, r.A, r.B, r.Verdict, v)
		}
	}
	if r := d[0].Rows[0]; r.A != 2 || r.B != 2.5 || r.DeltaPct != 25 {
		t.Errorf("l1d row %+v; want 2 → 2.5, +25%%", r)
	}
	if a.Memory[0].Attribution == "" || !strings.HasPrefix(a.Memory[0].Attribution, "not attributed") {
		t.Errorf("attribution without symbols = %q; want not attributed", a.Memory[0].Attribution)
	}
}

func TestAddMemoryProblems(t *testing.T) {
	if s := memorySide(2000, 0, ""); s.Memory[0].Problem == "" || s.Memory[0].PerOp != nil {
		t.Errorf("a segment without windows: %+v; want a problem and no counts", s.Memory[0])
	}
	if s := memorySide(2000, 10, "boom"); s.Memory[0].Problem != "boom" {
		t.Errorf("the guest's problem: %+v; want it kept", s.Memory[0])
	}
	s := &Side{}
	s.AddMemory(Input{Memory: &wire.MemoryDoc{}, MemoryProblem: "no file"})
	if s.MemorySummary == nil || !strings.Contains(s.MemorySummary.Problem, "no file") {
		t.Errorf("no counts: %+v; want the plugin's problem", s.MemorySummary)
	}
}

// TestPluginFunctionOverflow: the plugin's line of the instructions that
// found no room is named as not attributed wherever its pcs are summed by
// function (the memory pass's top instructions, the deferred work).
func TestPluginFunctionOverflow(t *testing.T) {
	name := func(uint64) string { return "trie_lookup_elem" }
	fs := memoryFunctions([]vmrunner.MemPC{{PC: 0xffffffff81000000, L1D: 20}, {PC: vmrunner.PCOverflow, L1D: 10}}, name, 10)
	if len(fs) != 2 || fs[0].Function != "trie_lookup_elem" || fs[1].Function != notAttributed || fs[1].L1D != 1 {
		t.Errorf("memoryFunctions = %+v; want trie_lookup_elem, then %q with 1 L1D miss per op", fs, notAttributed)
	}
	df := deferredFunctions([]vmrunner.PCCount{{PC: vmrunner.PCOverflow, Count: 30}}, nil, name, 10)
	if len(df) != 1 || df[0].Function != notAttributed || df[0].Insns != 3 {
		t.Errorf("deferredFunctions = %+v; want %q with 3 per op", df, notAttributed)
	}
}

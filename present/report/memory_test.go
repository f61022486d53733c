package report

import (
	"bytes"
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/present/view"
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

// memoryReport is a comparison with a timed insn/op row and the memory
// rows of its insight block beside it.
func memoryReport() (*compare.Report, view.Meta) {
	perOp := func(l1d, llc, dtlb, acc, l1i, insn float64) map[string]float64 {
		return map[string]float64{"l1d-miss/op": l1d, "llc-miss/op": llc, "dtlb-miss/op": dtlb, "mem-access/op": acc, "l1i-miss/op": l1i, "insn/op": insn}
	}
	const bench = "LPMTrie/op=lookup/keys=random/entries=10000"
	a := insight.Memory{Benchmark: bench, Ops: 50000, PerOp: perOp(6.463, 0.407, 3.697, 273.542, 0.008, 1004.161)}
	b := insight.Memory{Benchmark: bench, Ops: 50000, PerOp: perOp(6.464, 0.440, 3.694, 187.617, 0.014, 829.488)}
	d := insight.Compare(&insight.Side{Memory: []insight.Memory{a}}, &insight.Side{Memory: []insight.Memory{b}}, insight.Options{})
	timed := compare.Row{Benchmark: bench, Unit: compare.UnitInstructions, Verdict: compare.Different, DeltaPct: -17.4, Better: -1,
		A: compare.Summary{Center: 1004.3, Lo: 1004.2, Hi: 1004.4, Boots: 2, Samples: 10},
		B: compare.Summary{Center: 830.0, Lo: 829.9, Hi: 830.1, Boots: 2, Samples: 10}}
	rep := &compare.Report{A: compare.SideInfo{Name: "A", Kernel: "6.1"}, B: compare.SideInfo{Name: "B", Kernel: "6.12"},
		Alpha: 0.05, Confidence: 0.95, MinEffect: 0.01, Deterministic: true,
		Rows: append([]compare.Row{timed}, d.MemoryRows()...)}
	return rep, view.Meta{FailOn: compare.FailOnRegression, Insight: d}
}

// The memory pass's counts are rows of the compare table in every format,
// beside insn/op, with the why-block's verdicts.
func TestMemoryRowsInEveryFormat(t *testing.T) {
	rep, meta := memoryReport()
	units := map[string]compare.Verdict{}
	for _, r := range rep.Rows[1:] {
		units[r.Unit] = r.Verdict
	}
	want := map[string]compare.Verdict{"l1d-miss/op": compare.Same, "llc-miss/op": compare.Unknown, "dtlb-miss/op": compare.Same,
		"mem-access/op": compare.Different, "l1i-miss/op": compare.Same}
	if !maps.Equal(units, want) {
		t.Fatalf("memory rows %v; want %v (no insn/op row: the timed samples have it)", units, want)
	}
	for _, m := range meta.Insight.Memory[0].Rows {
		if v, ok := units[m.Metric]; ok && v != m.Verdict {
			t.Errorf("%s: table says %v, the why-block %v", m.Metric, v, m.Verdict)
		}
	}
	if got := rep.Outcome(compare.FailOnRegression); got != compare.NoRegression {
		t.Errorf("outcome %v; want no regression (fewer accesses is better; an UNKNOWN count leaves it conclusive)", got)
	}
	wantLine := "NO REGRESSION (--fail-on regression): no benchmark is worse; 1 benchmark better; 1 benchmark UNKNOWN in a count taken once per side (final, not weighed)"
	if got := outcomeLine(rep, compare.FailOnRegression); got != wantLine {
		t.Errorf("outcome line %q; want %q", got, wantLine)
	}
	for _, f := range []Format{FormatText, FormatMarkdown, FormatJSON, FormatHTML, FormatKCIDB, FormatGitHub} {
		var buf bytes.Buffer
		if err := Write(&buf, f, rep, meta); err != nil {
			t.Fatalf("Write(%s): %v", f, err)
		}
		out := buf.String()
		for _, unit := range []string{"mem-access/op", "llc-miss/op"} {
			if !strings.Contains(out, unit) {
				t.Errorf("Write(%s) has no %s row:\n%s", f, unit, out)
			}
		}
	}
	var text bytes.Buffer
	if err := writeText(&text, rep, meta); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"273.5", "187.6", "-31.41%", "deterministic rule on one count per side: jitter bound ±0.2%", "counted once per side by the memory pass",
		"LPMTrie/op=lookup/keys=random/entries=10000: -31.4% mem-access/op (better), DIFFERENT (deterministic rule, jitter bound ±0.2%), one count per side by the memory pass"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("table:\n%s\nwant %q", text.String(), want)
		}
	}
	var doc Document
	var js bytes.Buffer
	if err := writeJSON(&js, rep, meta); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, r := range doc.Rows {
		if r.Unit == "mem-access/op" && (r.Verdict != compare.Different || r.Worse || !r.Final || !r.Exact || r.A.Boots != 1 || r.A.Center != 273.542) {
			t.Errorf("JSON row %+v; want DIFFERENT, better, final, one count a side", r)
		}
	}
}

// The cycle model's rows are rows of the compare table in every format,
// est-cycles/op said there to be a model, and the why-block shows the
// estimate's terms beside KCachegrind's and the deferred work by
// function.
func TestCycleRowsInEveryFormat(t *testing.T) {
	const bench = "LPMTrie/op=lookup/keys=random/entries=10000"
	side := func(ret, est float64) insight.Memory {
		return insight.Memory{Benchmark: bench, Ops: 50000,
			PerOp: map[string]float64{"l1d-miss/op": 6.4, "llc-miss/op": 0, "dtlb-miss/op": 3.7, "mem-access/op": 187.6, "l1i-miss/op": 0.01,
				insight.MetricBranches: 137, insight.MetricCondMispred: 0.19, insight.MetricIndMispred: 0, insight.MetricRetMispred: ret,
				insight.MetricDeferredInsn: 1.1, insight.MetricEstCycles: est, "insn/op": 839.6},
			Cycles: &insight.Cycles{Core: "zen2", Terms: []insight.CycleTerm{{Term: "instructions", Cycles: 210}, {Term: "mispredicted branches", Cycles: ret * 17}},
				Window: est, Total: est, KCachegrind: 914},
			Deferred: &insight.Deferred{Ops: 50000, Insns: 1.1, Wait: 6e9, Functions: []insight.DeferredFunction{{Function: "__schedule", Insns: 0.1}}}}
	}
	a, b := side(18.65, 697.4), side(4.02, 384.7)
	d := insight.Compare(&insight.Side{Memory: []insight.Memory{a}}, &insight.Side{Memory: []insight.Memory{b}}, insight.Options{})
	rep := &compare.Report{A: compare.SideInfo{Name: "A", Kernel: "6.1"}, B: compare.SideInfo{Name: "B", Kernel: "6.12"},
		Alpha: 0.05, Confidence: 0.95, MinEffect: 0.01, Deterministic: true, Rows: d.MemoryRows()}
	meta := view.Meta{FailOn: compare.FailOnRegression, Insight: d}
	for _, f := range []Format{FormatText, FormatMarkdown, FormatJSON, FormatHTML, FormatKCIDB, FormatGitHub} {
		var buf bytes.Buffer
		if err := Write(&buf, f, rep, meta); err != nil {
			t.Fatalf("Write(%s): %v", f, err)
		}
		units := []string{insight.MetricEstCycles, insight.MetricRetMispred, insight.MetricDeferredInsn}
		if f == FormatGitHub { // annotations: the DIFFERENT rows alone
			units = units[:2]
		}
		for _, unit := range units {
			if !strings.Contains(buf.String(), unit) {
				t.Errorf("Write(%s) has no %s row", f, unit)
			}
		}
	}
	var text bytes.Buffer
	if err := writeText(&text, rep, meta); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"not a measurement", "est-cycles/op, a model (not a measurement) on the zen2 core's latencies",
		"KCachegrind's formula on the same counts 914.0 → 914.0", "mispredicted branches", "deferred insn/op by function", "__schedule"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("report:\n%s\nwant %q", text.String(), want)
		}
	}
	for _, r := range rep.Rows {
		if r.Unit == insight.MetricRetMispred && r.Verdict != compare.Different {
			t.Errorf("ret-mispred/op %.2f → %.2f: %s; want DIFFERENT", r.A.Center, r.B.Center, r.Verdict)
		}
	}
}

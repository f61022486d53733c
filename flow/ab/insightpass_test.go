package ab

import (
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// TestKeepInsight checks that the block lands where SavedInsight reads it,
// that a place it cannot be written costs a warning only, and that no
// block is none, a bad one an error.
func TestKeepInsight(t *testing.T) {
	var logged strings.Builder
	l := log.New(&logged, "", 0)
	results := filepath.Join(t.TempDir(), "results.txt")
	os.WriteFile(results, []byte("results"), 0o644)
	d := &insight.Diff{A: &insight.Side{}, B: &insight.Side{}, Notes: []string{"kept"}}
	keepInsight(results, d, l)
	if got, err := SavedInsight(results); err != nil || len(got.Notes) != 1 || got.Notes[0] != "kept" || logged.Len() > 0 {
		t.Errorf("keepInsight: read back %+v, %v, log %q; want the block, no warning", got, err, logged.String())
	}
	keepInsight(filepath.Join(results, "results.txt"), d, l) // under a file: no directory there
	if !strings.Contains(logged.String(), "warning: insight block not kept") {
		t.Errorf("keepInsight under a file: log %q; want a warning", logged.String())
	}
	keepInsight(results+".none", nil, l)
	if got, err := SavedInsight(results + ".none"); got != nil || err != nil {
		t.Errorf("keepInsight(nil), then SavedInsight = %+v, %v; want none, no error", got, err)
	}
	os.WriteFile(insight.DiffFile(results), []byte("{}"), 0o644)
	if got, err := SavedInsight(results); got != nil || err == nil {
		t.Errorf("SavedInsight(a block without sides) = %+v, %v; want an error", got, err)
	}
}

// TestAddInsightMemoryRows checks that the memory counts of a block kept
// beside the results come back as rows of the report (as stat reads it),
// beside the timed ones, and that no block adds none.
func TestAddInsightMemoryRows(t *testing.T) {
	const bench = "HashMap/map=hash/op=lookup/key_size=4/entries=1000"
	perOp := func(l1d, acc float64) map[string]float64 {
		return map[string]float64{"l1d-miss/op": l1d, "llc-miss/op": 0.025, "dtlb-miss/op": 0.002, "mem-access/op": acc, "l1i-miss/op": 0.003, "insn/op": 182.611}
	}
	d := insight.Compare(&insight.Side{Memory: []insight.Memory{{Benchmark: bench, Ops: 50000, PerOp: perOp(1.180, 50.057)}}},
		&insight.Side{Memory: []insight.Memory{{Benchmark: bench, Ops: 50000, PerOp: perOp(1.400, 50.057)}}}, insight.Options{})
	results := filepath.Join(t.TempDir(), "results.txt")
	keepInsight(results, d, log.New(os.Stderr, "", 0))
	saved, err := SavedInsight(results)
	if err != nil {
		t.Fatal(err)
	}
	timed := compare.Row{Benchmark: bench, Unit: compare.UnitInstructions, Verdict: compare.Same}
	res := &Result{Report: &compare.Report{Rows: []compare.Row{timed}}}
	res.AddInsight(nil)
	if len(res.Report.Rows) != 1 || res.Meta.Insight != nil {
		t.Fatalf("AddInsight(nil): %d rows, block %v; want the timed row alone", len(res.Report.Rows), res.Meta.Insight)
	}
	res.AddInsight(saved)
	var units []string
	for _, r := range res.Report.Rows[1:] {
		units = append(units, r.Unit)
		if r.Benchmark != bench || !r.Exact {
			t.Errorf("row %+v; want an exact row of %s", r, bench)
		}
	}
	if got := strings.Join(units, " "); got != "l1d-miss/op llc-miss/op dtlb-miss/op mem-access/op l1i-miss/op" || res.Meta.Insight != saved {
		t.Errorf("rows after the timed one: %s; want the memory metrics but insn/op, and the block in Meta", got)
	}
	if l1d := res.Report.Rows[1]; l1d.Verdict != compare.Different || !l1d.Worse() || res.Report.Outcome(compare.FailOnRegression) != compare.Regression {
		t.Errorf("L1D 1.180 → 1.400: %v (worse %v), outcome %v; want DIFFERENT for the worse, a regression", l1d.Verdict, l1d.Worse(), res.Report.Outcome(compare.FailOnRegression))
	}
}

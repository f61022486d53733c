package report

import (
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/wire"
)

// A verifier row's verification time left UNKNOWN says it holds no boots,
// not how many boots a verdict would need: the look loop does not wait for
// it (compare.Report.Undecided), so an estimate would promise boots that
// never come.
func TestUndecidedVerifierTimeHoldsNoBoots(t *testing.T) {
	row := func(unit string) compare.Row {
		return compare.Row{Benchmark: wire.VerifierPrefix + "xdp_hash", Unit: unit, Verdict: compare.Unknown,
			A: compare.Summary{Boots: 2, Center: 150000}, B: compare.Summary{Boots: 2, Center: 200000},
			DeltaPct: 33.3, BootsNeeded: 4, NeedFor: compare.Different}
	}
	rep := &compare.Report{Rows: []compare.Row{row(wire.UnitInsnPerOp), row(wire.UnitInsnsProcessed)}}
	lines := undecided(rep)
	if len(lines) != 2 {
		t.Fatalf("undecided() = %q; want a line for each row", lines)
	}
	if !strings.Contains(lines[0], "holds no boots") || strings.Contains(lines[0], "a verdict needs") {
		t.Errorf("undecided() for the verification time = %q; want that it holds no boots, no estimate", lines[0])
	}
	if !strings.Contains(lines[1], "a verdict needs ~4") {
		t.Errorf("undecided() for a count = %q; want the boots estimate", lines[1])
	}
}

package measure

import (
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/wire"
)

// TestBootCosts checks that each boot counts once per side, that the
// median is taken phase by phase, that a phase only some boots had says
// so, and that results without phases (wall time) give no cost.
func TestBootCosts(t *testing.T) {
	res := func(side, boot, phases string) *benchfmt.Result {
		r := &benchfmt.Result{Name: []byte("X")}
		r.SetConfig(wire.KeySide, side)
		r.SetConfig(wire.KeyBoot, boot)
		if phases != "" {
			r.SetConfig(wire.KeyPhases, phases)
		}
		return r
	}
	results := []*benchfmt.Result{
		res("A", "1", "to-init 900.0M, set-up 7.0M, benchmarks 100.0M, insight 300.0M; all 1307.0M"),
		res("A", "1", "to-init 900.0M, set-up 7.0M, benchmarks 100.0M, insight 300.0M; all 1307.0M"),
		res("A", "2", "to-init 900.0M, set-up 7.0M, benchmarks 110.0M; all 1017.0M"),
		res("A", "3", "to-init 900.0M, set-up 9.0M, benchmarks 120.0M; all 1029.0M"),
		res("A", "4", "not phases"),
		res("B", "1", ""),
	}
	got := BootCosts(results)
	if got[1] != nil {
		t.Errorf("side B recorded no phases but has a cost: %+v", got[1])
	}
	want := "median of 3 boots: to-init 900.0M, set-up 7.0M, benchmarks 110.0M, insight 300.0M [1 of 3 boots]; all but insight 1017.0M"
	if got[0] == nil || got[0].String() != want {
		t.Fatalf("BootCosts A = %v; want %q", got[0], want)
	}
	if s := (wire.BootCost{Boots: 1, Phases: got[0].Phases[:1]}).String(); !strings.HasPrefix(s, "1 boot: to-init") {
		t.Errorf("one boot renders as %q", s)
	}
}

package campaign

import (
	"context"
	"fmt"
	"testing"

	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/testbed/testsetup"
	"github.com/lpmbisect/lpmbisect/wire"
	"golang.org/x/perf/benchfmt"
)

// Under icount, with no calibration of this host, the documented jitter
// bounds decide the LPM lookups from DeterministicBoots boots a look;
// --rule statistical and wall time keep the boots asked for, or take the
// fewest with which a first look reaches both verdicts (0 below).
func TestJudgeCalibrate(t *testing.T) {
	setup := func(accel wire.Accel) *measure.Setup {
		return testsetup.New(t, measure.Options{Accel: accel, Plan: measure.GuestPlan(wire.DefaultPlan())})
	}
	for _, c := range []struct {
		name        string
		accel       wire.Accel
		boots       int
		statistical bool
		want        int
		bounds      bool
	}{
		{"icount", wire.AccelIcount, 0, false, compare.DeterministicBoots, true},
		{"icount, boots given", wire.AccelIcount, 5, false, 5, true},
		{"icount, statistical", wire.AccelIcount, 0, true, 0, false},
		{"tcg", wire.AccelTCG, 0, false, 0, false},
	} {
		j := Judge{Alpha: 0.05, MinEffectPct: 1}
		deterministic := j.Calibrate(context.Background(), setup(c.accel), false, c.statistical)
		b := &Bench{Judge: j, Boots: c.boots, Deterministic: deterministic, MaxBoots: 10}
		want := c.want
		if want == 0 {
			var err error
			if want, err = compare.StartBoots(j.Options(10), 1, false, true); err != nil {
				t.Fatal(err)
			}
		}
		if got := b.boots(); got != want || (len(j.Bounds) > 0) != c.bounds {
			t.Errorf("%s: first look of %d boots, bounds %v; want %d, bounds %v", c.name, got, j.Bounds, want, c.bounds)
		}
	}
}

// NewSetup calibrates the judge for the host before it makes the bench:
// under icount the documented jitter bounds decide from DeterministicBoots
// boots a look, the statistical rule keeps the boots asked for, and levels
// no bisection can use are refused.
func TestNewSetup(t *testing.T) {
	m := testsetup.New(t, measure.Options{Accel: wire.AccelIcount, Plan: measure.GuestPlan(wire.DefaultPlan())})
	o := Options{Judge: Judge{Alpha: 0.05, MinEffectPct: 1}, MaxBoots: 10, Reverse: true, RecheckBoots: 3}
	s, err := NewSetup(context.Background(), m, o)
	if err != nil {
		t.Fatal(err)
	}
	if b := s.Bench; b.boots() != compare.DeterministicBoots || len(b.Judge.Bounds) == 0 || b.MaxBoots != 10 || !b.Reverse || s.RecheckBoots != 3 || s.Measure != m {
		t.Errorf("NewSetup: %d boots a look, bounds %v, max %d, reverse %v, re-check %d; want %d, bounds, 10, true, 3",
			b.boots(), b.Judge.Bounds, b.MaxBoots, b.Reverse, s.RecheckBoots, compare.DeterministicBoots)
	}
	o.Statistical = true
	if s, err := NewSetup(context.Background(), m, o); err != nil || s.Bench.Boots != 0 || s.Bench.Deterministic || len(s.Bench.Judge.Bounds) > 0 {
		t.Errorf("NewSetup(statistical) = %v; want 0 boots a look (the fewest that can decide), no bounds", err)
	}
	o.MaxBoots = 0
	if _, err := NewSetup(context.Background(), m, o); err == nil {
		t.Errorf("NewSetup(MaxBoots 0): no error")
	}
}

// TestClassExitCode: the git bisect run contract, class by class.
func TestClassExitCode(t *testing.T) {
	for c, want := range map[Class]int{Good: 0, Bad: 1, Skip: 125} {
		if got := c.ExitCode(); got != want {
			t.Errorf("%v.ExitCode() = %d; want %d", c, got, want)
		}
	}
	if ExitAbort < 128 || ExitAbort > 255 {
		t.Errorf("ExitAbort = %d; git bisect run aborts on 128-255 only", ExitAbort)
	}
}

// A verdict reached at an early look is final, and compare does not test
// the row again; the sequence keeps the p-value it was reached with, so a
// step's confidence stays meaningful.
func TestJudgeCarriesDecidedClaims(t *testing.T) {
	boots := func(value float64, n, from int) []*benchfmt.Result {
		var out []*benchfmt.Result
		for i := from; i < from+n; i++ {
			r := &benchfmt.Result{Name: benchfmt.Name("LPMTrie/op=lookup"), Iters: 1, Values: []benchfmt.Value{{Value: value * (1 + 1e-4*float64(i%3)), Unit: "insn/op"}}}
			r.SetConfig("boot", fmt.Sprint(i+1))
			out = append(out, r)
		}
		return out
	}
	j := Judge{Alpha: 0.05, MinEffectPct: 1}
	s, err := j.sequence(8)
	if err != nil {
		t.Fatal(err)
	}
	a := boots(1000, 8, 0)
	first, err := j.look(s, a, boots(1000, 4, 0))
	if err != nil {
		t.Fatal(err)
	}
	k := RowKey{"LPMTrie/op=lookup", "insn/op"}
	if first[k].Verdict != compare.Same || first[k].PClaim >= 1 {
		t.Fatalf("first look = %s p(same)=%v; want SAME with its p", first[k].Verdict, first[k].PClaim)
	}
	second, err := j.look(s, a, boots(1000, 8, 0))
	if err != nil {
		t.Fatal(err)
	}
	if second[k].Verdict != compare.Same || second[k].PClaim != first[k].PClaim {
		t.Errorf("second look = %s p(same)=%v; want SAME carried with p(same)=%v", second[k].Verdict, second[k].PClaim, first[k].PClaim)
	}
}

// The endpoints' controls that moved are drift under wall time and the
// kernel's harness cost under instruction counts, as compare decided.
func TestEffectSplitsDriftFromHarness(t *testing.T) {
	different := Comparison{Verdict: compare.Different}
	rows := map[RowKey]CompareRow{
		{"LPMTrie/op=noop", "insn/op"}:                 {Comparison: different, Control: true, HarnessChanged: true},
		{"LPMTrie/op=noop", "sec/op"}:                  {Comparison: different, Control: true},
		{"LPMTrie/op=lookup/keys=random", "insn/op"}:   {Comparison: different, A: 1000, B: 1100},
		{"LPMTrie/op=baseline/keys=random", "insn/op"}: {Comparison: Comparison{Verdict: compare.Same}, Control: true},
	}
	eff := (&Bench{}).effectOf(rows)
	if len(eff.Harness) != 1 || eff.Harness[0].Unit != "insn/op" || len(eff.Drift) != 1 || eff.Drift[0].Unit != "sec/op" || len(eff.Signal) != 1 {
		t.Errorf("effectOf: harness %v, drift %v, signal %v; want the insn/op noop, the sec/op noop, the lookup", eff.Harness, eff.Drift, eff.Signal)
	}
}

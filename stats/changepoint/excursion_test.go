package changepoint_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/lpmbisect/lpmbisect/stats/changepoint"
	"github.com/lpmbisect/lpmbisect/testbed/testseries"
)

// issueSeries is testseries' bad-night series: a −12 % step at night 15,
// a −41 % night at night 10 and a +19 % step at night 45.
func issueSeries() []float64 {
	rng := rand.New(rand.NewPCG(1, 2))
	var v []float64
	for i := range 60 {
		v = append(v, testseries.BadNightValue(i, rng))
	}
	return v
}

func excursions(t *testing.T, values []float64, o changepoint.Options) []changepoint.Excursion {
	t.Helper()
	exc, err := changepoint.Excursions(values, o)
	if err != nil {
		t.Fatalf("Excursions(%d values, %+v): %v", len(values), o, err)
	}
	return exc
}

func excursionIndices(exc []changepoint.Excursion) []int {
	idx := []int{}
	for _, e := range exc {
		idx = append(idx, e.Index)
	}
	return idx
}

// One bad night does not hide a step five nights after it, whatever the
// floor (none, nightly's wall-time floor, TCG's noise), and is itself an
// excursion, not a change point.
func TestOneBadNightCannotHideAStep(t *testing.T) {
	v := issueSeries()
	for _, floor := range []float64{0, 0.002, 0.02} {
		o := changepoint.Options{MinMagnitude: 0.05, NoiseFloor: floor}
		cps := detect(t, v, o)
		if got := indices(cps); !reflect.DeepEqual(got, []int{15, 45}) {
			t.Errorf("floor %g: Detect(−41 %% night at 10, −12 %% step at 15, +19 %% at 45) = %v; want [15 45]", floor, got)
			continue
		}
		if c := cps[0]; c.LastBefore != 14 || math.Abs(c.ChangePct+12) > 1 || math.Abs(c.Before-26700) > 300 {
			t.Errorf("floor %g: change point at 15 = %+v; want 26.7k → 23.5k (−12 %%) after night 14", floor, c)
		}
		exc := excursions(t, v, o)
		if len(exc) != 1 || exc[0].Index != 10 || math.Abs(exc[0].ChangePct+41) > 1.5 || math.Abs(exc[0].Level-26700) > 300 {
			t.Errorf("floor %g: Excursions = %+v; want night 10, −41 %% from 26.7k", floor, exc)
		}
	}
}

// The same series night by night, as nightly runs it: the step is reported
// on its own night or the next, confirmed two nights later, and the bad
// night is never confirmed (it is reported the night it is the newest, as
// the end-of-series rule must, and withdrawn the next).
func TestOneBadNightNightly(t *testing.T) {
	v := issueSeries()[:30]
	o := changepoint.Options{MinMagnitude: 0.05, NoiseFloor: 0.002}
	var live []changepoint.ChangePoint
	reported, confirmed := map[int]int{}, map[int]int{}
	for n := 5; n <= len(v); n++ {
		cps, err := changepoint.Update(v[:n], live, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cps {
			if _, ok := reported[c.Index]; !ok {
				reported[c.Index] = n - 1
			}
			if _, ok := confirmed[c.Index]; !ok && !c.Provisional {
				confirmed[c.Index] = n - 1
			}
		}
		live = cps
	}
	if night, ok := reported[15]; !ok || night > 16 {
		t.Errorf("step at 15 first reported on night %d (reported: %v); want 15 or 16", night, reported)
	}
	if night, ok := confirmed[15]; !ok || night > 17 {
		t.Errorf("step at 15 confirmed on night %d (confirmed: %v); want by 17", night, confirmed)
	}
	for idx := range confirmed {
		if idx != 15 {
			t.Errorf("change point at %d confirmed (confirmed: %v); want only the step at 15", idx, confirmed)
		}
	}
	if got := indices(live); !reflect.DeepEqual(got, []int{15}) {
		t.Errorf("after night 29 the run holds %v; want [15]", got)
	}
}

// Under icount a night that differs is a kernel that differed: an
// excursion of one night or two, in either direction, is reported with its
// size, is never confirmed as a change point, and leaves the constant
// level's statistics as they were.
func TestExcursionUnderIcount(t *testing.T) {
	o := changepoint.Options{NoiseFloor: 0.0003}
	for _, c := range []struct {
		nights []int
		factor float64
	}{{[]int{40}, 1.05}, {[]int{40, 41}, 0.98}, {[]int{0}, 1.2}} {
		v := constant(80, 1065)
		for _, i := range c.nights {
			v[i] *= c.factor
		}
		exc := excursions(t, v, o)
		if got := excursionIndices(exc); !reflect.DeepEqual(got, c.nights) {
			t.Errorf("Excursions(1065 × 80, ×%g at %v) = %v; want %v", c.factor, c.nights, got, c.nights)
			continue
		}
		if want := 100 * (c.factor - 1); math.Abs(exc[0].ChangePct-want) > 1e-9 || exc[0].Level != 1065 {
			t.Errorf("excursion %+v; want %+.1f %% from 1065", exc[0], want)
		}
		if cps := detect(t, v, o); len(cps) != 0 {
			t.Errorf("Detect(1065 × 80, ×%g at %v) = %+v; want none", c.factor, c.nights, cps)
		}
		// Night by night: never confirmed.
		var live []changepoint.ChangePoint
		for n := 2; n <= len(v); n++ {
			cps, err := changepoint.Update(v[:n], live, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, cp := range cps {
				if !cp.Provisional {
					t.Errorf("×%g at %v: night %d holds a confirmed change point %+v; want none", c.factor, c.nights, n-1, cp)
				}
			}
			live = cps
		}
	}
	// Below the minimum magnitude a night is no excursion.
	v := constant(80, 1065)
	v[40] *= 1.005
	if exc := excursions(t, v, o); len(exc) != 0 {
		t.Errorf("Excursions(+0.5 %% at 40) = %+v; want none (below the 1 %% minimum magnitude)", exc)
	}
}

// The newest nights are never excursions: they may be the first of a
// step. A bad newest night is a provisional change point until the next
// night comes back, and then an excursion.
func TestNewestNightIsNoExcursionYet(t *testing.T) {
	o := changepoint.Options{NoiseFloor: 0.0003}
	for _, tail := range []int{1, 2} {
		v := constant(60, 1065)
		for i := 60 - tail; i < 60; i++ {
			v[i] = 1065 * 0.7
		}
		if exc := excursions(t, v, o); len(exc) != 0 {
			t.Errorf("Excursions(%d newest nights at −30 %%) = %+v; want none", tail, exc)
		}
		cps := detect(t, v, o)
		if len(cps) != 1 || cps[0].Index != 60-tail || !cps[0].Provisional {
			t.Errorf("Detect(%d newest nights at −30 %%) = %+v; want one provisional change point at %d", tail, cps, 60-tail)
		}
		back := append(v, 1065)
		if got := excursionIndices(excursions(t, back, o)); len(got) != tail || got[0] != 60-tail {
			t.Errorf("Excursions(%d nights at −30 %%, then back) = %v; want the %d nights from %d", tail, got, tail, 60-tail)
		}
		if cps := detect(t, back, o); len(cps) != 0 {
			t.Errorf("Detect(%d nights at −30 %%, then back) = %+v; want none", tail, cps)
		}
	}
	// Three nights are a level, not an excursion.
	v := constant(60, 1065)
	for i := 40; i < 43; i++ {
		v[i] = 1065 * 0.7
	}
	if exc := excursions(t, v, o); len(exc) != 0 {
		t.Errorf("Excursions(3 nights at −30 %%) = %+v; want none: a level of MinSegment nights", exc)
	}
}

// A bad newest night does not withdraw the change point before it: it
// belongs to no level until the next night says which. Tested with the
// raw values (excursions off), it widens the newest segment enough to.
func TestBadNewestNightKeepsTheChangePointBefore(t *testing.T) {
	o := changepoint.Options{NoiseFloor: 0.01}
	v := append(noisy(1, 60, 1, 0.01), noisy(101, 5, 0.97, 0.01)...)
	before := detect(t, v, o)
	if got := indices(before); !reflect.DeepEqual(got, []int{60}) {
		t.Fatalf("Detect(−3 %% step at 60, 5 nights after) = %v; want [60]", got)
	}
	bad := append(v, 0.97*1.07)
	after, err := changepoint.Update(bad, before, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 1 || after[0].Index != 60 || after[0].Provisional || after[0].SegmentEnd != 65 {
		t.Errorf("Update(…, then a +7 %% newest night) = %+v; want the change point at 60 kept, its segment ending at 65", after)
	}
	raw := o
	raw.ExcursionSigmas = math.Inf(1)
	if blind, err := changepoint.Update(bad, before, raw); err != nil || len(blind) != 0 {
		t.Errorf("Update(raw values, …, then a +7 %% newest night) = %+v, %v; want it withdrawn, as before excursions", blind, err)
	}
}

// An excursion right before a step in the same direction is still an
// excursion: it is far from both levels.
func TestExcursionBeforeAStepInItsDirection(t *testing.T) {
	o := changepoint.Options{NoiseFloor: 0.01}
	v := append(noisy(9, 40, 1, 0.01), noisy(10, 40, 1.12, 0.01)...)
	v[39] = 1.5
	if got := excursionIndices(excursions(t, v, o)); !reflect.DeepEqual(got, []int{39}) {
		t.Errorf("Excursions(+50 %% night before a +12 %% step) = %v; want [39]", got)
	}
	cps := detect(t, v, o)
	if len(cps) != 1 || cps[0].Index != 40 || cps[0].LastBefore != 38 {
		t.Errorf("Detect(+50 %% night at 39, +12 %% step at 40) = %+v; want one change point at 40 after night 38", cps)
	}
}

func TestExcursionsOffAndErrors(t *testing.T) {
	v := issueSeries()
	if exc := excursions(t, v, changepoint.Options{MinMagnitude: 0.05, ExcursionSigmas: math.Inf(1)}); len(exc) != 0 {
		t.Errorf("Excursions(ExcursionSigmas +Inf) = %+v; want none", exc)
	}
	for _, sigmas := range []float64{-1, math.NaN()} {
		if _, err := changepoint.Excursions(v, changepoint.Options{ExcursionSigmas: sigmas}); !errors.Is(err, changepoint.ErrOptions) {
			t.Errorf("Excursions(ExcursionSigmas %g) error = %v; want ErrOptions", sigmas, err)
		}
	}
	if _, err := changepoint.Excursions([]float64{1, math.NaN()}, changepoint.Options{}); !errors.Is(err, changepoint.ErrValue) {
		t.Errorf("Excursions(NaN) error = %v; want ErrValue", err)
	}
}

// Noise is the night-to-night noise, robust to a step and to bad nights.
func TestNoise(t *testing.T) {
	v := append(noisy(11, 200, 1, 0.02), noisy(12, 200, 1.1, 0.02)...)
	for i := 10; i < len(v); i += 50 {
		v[i] *= 0.6
	}
	if got := changepoint.Noise(v); math.Abs(got-0.02) > 0.003 {
		t.Errorf("Noise(2 %% noise, a 10 %% step, 8 bad nights) = %.4f; want 0.020 ± 0.003", got)
	}
	if got := changepoint.Noise(constant(50, 1065)); got != 0 {
		t.Errorf("Noise(constant) = %g; want 0", got)
	}
	// Five nights, one of them an excursion, would measure the excursion.
	if got := changepoint.Noise([]float64{1, 1.002, 0.999, 0.8, 1.001}); got != 0 {
		t.Errorf("Noise(5 values) = %g; want 0: too few to measure", got)
	}
}

// The oldest nights have no level before them: they are an excursion only
// when the nights after them make a level, of MinSegment nights. A series
// of two nights apart is a step or a bad first night, and nobody can say
// which yet (an images series whose first night was 6.1 and second 6.12
// called the first an excursion).
func TestFirstNightsNeedALevelAfter(t *testing.T) {
	o := changepoint.Options{NoiseFloor: 0.0003}
	for after := 1; after <= 4; after++ {
		v := append([]float64{1.0}, constant(after, 0.838)...)
		got := excursionIndices(excursions(t, v, o))
		if want := after >= changepoint.DefaultMinSegment; want != (len(got) == 1 && got[0] == 0) || !want && len(got) != 0 {
			t.Errorf("Excursions(a first night 19 %% above %d nights) = %v; want night 0 only with a level of %d nights after it", after, got, changepoint.DefaultMinSegment)
		}
	}
}

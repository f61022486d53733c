package changepoint_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/lpmbisect/lpmbisect/stats/changepoint"
)

// noisy returns n values level·(1+sd·N(0,1)) from a fixed seed.
func noisy(seed uint64, n int, level, sd float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 0))
	v := make([]float64, n)
	for i := range v {
		v[i] = level * (1 + sd*rng.NormFloat64())
	}
	return v
}

func constant(n int, v float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = v
	}
	return xs
}

func detect(t *testing.T, values []float64, o changepoint.Options) []changepoint.ChangePoint {
	t.Helper()
	cps, err := changepoint.Detect(values, o)
	if err != nil {
		t.Fatalf("Detect(%d values, %+v): %v", len(values), o, err)
	}
	return cps
}

func indices(cps []changepoint.ChangePoint) []int {
	idx := []int{}
	for _, c := range cps {
		idx = append(idx, c.Index)
	}
	return idx
}

func TestDetectStep(t *testing.T) {
	v := append(noisy(1, 60, 1, 0.01), noisy(2, 40, 1.05, 0.01)...)
	cps := detect(t, v, changepoint.Options{NoiseFloor: 0.01})
	if len(cps) != 1 {
		t.Fatalf("Detect(5 %% step at 60 under 1 %% noise) = %v; want one change point", indices(cps))
	}
	c := cps[0]
	if c.Index != 60 || c.SegmentStart != 0 || c.SegmentEnd != 100 || c.Provisional {
		t.Errorf("Detect(5 %% step at 60) = index %d, segments [%d, %d), provisional %v; want 60, [0, 100), false",
			c.Index, c.SegmentStart, c.SegmentEnd, c.Provisional)
	}
	if math.Abs(c.ChangePct-5) > 1 || math.Abs(c.Before-1) > 0.005 || math.Abs(c.After-1.05) > 0.005 {
		t.Errorf("Detect(5 %% step at 60) = %.4f → %.4f (%+.2f %%); want about 1 → 1.05 (+5 %%)", c.Before, c.After, c.ChangePct)
	}
	if !(c.P < 1e-10) || !(c.T > 10) {
		t.Errorf("Detect(5 %% step at 60) = t %g, p %g; want t > 10, p < 1e-10", c.T, c.P)
	}
}

func TestDetectTwoStepsHaveSegmentMeans(t *testing.T) {
	v := append(append(constant(50, 1000), constant(50, 900)...), constant(50, 950)...)
	cps := detect(t, v, changepoint.Options{NoiseFloor: 0.0003})
	if got := indices(cps); !reflect.DeepEqual(got, []int{50, 100}) {
		t.Fatalf("Detect(1000 → 900 at 50 → 950 at 100) = %v; want [50 100]", got)
	}
	want := []struct{ before, after float64 }{{1000, 900}, {900, 950}}
	for i, c := range cps {
		if math.Abs(c.Before-want[i].before) > 1e-9 || math.Abs(c.After-want[i].after) > 1e-9 {
			t.Errorf("change point %d: %g → %g; want %g → %g", c.Index, c.Before, c.After, want[i].before, want[i].after)
		}
	}
	if math.Abs(cps[0].ChangePct+10) > 1e-9 || math.Abs(cps[1].ChangePct-100.0/18) > 1e-9 {
		t.Errorf("changes %g %%, %g %%; want −10 %%, +5.56 %%", cps[0].ChangePct, cps[1].ChangePct)
	}
}

// Instruction counts repeat the same value for months: no division by zero,
// no NaN, and no change point, with or without a floor.
func TestDetectConstant(t *testing.T) {
	for _, floor := range []float64{0, 0.0003} {
		if cps := detect(t, constant(365, 1065), changepoint.Options{NoiseFloor: floor}); len(cps) != 0 {
			t.Errorf("Detect(365 × 1065, floor %g) = %+v; want none", floor, cps)
		}
	}
}

// A constant series whose newest night moved: the end-of-series check
// reports it that night, provisionally, if it exceeds the minimum
// magnitude.
func TestDetectStepOnNewestNight(t *testing.T) {
	o := changepoint.Options{NoiseFloor: 0.0003}
	v := append(constant(100, 1065), 1065*1.02)
	cps := detect(t, v, o)
	if len(cps) != 1 || cps[0].Index != 100 || !cps[0].Provisional || !(cps[0].P < 1e-10) {
		t.Fatalf("Detect(100 × 1065, then +2 %%) = %+v; want one provisional change point at 100 with p < 1e-10", cps)
	}
	small := append(constant(100, 1065), 1065*1.005)
	if cps := detect(t, small, o); len(cps) != 0 {
		t.Errorf("Detect(100 × 1065, then +0.5 %%) = %+v; want none (below the 1 %% minimum magnitude)", cps)
	}
	// Three nights later it is no longer provisional.
	v = append(v, 1065*1.02, 1065*1.02)
	cps = detect(t, v, o)
	if len(cps) != 1 || cps[0].Index != 100 || cps[0].Provisional {
		t.Errorf("Detect(100 × 1065, then 3 × +2 %%) = %+v; want one confirmed change point at 100", cps)
	}
}

// An excursion shorter than MinSegment in the middle of a series is an
// outlier, not two steps.
func TestDetectIgnoresShortExcursions(t *testing.T) {
	for _, length := range []int{1, 2} {
		v := noisy(3, 200, 1, 0.01)
		for i := 100; i < 100+length; i++ {
			v[i] *= 1.2
		}
		if cps := detect(t, v, changepoint.Options{NoiseFloor: 0.01}); len(cps) != 0 {
			t.Errorf("Detect(+20 %% for %d nights at 100) = %v; want none", length, indices(cps))
		}
	}
}

func TestDetectIsDeterministic(t *testing.T) {
	v := append(noisy(4, 200, 1, 0.02), noisy(5, 200, 1.04, 0.02)...)
	first := detect(t, v, changepoint.Options{NoiseFloor: 0.02})
	for range 3 {
		if again := detect(t, v, changepoint.Options{NoiseFloor: 0.02}); !reflect.DeepEqual(again, first) {
			t.Fatalf("Detect twice = %+v, then %+v; want the same", first, again)
		}
	}
}

func TestDetectErrors(t *testing.T) {
	cases := []struct {
		name   string
		values []float64
		o      changepoint.Options
		want   error
	}{
		{"NaN", []float64{1, 2, math.NaN()}, changepoint.Options{}, changepoint.ErrValue},
		{"Inf", []float64{math.Inf(1)}, changepoint.Options{}, changepoint.ErrValue},
		{"P ≥ 1", nil, changepoint.Options{P: 1}, changepoint.ErrOptions},
		{"negative EndP", nil, changepoint.Options{EndP: -1}, changepoint.ErrOptions},
		{"negative floor", nil, changepoint.Options{NoiseFloor: -0.01}, changepoint.ErrOptions},
		{"negative magnitude", nil, changepoint.Options{MinMagnitude: -0.01}, changepoint.ErrOptions},
		{"segment of 1", nil, changepoint.Options{MinSegment: 1}, changepoint.ErrOptions},
		{"window too small", nil, changepoint.Options{Window: 5, MinSegment: 3}, changepoint.ErrOptions},
	}
	for _, c := range cases {
		if _, err := changepoint.Detect(c.values, c.o); !errors.Is(err, c.want) {
			t.Errorf("%s: Detect(%v, %+v) error = %v; want %v", c.name, c.values, c.o, err, c.want)
		}
	}
	for _, n := range []int{0, 1, 2, 5} {
		if cps := detect(t, constant(n, 1), changepoint.Options{}); len(cps) != 0 {
			t.Errorf("Detect(%d values) = %+v; want none", n, cps)
		}
	}
}

// A change point the previous night reported stays while its p-value is
// within KeepFactor of the level, where a fresh pass would not accept it.
func TestUpdateKeepsPreviousChangePoint(t *testing.T) {
	// Before: 60 nights at 1 ± 1 %; after: 4 nights whose mean is 2 %
	// lower, so that p lies between P and P·KeepFactor.
	before := noisy(6, 60, 1, 0.01)
	after := []float64{0.981, 0.978, 0.982, 0.979}
	v := append(before, after...)
	o := changepoint.Options{NoiseFloor: 0.01}
	fresh := detect(t, v, o)
	prev := []changepoint.ChangePoint{{Index: 60, Before: 1, After: 0.98}}
	kept, err := changepoint.Update(v, prev, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 1 || kept[0].Index != 60 {
		t.Fatalf("Update(…, prev at 60) = %+v; want the change point at 60 kept", kept)
	}
	p := kept[0].P
	if len(fresh) != 0 {
		t.Fatalf("Detect(…) = %+v (p %g); want none: the test needs p in (P, P·KeepFactor]", fresh, p)
	}
	if !(p > changepoint.DefaultP && p <= changepoint.DefaultP*changepoint.KeepFactor) {
		t.Errorf("kept change point p = %g; want in (%g, %g]", p, changepoint.DefaultP, changepoint.DefaultP*changepoint.KeepFactor)
	}
}

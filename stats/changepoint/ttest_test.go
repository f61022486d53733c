package changepoint

import (
	"math"
	"testing"

	"github.com/aclements/go-moremath/stats"
)

func seg(values ...float64) segment {
	return newPrefixSums(values).segment(0, len(values))
}

// With equal sample variances on both sides borrowing changes nothing but
// the degrees of freedom: Welch's t, and a p-value no larger than Welch's.
func TestFlooredWelchEqualVariancesIsWelchT(t *testing.T) {
	a := []float64{10.1, 9.9, 10.0, 10.2, 9.8, 10.05}
	b := make([]float64, len(a))
	for i, x := range a {
		b[i] = x + 0.3
	}
	want, err := stats.TwoSampleWelchTTest(stats.Sample{Xs: b}, stats.Sample{Xs: a}, stats.LocationDiffers)
	if err != nil {
		t.Fatal(err)
	}
	gotT, gotP := flooredWelch(seg(a...), seg(b...), 0)
	if math.Abs(gotT-want.T) > 1e-9*math.Abs(want.T) || !(gotP <= want.P) {
		t.Errorf("flooredWelch(%v, %v, 0) = t %g, p %g; want t %g, p ≤ %g", a, b, gotT, gotP, want.T, want.P)
	}
}

func TestFlooredWelchZeroVariance(t *testing.T) {
	flat := func(v float64, n int) segment {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = v
		}
		return seg(xs...)
	}
	cases := []struct {
		name    string
		a, b    segment
		floor   float64
		wantP   func(p float64) bool
		explain string
	}{
		{"equal, no floor", flat(1065, 100), flat(1065, 3), 0, func(p float64) bool { return p == 1 }, "1"},
		{"different, no floor", flat(1065, 100), flat(1066, 3), 0, func(p float64) bool { return p == 0 }, "0"},
		{"equal, floor", flat(1065, 100), flat(1065, 3), 0.0003, func(p float64) bool { return p == 1 }, "1"},
		// 1 % over a floor of 0.03 %: 33 σ.
		{"1 % step, floor", flat(1000, 100), flat(1010, 3), 0.0003, func(p float64) bool { return p > 0 && p < 1e-12 }, "in (0, 1e-12)"},
		// 0.01 % over a floor of 0.03 %: noise.
		{"0.01 % step, floor", flat(1000, 100), flat(1000.1, 3), 0.0003, func(p float64) bool { return p > 0.1 }, "> 0.1"},
		{"one night after, floor", flat(1000, 100), flat(1010, 1), 0.0003, func(p float64) bool { return p > 0 && p < 1e-12 }, "in (0, 1e-12)"},
	}
	for _, c := range cases {
		tt, p := flooredWelch(c.a, c.b, c.floor)
		if math.IsNaN(tt) || math.IsNaN(p) || !c.wantP(p) {
			t.Errorf("%s: flooredWelch(n=%d mean %g, n=%d mean %g, %g) = t %g, p %g; want p %s",
				c.name, c.a.n, c.a.mean, c.b.n, c.b.mean, c.floor, tt, p, c.explain)
		}
	}
}

// Three nights after a 5σ step whose sample variance happens to exceed the
// long history's: plain Welch has two degrees of freedom there and
// p ≈ 0.03; borrowing the history's variance keeps the test's power.
func TestFlooredWelchShortSegmentKeepsPower(t *testing.T) {
	before := make([]float64, 120)
	for i := range before {
		before[i] = 1 + 0.01*float64(i%5-2)/1.414 // SD 1 %
	}
	after := []float64{0.9547, 0.9679, 0.9762} // SD 1.08 %, mean −3.4 %
	plain, err := stats.TwoSampleWelchTTest(stats.Sample{Xs: after}, stats.Sample{Xs: before}, stats.LocationDiffers)
	if err != nil {
		t.Fatal(err)
	}
	if plain.P < 0.01 {
		t.Fatalf("plain Welch p = %g; want the weak p > 0.01 this test is about", plain.P)
	}
	for _, floor := range []float64{0, 0.01} {
		if _, p := flooredWelch(seg(before...), seg(after...), floor); p > 1e-4 {
			t.Errorf("flooredWelch(…, %g) p = %g; want < 1e-4", floor, p)
		}
	}
}

// Three newest nights that lie close together, 1σ above a history with 5 %
// noise, are no step, even when the caller's floor (2 %) is too low: the
// short segment's variance comes from the history, not from the floor or
// from its own three values.
func TestFlooredWelchShortSegmentWithLowFloor(t *testing.T) {
	before := make([]float64, 120)
	for i := range before {
		before[i] = 1 + 0.05*float64(i%5-2)/1.414 // SD 5 %
	}
	after := []float64{1.0499, 1.05, 1.0501}
	if _, p := flooredWelch(seg(before...), seg(after...), 0.02); p < 0.01 {
		t.Errorf("flooredWelch(5 %% noise, three nights +5 %%, floor 0.02) p = %g; want > 0.01", p)
	}
}

func TestTwoSidedT(t *testing.T) {
	cases := []struct{ t, df, want float64 }{
		{2, 10, 0.07338803477074105},
		{1.959963984540054, math.Inf(1), 0.05},
		{-3, 5, 0.030099247890510986},
		{0, 7, 1},
	}
	for _, c := range cases {
		if got := twoSidedT(c.t, c.df); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("twoSidedT(%g, %g) = %.12g; want %.12g", c.t, c.df, got, c.want)
		}
	}
	// Far tails keep their precision instead of rounding to 0.
	if got := twoSidedT(40, 30); !(got > 0 && got < 1e-25) {
		t.Errorf("twoSidedT(40, 30) = %g; want in (0, 1e-25)", got)
	}
}

package compare

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/aclements/go-moremath/stats"
)

func TestSignedRankP(t *testing.T) {
	less, differs, greater := stats.LocationLess, stats.LocationDiffers, stats.LocationGreater
	for _, tc := range []struct {
		name  string
		x     []float64
		shift float64
		alt   stats.LocationHypothesis
		want  float64
	}{
		// Five positive values: only 1 of the 32 sign patterns puts all
		// ranks on the positive side.
		{"n=5 all positive, greater", []float64{1, 2, 3, 4, 5}, 0, greater, 1.0 / 32},
		{"n=5 all positive, two-sided", []float64{1, 2, 3, 4, 5}, 0, differs, 2.0 / 32},
		{"n=5 all positive, less", []float64{1, 2, 3, 4, 5}, 0, less, 1},
		{"n=5 all negative, less", []float64{-5, -4, -3, -2, -1}, 0, less, 1.0 / 32},
		// R: wilcox.test(c(-1, 2, 3, 4, 5, 6), exact = TRUE) gives V = 20,
		// p-value = 0.0625: V >= 20 leaves out at most rank 1 of 1..6, 2
		// of 64 patterns, doubled.
		{"R n=6 two-sided", []float64{-1, 2, 3, 4, 5, 6}, 0, differs, 0.0625},
		// The paired example of R's ?wilcox.test (Hollander & Wolfe,
		// depression scores x − y): wilcox.test(x, y, paired = TRUE,
		// alternative = "greater") gives V = 40, p-value = 0.01953. Ranks
		// 1..9 with 2 and 3 negative: V = 45 − 5; V >= 40 means the
		// negative ranks sum to at most 5: {}, {1}…{5}, {1,2}, {1,3},
		// {1,4}, {2,3}, 10 of 512 patterns.
		{"R depression greater", []float64{0.952, -0.147, 1.022, 0.43, 0.62, 0.59, 0.49, -0.08, 0.01}, 0, greater, 10.0 / 512},
		{"R depression two-sided", []float64{0.952, -0.147, 1.022, 0.43, 0.62, 0.59, 0.49, -0.08, 0.01}, 0, differs, 20.0 / 512},
		// Ties: |x| = 1, 1, 2, 2 have average ranks 1.5, 1.5, 3.5, 3.5
		// (doubled 3, 3, 7, 7). The 16 patterns' doubled sums: 0:1 3:2
		// 6:1 7:2 10:4 13:2 14:1 17:2 20:1. Observed 3+3+7 = 13, so
		// P(>= 13) = 6/16 and P(<= 13) = 12/16. (R's exact test refuses
		// ties and falls back to a normal approximation; this is the exact
		// conditional distribution, as coin::wilcoxsign_test computes it.)
		{"ties greater", []float64{1, 1, 2, -2}, 0, greater, 6.0 / 16},
		{"ties less", []float64{1, 1, 2, -2}, 0, less, 12.0 / 16},
		{"ties two-sided", []float64{1, 1, 2, -2}, 0, differs, 12.0 / 16},
		// Zeros are dropped before ranking: three positive values left.
		{"zeros dropped", []float64{0, 0, 1, 2, 3}, 0, greater, 1.0 / 8},
		{"zeros dropped two-sided", []float64{0, 0, 1, 2, 3}, 0, differs, 2.0 / 8},
		// A shift: 1.5, 2.5, 1, 0 − 1 is 0.5, 1.5, (0 dropped), −1: ranks
		// 1+, 3+, 2−, V = 4 of 6. V >= 4: {1,3}, {2,3}, {1,2,3}, 3 of 8;
		// V <= 4: all but {2,3} and {1,2,3}, 6 of 8.
		{"shift greater", []float64{1.5, 2.5, 1, 0}, 1, greater, 3.0 / 8},
		{"shift less", []float64{1.5, 2.5, 1, 0}, 1, less, 6.0 / 8},
		{"all zero", []float64{0, 0, 0, 0, 0, 0}, 0, differs, 1},
		{"all zero greater", []float64{0, 0, 0, 0, 0, 0}, 0, greater, 1},
		{"empty", nil, 0, less, 1},
	} {
		got, err := signedRankP(tc.x, tc.shift, tc.alt)
		if err != nil || math.Abs(got-tc.want) > 1e-15 {
			t.Errorf("signedRankP(%s: %v, %v, %v) = %v, %v; want %v, nil", tc.name, tc.x, tc.shift, tc.alt, got, err, tc.want)
		}
	}
}

func TestSignedRankPErrors(t *testing.T) {
	many := make([]float64, maxBoots+1)
	for i := range many {
		many[i] = float64(i + 1)
	}
	if _, err := signedRankP(many, 0, stats.LocationDiffers); err == nil {
		t.Errorf("signedRankP(%d values) = nil error; want an error past %d", len(many), maxBoots)
	}
	if p, err := signedRankP(many[:maxBoots], 0, stats.LocationGreater); err != nil || p != math.Ldexp(1, -maxBoots) {
		t.Errorf("signedRankP(%d positive values, greater) = %v, %v; want 2^-%d, nil", maxBoots, p, err, maxBoots)
	}
	if _, err := signedRankP([]float64{1, math.NaN()}, 0, stats.LocationDiffers); err == nil {
		t.Errorf("signedRankP(NaN) = nil error; want an error")
	}
}

// TestSignedRankPBruteForce checks the dynamic programme against counting
// all 2^n sign patterns, on small samples with many ties and zeros.
func TestSignedRankPBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := 1 + rng.IntN(10)
		x := make([]float64, n)
		for i := range x {
			x[i] = float64(rng.IntN(7) - 3) // −3…3: ties and zeros
		}
		// Doubled average ranks of the non-zero |x|, by counting.
		var mags []float64
		var pos []bool
		for _, v := range x {
			if v != 0 {
				mags = append(mags, math.Abs(v))
				pos = append(pos, v > 0)
			}
		}
		rank := func(m float64) int { // doubled average rank of magnitude m
			below, equal := 0, 0
			for _, o := range mags {
				if o < m {
					below++
				} else if o == m {
					equal++
				}
			}
			return 2*below + equal + 1
		}
		w := 0
		for i, m := range mags {
			if pos[i] {
				w += rank(m)
			}
		}
		le, ge := 0, 0
		k := len(mags)
		for mask := range 1 << k {
			s := 0
			for i, m := range mags {
				if mask&(1<<i) != 0 {
					s += rank(m)
				}
			}
			if s <= w {
				le++
			}
			if s >= w {
				ge++
			}
		}
		all := float64(int(1) << k)
		want := map[stats.LocationHypothesis]float64{
			stats.LocationLess:    float64(le) / all,
			stats.LocationGreater: float64(ge) / all,
			stats.LocationDiffers: math.Min(1, 2*math.Min(float64(le), float64(ge))/all),
		}
		for alt, p := range want {
			got, err := signedRankP(x, 0, alt)
			if err != nil || math.Abs(got-p) > 1e-12 {
				t.Errorf("signedRankP(%v, 0, %v) = %v, %v; want %v (by enumeration)", x, alt, got, err, p)
			}
		}
	}
}

func TestSignedRankMinP(t *testing.T) {
	for _, tc := range []struct {
		n        int
		twoSided bool
		want     float64
	}{
		{0, true, 1}, {1, true, 1}, {1, false, 0.5}, {5, false, 1.0 / 32}, {6, true, 2.0 / 64}, {8, true, 2.0 / 256},
	} {
		if got := signedRankMinP(tc.n, tc.twoSided); got != tc.want {
			t.Errorf("signedRankMinP(%d, %v) = %v; want %v", tc.n, tc.twoSided, got, tc.want)
		}
	}
	// The formula must agree with the test on n distinct positive values.
	for n := 1; n <= 12; n++ {
		x := make([]float64, n)
		for i := range x {
			x[i] = float64(i + 1)
		}
		for _, twoSided := range []bool{false, true} {
			alt := stats.LocationGreater
			if twoSided {
				alt = stats.LocationDiffers
			}
			if got, _ := signedRankP(x, 0, alt); got != signedRankMinP(n, twoSided) {
				t.Errorf("signedRankP(1..%d, %v) = %v; want signedRankMinP = %v", n, alt, got, signedRankMinP(n, twoSided))
			}
		}
	}
	if got := minPairs(0.05, false); got != 5 {
		t.Errorf("minPairs(0.05, one-sided) = %d; want 5 (1/32 <= 0.05)", got)
	}
	if got := minPairs(0.05, true); got != 6 {
		t.Errorf("minPairs(0.05, two-sided) = %d; want 6 (2/64 <= 0.05)", got)
	}
}

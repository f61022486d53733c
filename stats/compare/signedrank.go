package compare

import (
	"fmt"
	"math"
	"slices"

	"github.com/aclements/go-moremath/stats"
)

// signedRankP returns the p-value of the exact Wilcoxon signed-rank test of
// the values x − shift against symmetry about 0, with the alternative alt:
// LocationGreater (the values lie above shift), LocationLess (below) or
// LocationDiffers (either side).
//
// The statistic is the sum of the ranks of |x − shift| over the positive
// values. Values equal to shift are dropped before ranking (Wilcoxon's
// convention, as R's wilcox.test does), tied magnitudes share their average
// rank, and the null distribution is the exact conditional one given those
// ranks: each value's sign is + or − with probability 1/2, independently.
// It is computed by dynamic programming over the sum of doubled ranks,
// which are integers even with average ranks. The two-sided p-value is twice
// the smaller tail, capped at 1 (the distribution is symmetric).
//
// With no value left after dropping zeros, the p-value is 1. It returns an
// error for more than maxBoots values (the counts stay exact in uint64 up to
// there, and the statistics here never need more) or for a NaN.
func signedRankP(x []float64, shift float64, alt stats.LocationHypothesis) (float64, error) {
	y := make([]float64, 0, len(x))
	for _, v := range x {
		switch d := v - shift; {
		case math.IsNaN(d):
			return 1, fmt.Errorf("signed-rank test of a NaN value")
		case d != 0:
			y = append(y, d)
		}
	}
	n := len(y)
	if n == 0 {
		return 1, nil
	}
	if n > maxBoots {
		return 1, fmt.Errorf("the exact signed-rank test stops at %d values, got %d", maxBoots, n)
	}

	// Doubled average ranks of |y|: a run of ties at sorted positions
	// i..j (from 0) has ranks i+1..j+1, doubled average i+j+2.
	slices.SortFunc(y, func(a, b float64) int {
		switch a, b = math.Abs(a), math.Abs(b); {
		case a < b:
			return -1
		case a > b:
			return 1
		}
		return 0
	})
	ranks := make([]int, n)
	for i := 0; i < n; {
		j := i
		for j+1 < n && math.Abs(y[j+1]) == math.Abs(y[i]) {
			j++
		}
		for k := i; k <= j; k++ {
			ranks[k] = i + j + 2
		}
		i = j + 1
	}
	w, total := 0, 0
	for i, r := range ranks {
		total += r
		if y[i] > 0 {
			w += r
		}
	}

	// count[s] is the number of the 2^n sign patterns whose positive
	// values' doubled ranks sum to s.
	count := make([]uint64, total+1)
	count[0] = 1
	top := 0
	for _, r := range ranks {
		for s := top; s >= 0; s-- {
			count[s+r] += count[s]
		}
		top += r
	}
	var le, ge uint64 // patterns with statistic <= w and >= w
	for s, c := range count {
		if s <= w {
			le += c
		}
		if s >= w {
			ge += c
		}
	}
	all := math.Ldexp(1, n)
	lower, upper := float64(le)/all, float64(ge)/all
	switch alt {
	case stats.LocationLess:
		return lower, nil
	case stats.LocationGreater:
		return upper, nil
	}
	return math.Min(1, 2*math.Min(lower, upper)), nil
}

// signedRankMinP returns the smallest p-value the exact signed-rank test can
// give for n values (no zeros, no ties): 2/2^n two-sided, 1/2^n one-sided.
func signedRankMinP(n int, twoSided bool) float64 {
	if n <= 0 {
		return 1
	}
	p := math.Ldexp(1, -n)
	if twoSided {
		p *= 2
	}
	return math.Min(1, p)
}

// minPairs returns the smallest n for which n pairs can give a signed-rank
// p-value of at most level, or 0 if more than maxBoots are needed.
func minPairs(level float64, twoSided bool) int {
	for n := 1; n <= maxBoots; n++ {
		if atMost(signedRankMinP(n, twoSided), level) {
			return n
		}
	}
	return 0
}

// Package sample holds what every statistic of lpmbisect takes of a plain
// sample of values, in one place: its median. A boot's value is the median
// of its samples (compare), a night's boot summary keeps its median
// (nightly), and change points and excursions compare the medians of the
// nights around them (changepoint).
package sample

import (
	"math"
	"slices"
)

// Median returns the median of vs without modifying it: the middle value,
// or the mean of the two middle values of an even count; NaN when vs is
// empty.
func Median(vs []float64) float64 {
	return MedianInPlace(slices.Clone(vs))
}

// MedianInPlace is Median for a caller that owns vs and does not need its
// order: it sorts vs instead of a copy, so a hot loop over scratch slices
// (changepoint's levels around each night) allocates nothing.
func MedianInPlace(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	slices.Sort(vs)
	n := len(vs)
	if n%2 == 1 {
		return vs[n/2]
	}
	return (vs[n/2-1] + vs[n/2]) / 2
}

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
	if len(vs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

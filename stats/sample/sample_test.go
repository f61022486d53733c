package sample

import (
	"math"
	"slices"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, tt := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{7}, 7},
	} {
		in := slices.Clone(tt.in)
		if got := Median(in); got != tt.want {
			t.Errorf("Median(%v) = %v; want %v", tt.in, got, tt.want)
		}
		if !slices.Equal(in, tt.in) {
			t.Errorf("Median(%v) reordered its input to %v", tt.in, in)
		}
	}
	in := []float64{4, 1, 3, 2}
	if got := MedianInPlace(in); got != 2.5 || !slices.IsSorted(in) {
		t.Errorf("MedianInPlace([4 1 3 2]) = %v, leaving %v; want 2.5, sorted", got, in)
	}
	if got := Median(nil); !math.IsNaN(got) {
		t.Errorf("Median(nil) = %v; want NaN", got)
	}
}

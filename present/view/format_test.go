package view

import (
	"math"
	"testing"
)

func TestFormatDelta(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{-21.69, "-21.7%"}, {10, "+10.0%"}, {0.314, "+0.31%"}, {0.03, "+0.03%"}, {0, "+0.00%"}, {-0.004, "-4.0e-03%"}, {math.NaN(), "?"},
	} {
		if got := FormatDelta(tc.in); got != tc.want {
			t.Errorf("FormatDelta(%v) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

func TestFormatP(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{0.0022, "0.002"}, {0.05, "0.050"}, {1, "1.000"}, {0.001, "0.001"}, {0.0009, "<0.001"},
	} {
		if got := FormatP(tc.in); got != tc.want {
			t.Errorf("FormatP(%v) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

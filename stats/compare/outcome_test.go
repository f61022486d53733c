package compare

import (
	"math"
	"testing"
)

func TestDirectionOf(t *testing.T) {
	for _, tc := range []struct {
		unit  string
		delta float64
		want  Direction
	}{
		{"insn/op", 7.2, Worse},
		{"sec/op", -3, Better},
		{"B/op", 0.5, Worse},
		{"MB/s", 5, Better},
		{"MB/s", -5, Worse},
		// No known direction: a unit that is neither a cost nor a rate,
		// no change, or no number.
		{"ratio", 5, Changed},
		{"ratio", -5, Changed},
		{"insn/op", 0, Changed},
		{"insn/op", math.NaN(), Changed},
	} {
		if got := DirectionOf(tc.unit, tc.delta); got != tc.want {
			t.Errorf("DirectionOf(%q, %v) = %v; want %v", tc.unit, tc.delta, got, tc.want)
		}
	}
	if got := (Row{Unit: "ratio", DeltaPct: 3}).Direction().String(); got != "changed" {
		t.Errorf("Direction of a ratio's change = %q; want changed", got)
	}
}

// TestWorseUnknownDirection: CI counts a DIFFERENT row without a known
// direction against the kernel, though its Direction is Changed.
func TestWorseUnknownDirection(t *testing.T) {
	for _, tc := range []struct {
		unit  string
		delta float64
		want  bool
	}{
		{"insn/op", 4, true},
		{"insn/op", -4, false},
		{"MB/s", -4, true},
		{"MB/s", 4, false},
		{"insn/op", 0, false},
		{"ratio", 4, true},
		{"ratio", -4, true},
	} {
		row := Row{Unit: tc.unit, Better: betterOf(tc.unit), DeltaPct: tc.delta, Verdict: Different}
		if got := row.Worse(); got != tc.want {
			t.Errorf("Row{%s, %+v%%, DIFFERENT}.Worse() = %v; want %v", tc.unit, tc.delta, got, tc.want)
		}
		rep := &Report{Rows: []Row{row}}
		if want := map[bool]Outcome{true: Regression, false: NoRegression}[tc.want]; rep.Outcome(FailOnRegression) != want {
			t.Errorf("Outcome(FailOnRegression) of that row = %v; want %v", rep.Outcome(FailOnRegression), want)
		}
		if row.Verdict = Same; row.Worse() {
			t.Errorf("Row{%s, %+v%%, SAME}.Worse() = true; want false", tc.unit, tc.delta)
		}
	}
}

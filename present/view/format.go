package view

import (
	"fmt"
	"math"
	"strings"
)

// FormatDelta formats a change in percent with its sign and three
// significant digits at most: "-21.7%", "+0.31%", "+0.03%".
func FormatDelta(pct float64) string {
	a := math.Abs(pct)
	switch {
	case math.IsNaN(pct):
		return "?"
	case a >= 10:
		return fmt.Sprintf("%+.1f%%", pct)
	case a >= 0.01 || a == 0:
		return fmt.Sprintf("%+.2f%%", pct)
	}
	return fmt.Sprintf("%+.1e%%", pct)
}

// FormatP formats a p-value with three decimals, or "<0.001".
func FormatP(p float64) string {
	if p < 0.001 {
		return "<0.001"
	}
	return fmt.Sprintf("%.3f", p)
}

// FormatPRelation formats a p-value with its relation: "=0.029" or
// "<0.001".
func FormatPRelation(p float64) string {
	s := FormatP(p)
	if strings.HasPrefix(s, "<") {
		return s
	}
	return "=" + s
}

// FormatValue renders a centre in its unit, as the tables do: seconds per
// operation in ns/op, other units as they are.
func FormatValue(v float64, unit string) string {
	if unit == "sec/op" {
		return fmt.Sprintf("%.4g ns/op", v*1e9)
	}
	return fmt.Sprintf("%.4g %s", v, unit)
}

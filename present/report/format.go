package report

import (
	"fmt"
	"math"
)

// formatPct formats a percentage with more digits the smaller it is, so that
// the 0.03 % spread of instruction counts does not print as 0 %.
func formatPct(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "∞"
	case math.IsNaN(v):
		return "?"
	case v == 0:
		return "0%"
	case v < 0.01:
		return "<0.01%"
	case v < 1:
		return fmt.Sprintf("%.2f%%", v)
	case v < 10:
		return fmt.Sprintf("%.1f%%", v)
	}
	return fmt.Sprintf("%.0f%%", v)
}

// pct formats a fraction as a percentage with up to four significant
// digits, for levels and the minimum effect: 0.01 is "1%", 0.95 "95%".
func pct(f float64) string { return fmt.Sprintf("%.4g%%", 100*f) }

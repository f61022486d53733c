package compare

import (
	"fmt"
	"math"
)

// The formats and explanations below are package report's now. These copies
// stay only until report/bisect.go, which is being written beside this
// change, calls report's; delete this file then.

// Deprecated: use report.InstructionsExplanation.
const InstructionsExplanation = "insn/op counts guest instructions retired per operation (QEMU TCG with -icount: " +
	"the guest clock advances one nanosecond per instruction). The counts are deterministic (spread ~0.03 %), " +
	"so any difference is \"significant\" and the minimum effect decides. They measure the code path's length, " +
	"not its speed: not cycles, cache misses, branch mispredictions, memory latency, lock contention, " +
	"or frequency and SMT effects. A change that alters only those shows up as SAME here; check it with wall time."

// Deprecated: use report.FormatDelta.
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

// Deprecated: use report.FormatP.
func FormatP(p float64) string {
	if p < 0.001 {
		return "<0.001"
	}
	return fmt.Sprintf("%.3f", p)
}

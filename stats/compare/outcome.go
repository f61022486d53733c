package compare

import (
	"fmt"
	"math"
	"slices"

	"github.com/lpmbisect/lpmbisect/wire"
)

// FailOn chooses which DIFFERENT rows fail a comparison in CI.
type FailOn int

const (
	// FailOnRegression fails only on a change for the worse: a larger value
	// in a unit where lower is better (time or instructions per op), a
	// smaller one where higher is better. A row whose unit has no known
	// direction counts as worse: CI should not pass what it cannot judge.
	FailOnRegression FailOn = iota
	// FailOnChange fails on any DIFFERENT row, better or worse.
	FailOnChange
)

func (f FailOn) String() string {
	switch f {
	case FailOnRegression:
		return "regression"
	case FailOnChange:
		return "change"
	}
	return fmt.Sprintf("FailOn(%d)", int(f))
}

// ParseFailOn parses "regression" or "change", the values of --fail-on.
func ParseFailOn(s string) (FailOn, error) {
	switch s {
	case "regression":
		return FailOnRegression, nil
	case "change":
		return FailOnChange, nil
	}
	return 0, fmt.Errorf("fail-on %q is not regression or change", s)
}

// Outcome is the overall result of a comparison, for exit codes.
type Outcome int

const (
	// NoRegression: every non-control row is SAME, or DIFFERENT in a way
	// that FailOn accepts, and the controls did not drift.
	NoRegression Outcome = iota
	// Regression: a non-control row is DIFFERENT in a way FailOn rejects,
	// and the controls did not drift.
	Regression
	// Inconclusive: the controls drifted, or no row failed but some
	// non-control row is UNKNOWN (too noisy for the boots taken, or run on
	// one side only).
	Inconclusive
)

func (o Outcome) String() string {
	switch o {
	case NoRegression:
		return "no regression"
	case Regression:
		return "regression"
	case Inconclusive:
		return "inconclusive"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Direction is which way a change goes for the kernel.
type Direction int

const (
	// Changed is a change without a known direction: its unit has none
	// (betterOf is 0: neither a cost per operation nor a rate), or the
	// change is zero or not a number. It is neither better nor worse, and
	// reports say "changed". CI does not pass it all the same:
	// FailOnRegression fails a DIFFERENT row whose unit has no known
	// direction (Row.Worse), because it cannot judge it.
	Changed Direction = iota
	// Better is a smaller value where lower is better, or a larger one
	// where higher is better.
	Better
	// Worse is a larger value where lower is better, or a smaller one
	// where higher is better.
	Worse
)

func (d Direction) String() string {
	switch d {
	case Changed:
		return "changed"
	case Better:
		return "better"
	case Worse:
		return "worse"
	}
	return fmt.Sprintf("Direction(%d)", int(d))
}

// DirectionOf returns the direction of a change of deltaPct percent in
// unit, such as a change point's.
func DirectionOf(unit string, deltaPct float64) Direction {
	return directionOf(betterOf(unit), deltaPct)
}

// directionOf is DirectionOf for a unit whose betterOf is better.
func directionOf(better int, deltaPct float64) Direction {
	switch {
	case better == 0 || deltaPct == 0 || math.IsNaN(deltaPct):
		return Changed
	case (better < 0) == (deltaPct > 0):
		return Worse
	}
	return Better
}

// Direction returns the direction of the row's change (DeltaPct in Unit),
// whatever its verdict.
func (r Row) Direction() Direction { return directionOf(r.Better, r.DeltaPct) }

// Worse reports whether the row is DIFFERENT and fails FailOnRegression:
// its Direction is Worse (B larger where lower is better or smaller where
// higher is better), or its unit has no known direction, which CI cannot
// judge and so does not pass (see Changed).
func (r Row) Worse() bool {
	if r.Verdict != Different {
		return false
	}
	return r.Better == 0 || r.Direction() == Worse
}

// Weighed reports whether the row counts for the outcome and the look
// loop: neither a control, nor a user's program's total (Row.Total), whose
// own-work row counts instead, nor, of a verifier row, the verifier's own
// time (wire.IsVerifierTime: it moves from load to load even under icount,
// while the counts beside it, which are weighed, repeat) or the
// description of the program as loaded (wire.LoadedProgramUnits). The
// others are reported with their verdicts all the same.
func (r Row) Weighed() bool {
	return !r.Control && !r.Total && !wire.IsVerifierTime(r.Benchmark, r.Unit) && !slices.Contains(wire.LoadedProgramUnits, r.Unit)
}

// Outcome decides the comparison for CI. Only weighed rows count
// (Row.Weighed: not the controls, for a user's program its own work, not
// its total with the test-run harness, and of a verifier row its counts,
// not its time nor the program's sizes); the rule, in order:
//
//  1. If a control moved enough to explain a minimum-effect change
//     (EnvironmentDrift, under wall time only), Inconclusive: something
//     other than the kernel's map code changed, so no row can be blamed on
//     it. Under instruction counts a control that moves is the kernel's
//     harness cost (Row.HarnessChanged), and the rules below decide.
//  2. If a row fails (failOn: a worse DIFFERENT row, or any DIFFERENT row),
//     Regression, even if other rows are UNKNOWN.
//  3. If a row is UNKNOWN, Inconclusive; an exact row's UNKNOWN (Row.Exact:
//     a count of one pass per side, final) does not count here.
//  4. Otherwise NoRegression. A report without timed non-control rows is
//     Inconclusive: nothing was shown.
func (r *Report) Outcome(failOn FailOn) Outcome {
	if r.EnvironmentDrift {
		return Inconclusive
	}
	var unknown, any bool
	for _, row := range r.Rows {
		if !row.Weighed() {
			continue
		}
		any = any || !row.Exact
		switch row.Verdict {
		case Different:
			if failOn == FailOnChange || row.Worse() {
				return Regression
			}
		case Unknown:
			unknown = unknown || !row.Exact
		}
	}
	if unknown || !any {
		return Inconclusive
	}
	return NoRegression
}

// Undecided returns the rows that more boots could still decide
// (Row.Undecided) whose benchmark is selected and that are weighed
// (Row.Weighed) or controls. A nil selected means every weighed row.
func (r *Report) Undecided(selected func(bench string) bool) []Row {
	var out []Row
	for _, row := range r.Rows {
		// A row that is not weighed (a verifier row's verification time,
		// which moves from load to load; a program's total) keeps the
		// verdict the other rows' boots reach, and never holds the look
		// loop on its own.
		sel := row.Weighed()
		if selected != nil {
			sel = sel || row.Control
			sel = sel && selected(sourceOf(row.Benchmark))
		}
		if sel && row.Undecided() {
			out = append(out, row)
		}
	}
	return out
}

// Undecided reports whether more boots could decide the row: it was tested
// (both sides compared, A's centre positive) and is UNKNOWN. Such a row has
// NeedFor and BootsNeeded.
func (r Row) Undecided() bool { return r.Verdict == Unknown && r.tested() && !r.Final }

// tested reports whether the row enters the tests: a relative change needs
// both sides and a positive centre of A.
func (r Row) tested() bool { return r.Compared() && r.A.Center > 0 }

// NeedMoreBoots reports whether an adaptive run should add boots: some
// selected row is Undecided and the controls did not drift (more boots do
// not undo a drift: the outcome stays Inconclusive). The caller stops at its
// cap on boots regardless; the rule never continues "until significant",
// only while undecided, and the α-spending in Build keeps repeated looks
// from inflating false DIFFERENT verdicts.
func (r *Report) NeedMoreBoots(selected func(bench string) bool) bool {
	return !r.EnvironmentDrift && len(r.Undecided(selected)) > 0
}

// Drifted returns the control rows that make the report's
// EnvironmentDrift: moved enough to explain a minimum-effect change.
func (r *Report) Drifted() []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.Drift {
			out = append(out, row)
		}
	}
	return out
}

// Moved returns the control rows that are DIFFERENT, whether or not they
// amount to drift.
func (r *Report) Moved() []Row {
	var out []Row
	for _, row := range r.Rows {
		if row.Control && row.Verdict == Different {
			out = append(out, row)
		}
	}
	return out
}

// HasControls reports whether any control row was compared. Without one,
// environment drift cannot be detected.
func (r *Report) HasControls() bool {
	for _, row := range r.Rows {
		if row.Control && row.Compared() {
			return true
		}
	}
	return false
}

// UnitInstructions is the unit of instruction-count mode (TCG with
// -icount shift=0): one guest nanosecond per instruction.
const UnitInstructions = "insn/op"

// Instructions reports whether any row counts instructions (UnitInstructions).
func (r *Report) Instructions() bool {
	for _, row := range r.Rows {
		if row.Unit == UnitInstructions {
			return true
		}
	}
	return false
}

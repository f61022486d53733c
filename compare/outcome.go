package compare

import (
	"fmt"
	"math"
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

// Worse reports whether the row is DIFFERENT for the worse: B larger where
// lower is better or smaller where higher is better. A DIFFERENT row in a
// unit with no known direction is worse too.
func (r Row) Worse() bool {
	if r.Verdict != Different {
		return false
	}
	switch {
	case r.Better < 0:
		return r.DeltaPct > 0
	case r.Better > 0:
		return r.DeltaPct < 0
	}
	return true
}

// Outcome decides the comparison for CI. Only rows that are not controls
// count; the rule, in order:
//
//  1. If a control moved enough to explain a minimum-effect change
//     (EnvironmentDrift), Inconclusive: something other than the kernel's
//     map code changed, so no row can be blamed on it.
//  2. If a row fails (failOn: a worse DIFFERENT row, or any DIFFERENT row),
//     Regression, even if other rows are UNKNOWN.
//  3. If a row is UNKNOWN, Inconclusive.
//  4. Otherwise NoRegression. A report without non-control rows is
//     Inconclusive: nothing was shown.
func (r *Report) Outcome(failOn FailOn) Outcome {
	if r.EnvironmentDrift {
		return Inconclusive
	}
	var unknown, any bool
	for _, row := range r.Rows {
		if row.Control {
			continue
		}
		any = true
		switch row.Verdict {
		case Different:
			if failOn == FailOnChange || row.Worse() {
				return Regression
			}
		case Unknown:
			unknown = true
		}
	}
	if unknown || !any {
		return Inconclusive
	}
	return NoRegression
}

// Undecided returns the rows that more boots could still decide: compared,
// UNKNOWN rows whose benchmark is selected. A nil selected means every row
// that is not a control.
func (r *Report) Undecided(selected func(bench string) bool) []Row {
	var out []Row
	for _, row := range r.Rows {
		sel := !row.Control
		if selected != nil {
			sel = selected(row.Benchmark)
		}
		if sel && row.Verdict == Unknown && row.Compared() && row.A.Center > 0 {
			out = append(out, row)
		}
	}
	return out
}

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

// InstructionsExplanation says in plain words what instruction-count results
// measure and what they cannot see. Reports print it whenever a row is in
// UnitInstructions.
const InstructionsExplanation = "insn/op counts guest instructions retired per operation (QEMU TCG with -icount: " +
	"the guest clock advances one nanosecond per instruction). The counts are deterministic (spread ~0.03 %), " +
	"so any difference is \"significant\" and the minimum effect decides. They measure the code path's length, " +
	"not its speed: not cycles, cache misses, branch mispredictions, memory latency, lock contention, " +
	"or frequency and SMT effects. A change that alters only those shows up as SAME here; check it with wall time."

// Instructions reports whether any row counts instructions (UnitInstructions).
func (r *Report) Instructions() bool {
	for _, row := range r.Rows {
		if row.Unit == UnitInstructions {
			return true
		}
	}
	return false
}

// Headline returns an LKP-style one-line summary of the row, e.g.
//
//	LPMTrie/op=lookup/keys=random/entries=10000: -21.7% insn/op (better), DIFFERENT, p=0.008, 4+4 boots
//
// For a control the direction reads "(control moved)". For rows not
// compared it says on which side the benchmark ran. A paired row ends in its
// pairs ("8 pairs") instead of its boots.
func (r Row) Headline() string {
	if !r.Compared() {
		why := "ran on one side only"
		if r.Paired && r.A.Boots > 0 && r.B.Boots > 0 {
			why = "no complete pair"
		}
		return fmt.Sprintf("%s: %v, %s, %d+%d boots", r.Benchmark, r.Verdict, why, r.A.Boots, r.B.Boots)
	}
	dir := ""
	switch {
	case r.Control && r.Verdict == Different:
		dir = " (control moved)"
	case r.Verdict == Different && r.Worse():
		dir = " (worse)"
	case r.Verdict == Different:
		dir = " (better)"
	}
	return fmt.Sprintf("%s: %s %s%s, %v, p=%s, %s", r.Benchmark, FormatDelta(r.DeltaPct), r.Unit, dir, r.Verdict, FormatP(r.P), r.BootsLabel())
}

// BootsLabel counts the row's units for reports: "6+6 boots", or in a
// paired row the complete pairs, "8 pairs".
func (r Row) BootsLabel() string {
	if r.Paired {
		return plural(r.Pairs, "pair")
	}
	return fmt.Sprintf("%d+%d boots", r.A.Boots, r.B.Boots)
}

// PairedExplanation says in one line what a paired report's design is and
// which test it uses. Reports print it whenever Report.Paired is set.
const PairedExplanation = "paired: boots ran in pairs, one A and one B alive at once on one host CPU, taking samples in turn; " +
	"tests are Wilcoxon signed-rank on per-pair log(B/A)"

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

// VerdictRule states in one line how this report's verdicts were decided.
func (r *Report) VerdictRule() string {
	look := fmt.Sprintf("look %d", r.Look.Number)
	if r.Look.MaxBoots > 0 {
		look += fmt.Sprintf(" of ≤%d %s", r.Look.MaxBoots, perSide(r.Paired))
	}
	return fmt.Sprintf("verdict (%s): DIFFERENT = significant at α=%v over all rows and looks, and shown beyond ±%s; SAME = shown within ±%s; else UNKNOWN",
		look, r.Alpha, pct(r.MinEffect), pct(r.MinEffect))
}

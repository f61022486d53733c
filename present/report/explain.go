package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/lpmbisect/lpmbisect/internal/words"
	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/wire"
)

// instructionsExplanation says in plain words what instruction-count results
// measure and what they cannot see. Reports print it whenever a row is in
// compare.UnitInstructions (compare.Report.Instructions).
const instructionsExplanation = "insn/op counts guest instructions retired per operation (QEMU TCG with -icount: " +
	"the guest clock advances one nanosecond per instruction). The counts are deterministic (spread ~0.03 %), " +
	"so any difference is \"significant\" and the minimum effect decides. They measure the code path's length, " +
	"not its speed: not cycles, cache misses, branch mispredictions, memory latency, lock contention, " +
	"or frequency and SMT effects. A change that alters only those shows up as SAME here; check it with wall time."

// pairedExplanation says in one line what a paired report's design is and
// which test it uses. Reports print it whenever compare.Report.Paired is set.
const pairedExplanation = "paired: boots ran in pairs, one A and one B alive at once on one host CPU, taking samples in turn; " +
	"tests are Wilcoxon signed-rank on per-pair log(B/A)"

// Headline returns an LKP-style one-line summary of the row, e.g.
//
//	LPMTrie/op=lookup/keys=random/entries=10000: -21.7% insn/op (better), DIFFERENT, p=0.008, 4+4 boots
//
// For a control the direction reads "(control moved)". For rows not
// compared it says on which side the benchmark ran. A paired row ends in its
// pairs ("8 pairs") instead of its boots.
func Headline(r compare.Row) string {
	if !r.Compared() {
		why := "ran on one side only"
		if r.Paired && r.A.Boots > 0 && r.B.Boots > 0 {
			why = "no complete pair"
		}
		return fmt.Sprintf("%s: %v, %s, %d+%d boots", r.Benchmark, r.Verdict, why, r.A.Boots, r.B.Boots)
	}
	dir := ""
	switch {
	case r.Control && r.Verdict == compare.Different:
		dir = " (control moved)"
	case r.Verdict == compare.Different && r.Worse():
		dir = " (worse)"
	case r.Verdict == compare.Different:
		dir = " (better)"
	}
	switch {
	case dir == "" || r.Control:
	case r.Total:
		dir = strings.TrimSuffix(dir, ")") + ", with its test-run harness: not weighed, op=own is)"
	case wire.IsVerifierTime(r.Benchmark, r.Unit):
		dir = strings.TrimSuffix(dir, ")") + ", the verifier's own time: not weighed, its counts are)"
	case !r.Weighed():
		dir = strings.TrimSuffix(dir, ")") + ", the program as loaded: not weighed)"
	}
	switch {
	case r.Exact && len(r.A.PerBoot) > 0:
		return fmt.Sprintf("%s: %s %s%s, %v (deterministic rule, jitter bound ±%s), one count per side by the %s", r.Benchmark, view.FormatDelta(r.DeltaPct), r.Unit, dir, r.Verdict, pct(r.Bound), r.A.PerBoot[0].ID)
	case r.Rule == compare.RuleDeterministic:
		return fmt.Sprintf("%s: %s %s%s, %v (deterministic rule, jitter bound ±%s), %s", r.Benchmark, view.FormatDelta(r.DeltaPct), r.Unit, dir, r.Verdict, pct(r.Bound), bootsLabel(r))
	}
	return fmt.Sprintf("%s: %s %s%s, %v, p=%s, %s", r.Benchmark, view.FormatDelta(r.DeltaPct), r.Unit, dir, r.Verdict, view.FormatP(r.P), bootsLabel(r))
}

// bootsLabel counts the row's units for reports: "6+6 boots", or in a
// paired row the complete pairs, "8 pairs".
func bootsLabel(r compare.Row) string {
	if r.Paired {
		return words.Plural(r.Pairs, "pair")
	}
	return fmt.Sprintf("%d+%d boots", r.A.Boots, r.B.Boots)
}

// verdictRule states in one line how the report's verdicts were decided:
// at which look, with what α and minimum effect.
func verdictRule(rep *compare.Report) string {
	look := fmt.Sprintf("look %d", rep.Look.Number)
	if rep.Look.MaxBoots > 0 {
		look += fmt.Sprintf(" of ≤%d %s", rep.Look.MaxBoots, compare.Units(rep.Paired))
	}
	return fmt.Sprintf("verdict (%s): DIFFERENT = significant at α=%v over all rows and looks, and shown beyond ±%s; SAME = shown within ±%s; else UNKNOWN%s",
		look, rep.Alpha, pct(rep.MinEffect), pct(rep.MinEffect), rulesLine(rep))
}

// rowNotes returns the notes every format prints for a row: compare's
// (compare.Row.Notes), then, for a row more boots could decide, what they
// would decide and at how many (needNote).
func rowNotes(rep *compare.Report, r compare.Row) []string {
	notes := slices.Clip(r.Notes)
	if n := ruleNote(rep, r); n != "" {
		notes = append([]string{n}, notes...)
	}
	if !r.Undecided() {
		return notes
	}
	return append(notes, needNote(rep, r))
}

// ruleNote says which rule decided a row, in an instruction-count report
// (where both rules may meet) or when the row has its own minimum effect.
func ruleNote(rep *compare.Report, r compare.Row) string {
	own := ""
	if r.MinEffect != 0 && r.MinEffect != rep.MinEffect {
		own = fmt.Sprintf(", minimum effect ±%s (calibrated for this benchmark)", pct(r.MinEffect))
	}
	switch {
	case !r.Compared():
		return ""
	case r.Exact:
		return fmt.Sprintf("deterministic rule on one count per side: jitter bound ±%s (two boots of one image), minimum effect ±%s", pct(r.Bound), pct(r.MinEffect))
	case r.Rule == compare.RuleDeterministic:
		return fmt.Sprintf("deterministic rule: calibrated jitter bound ±%s%s", pct(r.Bound), own)
	case own != "":
		return "statistical rule" + own
	}
	return ""
}

// rulesLine says, in an instruction-count report, which rule decided the
// rows: rows of the deterministic rule carry a note saying so.
func rulesLine(rep *compare.Report) string {
	counted := false
	for _, r := range rep.Rows {
		counted = counted || (r.Compared() && r.Unit == compare.UnitInstructions)
	}
	if !counted || rep.Paired { // icount runs are never paired
		return ""
	}
	for _, r := range rep.Rows {
		if r.Rule == compare.RuleDeterministic {
			return "; rows noted \"deterministic rule\" are decided from a calibrated jitter bound (no α), the others statistically"
		}
	}
	return "; every row by the statistical rule (no calibrated jitter bounds: see lpmbisect calibrate)"
}

// spreadHint says why a calibrated floor is coarse, and what is not.
const spreadHint = "(this host's boots of one kernel spread that wide; icount counts instructions without that spread)"

// floorTooClose reports whether a calibrated floor above the user's is
// what keeps an undecided row from a verdict, not the boots: the floor
// withholds SAME (FloorHides), or lies close to a change beyond the user's
// floor, which either reaches it (DIFFERENT would need more boots) or
// stops short of it, in its outer half, with SAME out of reach at the
// boots allowed (a change of 2 % under a floor of 15 % is not close: its
// SAME waits for boots, not for a smaller floor).
func floorTooClose(rep *compare.Report, r compare.Row) bool {
	if r.FloorHides {
		return true
	}
	if r.MinEffect <= rep.MinEffect || rep.Look.MaxBoots == 0 {
		return false
	}
	d := math.Abs(r.DeltaPct) / 100
	return r.NeedFor == compare.Different || d > rep.MinEffect && d >= r.MinEffect/2 && r.BootsNeeded > rep.Look.MaxBoots
}

// needNote phrases compare's estimate for an undecided row
// (compare.Row.NeedFor and BootsNeeded): the claim the boots would settle,
// which assumes the observed change holds (for a kernel compared with
// itself it will not), and the boots per side or pairs it would take.
func needNote(rep *compare.Report, r compare.Row) string {
	eff := rep.MinEffect
	if r.MinEffect != 0 {
		eff = r.MinEffect
	}
	if r.FloorHides { // more boots do not lift a withheld SAME while the change stays
		return fmt.Sprintf("the calibrated floor ±%s is too close to the %s change to show it at %s: SAME is withheld while the change is significant, DIFFERENT needs more than ±%s %s",
			pct(eff), view.FormatDelta(r.DeltaPct), bootsLabel(r), pct(eff), spreadHint)
	}
	if rep.EnvironmentDrift {
		return driftStop
	}
	claim := fmt.Sprintf("showing B within ±%s of A (SAME)", pct(eff))
	if r.NeedFor == compare.Different {
		claim = fmt.Sprintf("confirming the %s change (DIFFERENT)", view.FormatDelta(r.DeltaPct))
	}
	var need string
	switch {
	case r.BootsNeeded > compare.MaxBootsNeeded:
		need = fmt.Sprintf("%s would need more than %d %s at this spread", claim, compare.MaxBootsNeeded, compare.Units(r.Paired))
	case r.BootsNeeded > 0 && r.BootsNeeded <= taken(r):
		// The estimate assumes all of α; an adaptive run's last looks
		// have only a share of it, so it can fall below what was taken.
		need = fmt.Sprintf("%s was not reached at the %d %s taken (at all of α this spread would need ~%d; each look has only a share of it)",
			claim, taken(r), compare.Units(r.Paired), r.BootsNeeded)
	case r.BootsNeeded > 0:
		need = fmt.Sprintf("%s would need ~%d %s at this spread", claim, r.BootsNeeded, compare.Units(r.Paired))
	case r.Paired:
		return "too few pairs to estimate the spread of the pairs' changes"
	default:
		return "too few boots to estimate the spread between boots"
	}
	if floorTooClose(rep, r) {
		need = fmt.Sprintf("the calibrated floor ±%s is too close to the %s change to show it at the %d %s allowed: %s %s",
			pct(eff), view.FormatDelta(r.DeltaPct), rep.Look.MaxBoots, compare.Units(r.Paired), need, spreadHint)
	}
	return need
}

// taken is the boots per side (pairs, when paired) a row was decided from:
// the fewer side's.
func taken(r compare.Row) int {
	if r.Paired {
		return r.Pairs
	}
	return min(r.A.Boots, r.B.Boots)
}

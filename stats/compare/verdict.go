package compare

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/aclements/go-moremath/stats"
	"golang.org/x/perf/benchunit"

	"github.com/lpmbisect/lpmbisect/internal/words"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Verdict is the decision on one row. The zero value is Unknown.
type Verdict int

const (
	Unknown   Verdict = iota // neither SAME nor DIFFERENT at the boots taken
	Same                     // shown to be within ±MinEffect
	Different                // significant and beyond MinEffect
)

var verdictNames = [...]string{Unknown: "UNKNOWN", Same: "SAME", Different: "DIFFERENT"}

func (v Verdict) String() string {
	if v >= 0 && int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// MarshalText encodes the verdict as its name, for JSON.
func (v Verdict) MarshalText() ([]byte, error) {
	if v < 0 || int(v) >= len(verdictNames) {
		return nil, fmt.Errorf("compare: invalid verdict %d", int(v))
	}
	return []byte(v.String()), nil
}

// UnmarshalText decodes a verdict name.
func (v *Verdict) UnmarshalText(b []byte) error {
	i := slices.Index(verdictNames[:], string(b))
	if i < 0 {
		return fmt.Errorf("compare: unknown verdict %q (want SAME, DIFFERENT or UNKNOWN)", b)
	}
	*v = Verdict(i)
	return nil
}

// defaultControls name the benchmarks that measure the harness rather than
// the kernel's map code: noop runs the measuring loop around nothing and
// baseline around a trivial operation. A name matches a control if it equals
// it or continues it with "/", so "LPMTrie/op=noop/entries=10000" is the noop
// control.
var defaultControls = []string{"LPMTrie/op=noop", "LPMTrie/op=baseline"}

// Look describes the look at the data a Report is: which boots it counts and
// how much of the error budget it may use. Pass it back as Options.Previous
// when the run adds boots and compares again.
type Look struct {
	// Number counts the looks of the run from 1.
	Number int
	// Boots is the number of boots per side this look counts: the smaller
	// side's, taken over the compared rows. In a paired report it is the
	// number of pairs: the smallest count of complete pairs of a tested row.
	Boots int
	// MaxBoots is the run's cap of boots per side (of pairs, when paired);
	// 0 for a fixed-size comparison, a single look that may use all of α.
	MaxBoots int
	// Paired is Report.Paired: a run keeps it from look to look.
	Paired bool
	// History lists Boots of every look of the run so far, this one last.
	History []int
	// DifferentLevel is the family-wise level of DIFFERENT claims at this
	// look (Holm across rows at this level); SameLevel the level of each
	// row's equivalence test.
	DifferentLevel, SameLevel float64
	// DifferentSpent and SameSpent are the parts of α spent up to and
	// including this look. A look at which no row could reach a claim
	// spends nothing for it.
	DifferentSpent, SameSpent float64
	// Decided lists the rows that have a verdict, from this look or an
	// earlier one. A verdict is final: later looks keep it, as in a group
	// sequential trial, so adding boots for one benchmark cannot undo
	// another's. (The rows stay in the Holm family of later looks, which
	// keeps the error control simple and a little conservative.)
	Decided []Decision
}

// Decision records the look at which a row got its verdict.
type Decision struct {
	Benchmark, Unit string
	Verdict         Verdict
	Look            int // the Look.Number that decided
	Boots           int // boots per side (pairs, when paired) at that look
	// P is the p-value of the claim that decided the row: Row.PAdj for
	// DIFFERENT, Row.PSame for SAME (0 under the deterministic rule, which
	// makes no probabilistic claim). Later looks report it for the row.
	P float64
	// Rule is the rule that decided, Bound its jitter bound when
	// deterministic.
	Rule  Rule
	Bound float64
}

// spentBy returns how much of alpha a run may have spent once n of max boots
// per side are in: the Pocock-type spending function α·ln(1+(e−1)t) of Lan
// and DeMets, with t = n/max capped at 1. It spends 52 % of α by 40 % of the
// boots, so an early look can call a large effect.
func spentBy(alpha float64, n, max int) float64 {
	if max <= 0 {
		return alpha
	}
	t := math.Min(1, float64(n)/float64(max))
	return alpha * math.Log(1+(math.E-1)*t)
}

// uMinP returns the smallest p-value the exact U test can give for samples
// of n1 and n2 values (no ties): 2/C(n1+n2, n1) for the two-sided test,
// 1/C(n1+n2, n1) for a one-sided one.
func uMinP(n1, n2 int, twoSided bool) float64 {
	if n1 == 0 || n2 == 0 {
		return 1
	}
	// C(n1+n2, n1) as a float: exact enough, and past 1e300 it does not matter.
	c := 1.0
	for i := 1; i <= n1; i++ {
		c = c * float64(n2+i) / float64(i)
	}
	p := 1 / c
	if twoSided {
		p *= 2
	}
	return math.Min(1, p)
}

// minBoots returns the smallest n for which n+n boots can give a p-value of
// at most level, or 0 if more than maxBoots are needed.
func minBoots(level float64, twoSided bool) int {
	for n := 1; n <= maxBoots; n++ {
		if atMost(uMinP(n, n, twoSided), level) {
			return n
		}
	}
	return 0
}

// minBootsToDecide returns the smallest number of boots per side at which a
// first look can reach SAME and DIFFERENT, for a comparison of rows rows
// (benchmarks and controls, each unit counted) under opts. An adaptive run
// that starts at different boots calls a large effect at its first look; one
// that starts at same can stop at once when nothing changed. It returns 0 for
// a verdict that needs more than 50 boots.
//
// For α=0.05, MaxBoots=10 and 4 rows: SAME at 4, DIFFERENT at 6. A paired
// run needs more: see minPairsToDecide.
func minBootsToDecide(opts Options, rows int) (same, different int, err error) {
	return minUnitsToDecide(opts, rows, func(n int, twoSided bool) float64 { return uMinP(n, n, twoSided) })
}

// minUnitsToDecide returns the fewest units (boots per side, or pairs) at
// which a first look can reach SAME and DIFFERENT, given the smallest
// p-value minP(n, twoSided) a test over n units can give.
func minUnitsToDecide(opts Options, rows int, minP func(n int, twoSided bool) float64) (same, different int, err error) {
	opts, err = opts.withDefaults()
	if err != nil {
		return 0, 0, fmt.Errorf("compare: %w", err)
	}
	rows = max(rows, 1)
	for n := 1; n <= maxBoots; n++ {
		level := spentBy(opts.Alpha, n, opts.MaxBoots)
		if same == 0 && atMost(minP(n, false), level) {
			same = n
		}
		if different == 0 && atMost(minP(n, true), level/float64(rows)) {
			different = n
		}
	}
	return same, different, nil
}

// decide sets the look, the verdicts and the verdict notes of rep's rows:
// it sorts the rows into those the tests weigh, decides the rows of a
// deterministic instrument by their bounds, spends this look's α, decides
// the other rows by the statistical rule, and records every decision.
func decide(rep *Report, opts Options) {
	l := startLook(opts, rep.Paired)
	tested, zeros := l.sortRows(rep, opts)
	stat := l.decideByBounds(tested, zeros, opts, rep.Paired)
	reachD, reachS := l.spendAlpha(rep, opts, stat)
	l.decideStatistical(stat, rep, opts, reachD, reachS)
	l.record(rep, opts, slices.Concat(tested, zeros))
	checkDrift(rep)
}

// deciding is the look that decide makes: the Look, the α earlier looks
// spent, and the decisions so far by row.
type deciding struct {
	Look
	prevD, prevS float64
	decided      map[key]Decision
}

// startLook starts the look after opts.Previous (the first when nil).
func startLook(opts Options, paired bool) *deciding {
	l := &deciding{Look: Look{Number: 1, MaxBoots: opts.MaxBoots, Paired: paired}, decided: map[key]Decision{}}
	if p := opts.Previous; p != nil {
		l.Number = p.Number + 1
		l.History = slices.Clone(p.History)
		l.prevD, l.prevS = p.DifferentSpent, p.SameSpent
		for _, d := range p.Decided {
			l.decided[key{d.Benchmark, d.Unit}] = d
		}
	}
	return l
}

// sortRows notes what each row of rep is (a control, a total, a row
// reported but not weighed), and returns the rows the tests weigh and
// the rows of a bounded benchmark that are 0 in every boot of both
// sides; it sets the look's boots (pairs, when paired).
func (l *deciding) sortRows(rep *Report, opts Options) (tested, zeros []*Row) {
	bootsA, bootsB := 0, 0
	pairs := -1
	total := totals(rep.Rows)
	for i := range rep.Rows {
		row := &rep.Rows[i]
		row.Control = IsControl(row.Benchmark, opts.Controls)
		row.Total = total[key{row.Benchmark, row.Unit}]
		row.Better = betterOf(row.Unit)
		if row.Control {
			row.addNote("control: measures the harness, not the kernel")
		}
		switch {
		case row.Total:
			row.addNote("the program with its test-run harness: reported, not weighed; its op=own row decides the outcome")
		case slices.Contains(wire.LoadedProgramUnits, row.Unit):
			row.addNote("describes the program as loaded (size, JITed size, stack), not what verifying it cost: reported, not weighed")
		case wire.IsVerifierTime(row.Benchmark, row.Unit):
			row.addNote("the verifier's own time moves from load to load: reported, not weighed; its counts are")
		}
		if !row.Compared() {
			continue
		}
		bootsA, bootsB = max(bootsA, row.A.Boots), max(bootsB, row.B.Boots)
		if !row.tested() {
			if _, ok := opts.Bounds[row.Benchmark]; ok && !rep.Paired && allZero(row.A) && allZero(row.B) {
				zeros = append(zeros, row)
				continue
			}
			row.addNote("centre of A is not positive: a relative change is undefined, no verdict")
			continue
		}
		tested = append(tested, row)
		if pairs < 0 || row.Pairs < pairs {
			pairs = row.Pairs
		}
	}
	l.Boots = min(bootsA, bootsB)
	if rep.Paired {
		l.Boots = max(pairs, 0)
	}
	l.History = append(l.History, l.Boots)
	return tested, zeros
}

// decideByBounds decides the rows of a deterministic instrument by the
// deterministic rule, outside the statistical family: they spend no α and
// do not count in its Holm correction. Rows decided at an earlier look
// keep their verdict whatever rule made it. It returns the rows left to
// the statistical rule.
func (l *deciding) decideByBounds(tested, zeros []*Row, opts Options, paired bool) (stat []*Row) {
	for _, row := range tested {
		k := key{row.Benchmark, row.Unit}
		row.MinEffect, row.Rule = opts.effectFor(row.Benchmark), RuleStatistical
		if _, was := l.decided[k]; !was && !paired {
			if b, ok := opts.Bounds[row.Benchmark]; ok && decideDeterministic(row, b) {
				if row.Verdict != Unknown {
					row.DecidedLook, row.DecidedBoots = l.Number, l.Boots
					l.decided[k] = Decision{Benchmark: row.Benchmark, Unit: row.Unit, Verdict: row.Verdict, Look: l.Number,
						Boots: l.Boots, P: row.ClaimP(), Rule: RuleDeterministic, Bound: b}
				}
				continue
			}
		}
		stat = append(stat, row)
	}
	for _, row := range zeros {
		row.MinEffect = opts.effectFor(row.Benchmark)
		if decideZeros(row, opts.Bounds[row.Benchmark]) {
			k := key{row.Benchmark, row.Unit}
			row.DecidedLook, row.DecidedBoots = l.Number, l.Boots
			if d, was := l.decided[k]; was {
				row.DecidedLook, row.DecidedBoots = d.Look, d.Boots
			} else {
				l.decided[k] = Decision{Benchmark: row.Benchmark, Unit: row.Unit, Verdict: Same, Look: l.Number,
					Boots: l.Boots, P: row.ClaimP(), Rule: RuleDeterministic, Bound: row.Bound}
			}
		}
	}
	return stat
}

// spendAlpha sets the look's levels from the α spent by its boots less
// what earlier looks spent, says whether any row of stat can reach
// DIFFERENT and SAME at them (a level no row can reach is not spent),
// and sets rep's Look.
func (l *deciding) spendAlpha(rep *Report, opts Options, stat []*Row) (reachD, reachS bool) {
	allowed := spentBy(rep.Alpha, l.Boots, opts.MaxBoots)
	l.DifferentLevel = math.Max(0, allowed-l.prevD)
	l.SameLevel = math.Max(0, allowed-l.prevS)
	m := float64(len(stat))
	for _, row := range stat {
		reachD = reachD || atMost(row.minP(true), l.DifferentLevel/m)
		reachS = reachS || atMost(row.minP(false), l.SameLevel)
	}
	l.DifferentSpent, l.SameSpent = l.prevD, l.prevS
	if reachD {
		l.DifferentSpent += l.DifferentLevel
	}
	if reachS {
		l.SameSpent += l.SameLevel
	}
	rep.Look = l.Look
	return reachD, reachS
}

// decideStatistical decides the rows of stat by the statistical rule
// (effect p-values, Holm over the family), but those an earlier look
// decided, which keep their verdict.
func (l *deciding) decideStatistical(stat []*Row, rep *Report, opts Options, reachD, reachS bool) {
	for _, row := range stat {
		if rep.Paired {
			d, _ := pairChanges(row.A, row.B)
			row.PEffect = pairedEffectP(d, row.DeltaPct, row.MinEffect)
		} else {
			row.PEffect = effectP(row.A.medians(), row.B.medians(), row.DeltaPct, row.MinEffect)
		}
	}
	holm(stat)
	for _, row := range stat {
		k := key{row.Benchmark, row.Unit}
		if d, ok := l.decided[k]; ok {
			row.Verdict, row.DecidedLook, row.DecidedBoots = d.Verdict, d.Look, d.Boots
			if d.Rule == RuleDeterministic {
				row.Rule, row.Bound = d.Rule, d.Bound
			}
			if d.Verdict == Same {
				row.PSame = d.P
			} else {
				row.PAdj = d.P
			}
			row.addNote(fmt.Sprintf("%v since look %d at %d %s (verdicts are final)", d.Verdict, d.Look, d.Boots, Units(rep.Paired)))
			if d.Verdict == Same {
				row.noteCoarseSame(opts.MinEffect)
			}
			continue
		}
		decideRow(row, rep, opts, len(stat), reachD, reachS)
		if row.Verdict != Unknown {
			row.DecidedLook, row.DecidedBoots = l.Number, l.Boots
			l.decided[k] = Decision{Benchmark: row.Benchmark, Unit: row.Unit, Verdict: row.Verdict, Look: l.Number, Boots: l.Boots, P: row.ClaimP(), Rule: RuleStatistical}
		}
	}
}

// record lists the decisions in rep's Look: earlier ones in their order,
// then this look's in the order of rows, for a stable record.
func (l *deciding) record(rep *Report, opts Options, rows []*Row) {
	if p := opts.Previous; p != nil {
		for _, d := range p.Decided {
			rep.Look.Decided = append(rep.Look.Decided, d)
			delete(l.decided, key{d.Benchmark, d.Unit})
		}
	}
	for _, row := range rows {
		if d, ok := l.decided[key{row.Benchmark, row.Unit}]; ok {
			rep.Look.Decided = append(rep.Look.Decided, d)
		}
	}
}

// checkDrift decides what a control that moved (a DIFFERENT control row)
// means, and sets Row.Drift and Report.EnvironmentDrift, or
// Row.HarnessChanged. This is the one place that tells drift from a
// kernel's harness cost.
//
// A control measures the harness around the map operation: the BPF program
// and bpf_loop around nothing (noop) or around the key computation
// (baseline), or for a user's program BPF_PROG_TEST_RUN's loop around a
// program that returns at once (its noop, wire.WorkloadNoop). It moves when
// the host, QEMU or the guest program changed, which must not be blamed on
// the kernel; but it also moves when the kernel changed its helper-call,
// loop or test-run overhead. Debian 6.1 → 6.12 does that: in instruction
// counts noop goes from 16 to 18 insn/op (+13 %), while lookups fall by 174
// insn/op.
//
// Under a deterministic instrument (Report.Deterministic: instruction
// counts) the host cannot move a count, so a moved control is always the
// kernel's harness cost changing (Row.HarnessChanged), never drift: the
// report says what moved and by how much, and the verdicts stand.
//
// Under wall time the harness cost enters every benchmark of the harness
// additively, so what matters is its size against them: a control is drift
// when its absolute change is at least the minimum effect of some
// non-control row of its harness (HarnessOf) in the same unit
// (|ΔB−A| >= MinEffect·|A's centre|), i.e. when the harness alone could
// make that row DIFFERENT. A smaller move is reported in the control's
// notes, and the verdicts stand. A control with no non-control row of its
// harness in its unit to compare with is drift.
func checkDrift(rep *Report) {
	for i := range rep.Rows {
		c := &rep.Rows[i]
		if !c.Control || c.Verdict != Different {
			continue
		}
		move := math.Abs(c.B.Center - c.A.Center)
		if c.Paired {
			// The sides' centres move with host state; the pairs'
			// median change does not.
			move = math.Abs(c.A.Center * c.DeltaPct / 100)
		}
		by := benchunit.Scale(move, benchunit.ClassOf(c.Unit)) + " " + c.Unit
		if rep.Deterministic {
			c.HarnessChanged = true
			if rep.OneKernel && len(rep.Differences) > 0 {
				c.addNote(fmt.Sprintf("control moved by %s with the set-up (one kernel on both sides): the harness's cost on it changed (instruction counts do not depend on the host, so this is not drift)", by))
				continue
			}
			c.addNote(fmt.Sprintf("control moved by %s with the kernel: the kernel's cost of the harness changed (instruction counts do not depend on the host, so this is not drift)", by))
			continue
		}
		harness := HarnessOf(c.Benchmark)
		var smallest *Row
		for j := range rep.Rows {
			r := &rep.Rows[j]
			if r.Control || r.Unit != c.Unit || !r.Compared() || r.A.Center == 0 || HarnessOf(r.Benchmark) != harness {
				continue
			}
			if smallest == nil || math.Abs(r.A.Center) < math.Abs(smallest.A.Center) {
				smallest = r
			}
		}
		switch {
		case smallest == nil:
			c.Drift = true
			c.addNote("control moved and no benchmark of its harness in its unit to weigh it against: environment drift")
		case move >= smallest.MinEffect*math.Abs(smallest.A.Center):
			c.Drift = true
			c.addNote(fmt.Sprintf("control moved by %s, at least %.4g%% of %s: environment drift",
				by, 100*smallest.MinEffect, smallest.Benchmark))
		default:
			c.addNote(fmt.Sprintf("control moved by %s, under %.4g%% of every benchmark: the harness cost changed, too little to explain a verdict",
				by, 100*smallest.MinEffect))
		}
		if c.Drift {
			rep.EnvironmentDrift = true
		}
	}
}

// atMost reports p <= level, forgiving the rounding of p-values computed in
// floating point: the exact U test of 3+3 boots gives 0.05000000000000004
// for what is 1/20.
func atMost(p, level float64) bool { return p <= level*(1+1e-9) }

// holm sets PAdj of each row to the Holm-adjusted value of its decision
// p-value max(P, PEffect): with those sorted ascending, p(i)·(m−i+1), made
// monotone and capped at 1. A row is significant in Holm's step-down
// procedure at level L exactly when its adjusted p is at most L.
func holm(rows []*Row) {
	p := func(r *Row) float64 { return math.Max(r.P, r.PEffect) }
	sorted := slices.Clone(rows)
	sort.SliceStable(sorted, func(i, j int) bool { return p(sorted[i]) < p(sorted[j]) })
	m := len(sorted)
	run := 0.0
	for i, row := range sorted {
		run = math.Max(run, math.Min(1, float64(m-i)*p(row)))
		row.PAdj = run
	}
}

// effectP returns the p-value of the minimum-effect test: that B lies
// beyond A·(1+eff) when the observed change is an increase, or below
// A·(1−eff) when it is a decrease. The direction is chosen by the data, so
// the one-sided p is doubled, which makes it a test at the same level as
// the two-sided U test. Requiring it as well as benchmath's p turns "the
// change exceeds the minimum effect" from an observation into a claim with
// an error rate: with boot-to-boot noise of a few percent, a 1.2 %
// difference of medians is common between two sets of boots of one kernel.
func effectP(a, b []float64, deltaPct, eff float64) float64 {
	if deltaPct == 0 {
		return 1
	}
	shifted := make([]float64, len(a))
	alt := stats.LocationGreater
	f := 1 + eff
	if deltaPct < 0 {
		alt, f = stats.LocationLess, 1-eff
	}
	for i, v := range a {
		shifted[i] = v * f
	}
	res, err := stats.MannWhitneyUTest(b, shifted, alt)
	if err != nil {
		return 1
	}
	return math.Min(1, 2*res.P)
}

// noteCoarseSame says, of a SAME row of a benchmark whose floor was
// raised above the user's (calibrated), when its change lies beyond the
// user's floor: the claim holds only that coarsely. A SAME kept from an
// earlier look says it too, with the change seen now.
func (row *Row) noteCoarseSame(userFloor float64) {
	if row.Control || row.MinEffect <= userFloor || math.Abs(row.DeltaPct/100) <= userFloor {
		return
	}
	row.addNote(fmt.Sprintf("SAME within its own ±%.4g%% only: the %.4g%% change is beyond the ±%.4g%% asked for, and a floor this coarse cannot show whether it is real",
		100*row.MinEffect, row.DeltaPct, 100*userFloor))
}

// decideRow gives a tested row its verdict.
func decideRow(row *Row, rep *Report, opts Options, m int, reachD, reachS bool) {
	look := rep.Look
	delta := row.DeltaPct / 100
	// A look that spent nothing for a claim must not make it, even if
	// rounding in the p-values says otherwise.
	if reachD && atMost(row.PAdj, look.DifferentLevel) && math.Abs(delta) > row.MinEffect {
		row.Verdict = Different
		return
	}

	if row.Paired {
		d, _ := pairChanges(row.A, row.B)
		row.PSame = pairedEquivalenceP(d, row.MinEffect)
	} else {
		row.PSame = equivalenceP(row.A.medians(), row.B.medians(), row.MinEffect)
	}
	// raised: the row's own floor (calibrated) is above the user's, and
	// the change lies between the two.
	raised := row.MinEffect > opts.MinEffect && math.Abs(delta) > opts.MinEffect
	shownSame := reachS && atMost(row.PSame, look.SameLevel)
	if shownSame && !(raised && row.Significant) {
		row.Verdict = Same
		if row.Significant {
			row.addNote(fmt.Sprintf("significant (p=%.3f) but within the minimum effect %.4g%%", row.P, 100*row.MinEffect))
		}
		row.noteCoarseSame(opts.MinEffect)
		return
	}
	if shownSame { // raised and significant
		// A floor raised for this benchmark (calibrated: what the host
		// can rule out) must not turn a change the user's own floor would
		// see into SAME: the row stays UNKNOWN. This refuses a claim and
		// makes none, so it spends no α.
		row.FloorHides = true
		row.addNote(fmt.Sprintf("SAME within ±%.4g%% withheld: the %.4g%% change is significant (p=%.3f) and beyond the minimum effect ±%.4g%% asked for",
			100*row.MinEffect, row.DeltaPct, row.P, 100*opts.MinEffect))
	}

	row.Verdict = Unknown
	switch {
	case row.Significant && math.Abs(delta) <= row.MinEffect && !row.FloorHides:
		row.addNote(fmt.Sprintf("significant (p=%.3f) but below the minimum effect %.4g%%; not yet shown to be within it", row.P, 100*row.MinEffect))
	case row.Significant:
		row.addNote(fmt.Sprintf("p=%.3f is not significant once corrected for %s and %s (Holm-adjusted p=%.3g > level %.3g)",
			row.P, words.Plural(m, "row"), words.Plural(look.Number, "look"), row.PAdj, look.DifferentLevel))
	}
	if minP := row.minP(true); !atMost(minP, look.DifferentLevel/float64(m)) {
		at := fmt.Sprintf("%d+%d boots", row.A.Boots, row.B.Boots)
		if row.Paired {
			at = words.Plural(row.Pairs, "pair")
		}
		row.addNote(fmt.Sprintf("DIFFERENT out of reach at %s (smallest possible p %.2g > level %.2g: α=%v shared by %s and the looks)",
			at, minP, look.DifferentLevel/float64(m), rep.Alpha, words.Plural(m, "row")))
	}
	// What more boots would decide is data; package report phrases it.
	row.NeedFor, row.BootsNeeded = bootsNeeded(row, rep.Alpha, row.MinEffect, m)
}

// Units names what a count of boots counts in a comparison: boots per
// side, or pairs.
func Units(paired bool) string {
	if paired {
		return "pairs"
	}
	return "boots per side"
}

// minP returns the smallest p-value the row's test can give at its boots
// (pairs, when paired): two-sided or one-sided.
func (r *Row) minP(twoSided bool) float64 {
	if r.Paired {
		return signedRankMinP(r.Pairs, twoSided)
	}
	return uMinP(r.A.Boots, r.B.Boots, twoSided)
}

// MaxBootsNeeded caps the estimate of Row.BootsNeeded: past it the number
// says nothing but "out of reach", and BootsNeeded is MaxBootsNeeded+1.
const MaxBootsNeeded = 1000

// equivalenceP returns the p-value of the equivalence test (TOST) that B is
// within ±eff of A: the larger p of two one-sided U tests, B below
// A·(1+eff) and B above A·(1−eff). Scaling A tests a multiplicative shift,
// which is what "within 1 %" means for positive values. Each one-sided test
// at level L and the conjunction of the two at L too (intersection-union), so
// no correction is due.
func equivalenceP(a, b []float64, eff float64) float64 {
	up := make([]float64, len(a))
	down := make([]float64, len(a))
	for i, v := range a {
		up[i], down[i] = v*(1+eff), v*(1-eff)
	}
	below, err1 := stats.MannWhitneyUTest(b, up, stats.LocationLess)
	above, err2 := stats.MannWhitneyUTest(b, down, stats.LocationGreater)
	if err := errors.Join(err1, err2); err != nil {
		return 1
	}
	return math.Max(below.P, above.P)
}

// bootsNeeded estimates the boots per side with which the row would reach a
// verdict with 80 % power if the spread between boots and the change stayed
// as observed: DIFFERENT if the change exceeds the minimum effect, SAME
// otherwise. It uses the normal approximation n = 2·(z₁+z₂)²·(σ/d)² inflated
// by π/3 for the U test's efficiency relative to the t test, with σ the
// pooled standard deviation of per-boot medians relative to A's centre and d
// the distance to beat: the change itself for DIFFERENT, the room left
// between the change and the minimum effect for SAME. It assumes the full α;
// an adaptive run has spent part of it already, so take the number as a
// lower bound. It is floored at the boots the discrete test needs at all.
// It returns 0 when the spread cannot be estimated (one boot per side).
// A paired row is estimated in pairs (pairsNeeded).
func bootsNeeded(row *Row, alpha, eff float64, m int) (Verdict, int) {
	if row.Paired {
		d, _ := pairChanges(row.A, row.B)
		return pairsNeeded(d, row.DeltaPct, alpha, eff, m)
	}
	a, b := row.A.medians(), row.B.medians()
	df := len(a) + len(b) - 2
	if df < 1 || len(a) < 1 || len(b) < 1 {
		return Unknown, 0
	}
	ss := sumSquares(a) + sumSquares(b)
	sigma := math.Sqrt(ss/float64(df)) / row.A.Center
	return unitsNeeded(sigma, 2, row.DeltaPct, alpha, eff, m, minBoots)
}

// unitsNeeded is the power calculation of bootsNeeded and pairsNeeded:
// factor·(z₁+z₂)²·(σ/gap)²·π/3 units, floored at minUnits(level, twoSided),
// the units the discrete test needs at all.
func unitsNeeded(sigma, factor, deltaPct, alpha, eff float64, m int, minUnits func(level float64, twoSided bool) int) (Verdict, int) {
	d := math.Abs(deltaPct / 100)
	zPower := stats.StdNormal.InvCDF(0.8)
	var v Verdict
	var z, gap float64
	var floor int
	if d > eff {
		v, gap = Different, d
		level := alpha / float64(max(m, 1))
		z, floor = stats.StdNormal.InvCDF(1-level/2), minUnits(level, true)
	} else {
		v, gap = Same, eff-d
		z, floor = stats.StdNormal.InvCDF(1-alpha), minUnits(alpha, false)
	}
	if floor == 0 {
		floor = maxBoots + 1
	}
	if gap <= 0 {
		return v, MaxBootsNeeded + 1
	}
	n := factor * (z + zPower) * (z + zPower) * (sigma / gap) * (sigma / gap) * math.Pi / 3
	if n > MaxBootsNeeded {
		return v, MaxBootsNeeded + 1
	}
	return v, max(floor, int(math.Ceil(n)))
}

func sumSquares(vs []float64) float64 {
	mean := 0.0
	for _, v := range vs {
		mean += v
	}
	mean /= float64(len(vs))
	ss := 0.0
	for _, v := range vs {
		ss += (v - mean) * (v - mean)
	}
	return ss
}

// medians returns the per-boot medians.
func (s Summary) medians() []float64 {
	out := make([]float64, len(s.PerBoot))
	for i, b := range s.PerBoot {
		out[i] = b.Median
	}
	return out
}

// IsControl reports whether bench is one of controls: equal to one, or
// continuing one with "/". A nil controls means the defaults:
// defaultControls and the noop of every user's program (wire.WorkloadNoop).
func IsControl(bench string, controls []string) bool {
	if controls == nil {
		if prog, ok := wire.WorkloadOf(bench); ok && bench == wire.WorkloadNoop(prog) {
			return true
		}
		controls = defaultControls
	}
	for _, c := range controls {
		if bench == c || strings.HasPrefix(bench, c+"/") {
			return true
		}
	}
	return false
}

// betterOf returns +1 if higher values of unit are better, -1 if lower ones
// are, 0 if unknown (see Changed). Costs per operation (sec/op, insn/op,
// B/op) and the verifier's counts (wire.LowerIsBetter) are lower is
// better; rates (…/s) higher.
func betterOf(unit string) int {
	switch {
	case strings.HasSuffix(unit, "/op"), wire.LowerIsBetter(unit):
		return -1
	case strings.HasSuffix(unit, "/s"):
		return 1
	}
	return 0
}

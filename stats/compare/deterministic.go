package compare

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// DeterministicBoots is the fewest boots per side with which the
// deterministic rule decides: two, so that each side shows its own boots
// agree.
const DeterministicBoots = 2

// decideDeterministic decides a row measured by a deterministic instrument
// (a calibrated jitter bound b: boots of one image differ by at most b) and
// reports whether it did; false means the row falls back to the statistical
// rule because a side's own boots disagree by more than the bound (a second
// mode the calibration did not see), which the row's notes say.
//
// With d the relative change of B's centre against A's and e the row's
// minimum effect:
//
//   - DIFFERENT when d exceeds e by more than b and the sides' boots do not
//     overlap: a jitter of b cannot turn a change of at most e into d;
//   - SAME when d + b stays below e: a jitter of b cannot hide a change of e;
//   - UNKNOWN otherwise, at once and for good (Final): d lies within b of e,
//     and more boots of a deterministic instrument only repeat the values.
//
// The rule makes no probabilistic claim and spends no α: its error is that
// of the calibration (a bound exceeded by a boot it did not see), which the
// fallback guards against. A kernel compared with itself differs by its
// jitter, at most b < e + b, so it is never DIFFERENT.
func decideDeterministic(row *Row, bound float64) bool {
	row.Rule, row.Bound = RuleDeterministic, bound
	if row.A.Boots < DeterministicBoots || row.B.Boots < DeterministicBoots {
		row.addNote(fmt.Sprintf("the deterministic rule needs %d boots per side", DeterministicBoots))
		row.Verdict = Unknown
		return true
	}
	for _, side := range []struct {
		name string
		s    Summary
	}{{"A", row.A}, {"B", row.B}} {
		if spread := bootRange(side.s); spread > bound {
			row.Rule, row.Bound = RuleStatistical, 0
			row.addNote(fmt.Sprintf("boots of %s disagree by %.3g%%, more than the jitter bound ±%.3g%%: decided by the statistical rule",
				side.name, 100*spread, 100*bound))
			return false
		}
	}
	d, e := math.Abs(row.DeltaPct/100), row.MinEffect
	row.PAdj, row.PSame, row.PEffect = 1, 1, 1
	switch row.Verdict = deterministicVerdict(d, e, bound, overlap(row.A, row.B)); row.Verdict {
	case Different:
		row.PAdj = 0
	case Same:
		row.PSame = 0
	default:
		row.Final = true
		row.addNote(fmt.Sprintf("the change %.3g%% lies within the jitter bound ±%.3g%% of the minimum effect %.3g%%: more boots cannot decide",
			100*d, 100*bound, 100*e))
	}
	return true
}

// decideZeros is the deterministic rule for a row whose count is 0 in
// every sample of both sides (a verifier statistic a program never
// reaches: max_states_per_insn of a program without a branch, or
// mark_read where nothing was read): a relative change is undefined, but
// there is none, so with DeterministicBoots boots a side it is SAME. It
// reports whether it decided; a row with boots missing keeps its note.
// A 0 on one side only (0 → n) is not decided: no jitter bound covers a
// change from nothing, and the row says so.
func decideZeros(row *Row, bound float64) bool {
	if row.A.Boots < DeterministicBoots || row.B.Boots < DeterministicBoots {
		row.addNote(fmt.Sprintf("0 on both sides; the deterministic rule needs %d boots per side", DeterministicBoots))
		return false
	}
	row.Rule, row.Bound, row.Verdict = RuleDeterministic, bound, Same
	row.PAdj, row.PSame, row.PEffect = 1, 0, 1
	row.addNote("0 in every sample of both sides: no change")
	return true
}

// allZero reports whether every sample of a side is 0 (a side with boots).
func allZero(s Summary) bool {
	return s.Boots > 0 && !slices.ContainsFunc(s.PerBoot, func(b Boot) bool { return b.Min != 0 || b.Max != 0 || b.Median != 0 })
}

// deterministicVerdict is the deterministic rule's verdict on a relative
// change d (absolute) against the minimum effect e, with a jitter bound b,
// where overlapping says whether the sides' values overlap.
func deterministicVerdict(d, e, b float64, overlapping bool) Verdict {
	switch {
	case d > e+b && !overlapping:
		return Different
	case d+b < e:
		return Same
	}
	return Unknown
}

// decideExact is the deterministic rule for one value per side, each
// exact up to a relative jitter bound (a count of a deterministic
// instrument, such as the memory pass's misses per operation under
// icount): DIFFERENT when the relative change of b against a exceeds
// minEffect by more than bound, SAME when it stays below minEffect by more
// than bound, else UNKNOWN. It returns the change in percent (0 when a is
// 0 and b is not: then DIFFERENT if b exceeds the bound's share of
// nothing, i.e. whenever b > 0).
func decideExact(a, b, minEffect, bound float64) (Verdict, float64) {
	if a == b {
		return deterministicVerdict(0, minEffect, bound, true), 0
	}
	if a == 0 {
		return Different, 0
	}
	d := (b - a) / math.Abs(a)
	return deterministicVerdict(math.Abs(d), minEffect, bound, false), 100 * d
}

// bootRange is a side's spread of per-boot medians relative to its centre.
func bootRange(s Summary) float64 {
	ms := s.medians()
	if len(ms) == 0 || s.Center == 0 {
		return 0
	}
	return (slices.Max(ms) - slices.Min(ms)) / math.Abs(s.Center)
}

// overlap reports whether the sides' per-boot medians overlap.
func overlap(a, b Summary) bool {
	am, bm := a.medians(), b.medians()
	return slices.Max(am) >= slices.Min(bm) && slices.Max(bm) >= slices.Min(am)
}

// FormatBounds writes per-benchmark fractions (jitter bounds, minimum
// effects) as one configuration value: "NAME:FRACTION NAME:FRACTION …", in
// name order, so a results file records what decided its rows.
func FormatBounds(m map[string]float64) string {
	var parts []string
	for _, name := range sortedNames(m) {
		parts = append(parts, name+":"+strconv.FormatFloat(m[name], 'g', 6, 64))
	}
	return strings.Join(parts, " ")
}

// ParseBounds reads what FormatBounds wrote.
func ParseBounds(s string) (map[string]float64, error) {
	m := map[string]float64{}
	for _, f := range strings.Fields(s) {
		i := strings.LastIndexByte(f, ':')
		if i <= 0 {
			return nil, fmt.Errorf("bounds %q: %q is not NAME:FRACTION", s, f)
		}
		v, err := strconv.ParseFloat(f[i+1:], 64)
		if err != nil || !(v > 0 && v < 1) {
			return nil, fmt.Errorf("bounds %q: %q is not a fraction between 0 and 1", s, f[i+1:])
		}
		m[f[:i]] = v
	}
	return m, nil
}

func sortedNames(m map[string]float64) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ExactRow is the row of one exact count per side, a and b, in unit (such
// as the memory pass's misses per operation, counted once per side by a
// deterministic instrument, up to a relative jitter bound): decided by
// decideExact at minEffect and bound, and SAME whenever a and b differ by
// less than floor (absolute: a rare event moves by large fractions of
// itself between boots of one image). source names what counted the
// values, as the boot ID of each side's one value. The row is Final and
// Exact (see Row.Exact): it has no p-value, and its claims' are 0.
func ExactRow(bench, unit, source string, a, b, minEffect, bound, floor float64) Row {
	v, delta := decideExact(a, b, minEffect, bound)
	if math.Abs(b-a) < floor {
		v = Same
	}
	side := func(x float64) Summary {
		return Summary{Center: x, Lo: x, Hi: x, Boots: 1, Samples: 1,
			PerBoot: []Boot{{ID: source, Median: x, Samples: 1, Min: x, Max: x}}}
	}
	row := Row{Benchmark: bench, Unit: unit, A: side(a), B: side(b), DeltaPct: delta, Verdict: v,
		P: 1, PEffect: 1, PAdj: 1, PSame: 1, Better: betterOf(unit), MinEffect: minEffect,
		Rule: RuleDeterministic, Bound: bound, Final: true, Exact: true}
	switch v {
	case Different:
		row.PAdj, row.PEffect = 0, 0
	case Same:
		row.PSame = 0
	}
	return row
}

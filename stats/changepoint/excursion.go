package changepoint

import (
	"fmt"
	"math"
	"slices"

	"github.com/lpmbisect/lpmbisect/stats/sample"
)

// An Excursion is a night whose value lay far from the levels on both
// sides of it, in the same direction: one of a run of fewer than
// Options.MinSegment such nights (adjacent excursions are one run), with
// the series back at a level after it. Under wall time it is a bad night
// (a host hiccup, a half-failed boot, disturbed reference boots); under
// instruction counts, which do not wander, a kernel that was different for
// that night or two. The pass leaves excursions out of its segment
// statistics, so one cannot hide a step, and never puts a change point on
// one (see the package documentation).
type Excursion struct {
	// Index is the night's position in the values.
	Index int
	// Level is the level it departed from: the median of the nights next
	// to its run on the side it lay nearer to.
	Level float64
	// ChangePct is the departure in percent, 100·(value−Level)/|Level|.
	ChangePct float64
}

// excursionLevelNights is how many nights on each side of a run set the
// level there, by their median (fewer at the ends of the series); the
// nights before it without the excursions found before them.
const excursionLevelNights = 5

// Excursions returns the excursions of a series of nightly values, oldest
// first, in order: the nights that Detect and Update with the same values
// and options leave out of their statistics. The newest nights are never
// excursions: until a night follows them that is back at a level, they may
// be the first nights of a step (the end-of-series rule). It is
// deterministic, like Detect.
func Excursions(values []float64, o Options) ([]Excursion, error) {
	o = o.WithDefaults()
	if err := check(values, o); err != nil {
		return nil, err
	}
	return findExcursions(values, o), nil
}

// MinNoiseNights is the fewest nights Noise measures: an excursion
// disturbs two night-to-night differences, and the median needs more than
// twice as many others to outvote them.
const MinNoiseNights = 6

// Noise is a robust estimate of the relative noise of one night's value:
// the median of the absolute relative night-to-night differences
// |values[i]/values[i−1] − 1|, scaled to a standard deviation
// (1.4826/√2). A step disturbs one difference and an excursion two, so
// neither moves it much. It is 0 for fewer than MinNoiseNights values.
func Noise(values []float64) float64 {
	if len(values) < MinNoiseNights {
		return 0
	}
	diffs := make([]float64, 0, len(values)-1)
	for i := 1; i < len(values); i++ {
		diffs = append(diffs, math.Abs(values[i]/values[i-1]-1))
	}
	slices.Sort(diffs)
	return 1.4826 * diffs[len(diffs)/2] / math.Sqrt2
}

// departure is the excursion rule's test of a night against a level.
type departure struct {
	far float64 // the relative distance beyond which a night departs
}

// newDeparture is the rule for a series: a night departs from a level when
// it lies more than Options.ExcursionSigmas noise standard deviations and
// at least Options.MinMagnitude from it, the noise the larger of
// Options.NoiseFloor and Noise(values). Each night of a run must: pooling
// the two nights of a pair (4/√2 σ each) flagged ordinary nights beside
// steps, and moved their change points to and fro (package
// documentation). With ExcursionSigmas +Inf nothing departs.
func newDeparture(values []float64, o Options) departure {
	if math.IsInf(o.ExcursionSigmas, 1) {
		return departure{far: math.Inf(1)}
	}
	return departure{far: math.Max(o.ExcursionSigmas*math.Max(o.NoiseFloor, Noise(values)), o.MinMagnitude)}
}

// from says in which direction x departs from level (+1, −1), or 0 when
// it is not far from it.
func (rule departure) from(x, level float64) int {
	d := x - level
	if !(math.Abs(d) > rule.far*math.Abs(level)) {
		return 0
	}
	if d > 0 {
		return 1
	}
	return -1
}

// findExcursions finds the excursions of values. It scans the series
// twice: the first scan shows the excursions that the second leaves out of
// the levels after a run (a later bad night would pull them), and the
// newest nights that depart from the level before them (pendingNights),
// which are no level yet either: the second scan leaves them out, and the
// runs just before them wait for the next nights.
func findExcursions(values []float64, o Options) []Excursion {
	rule := newDeparture(values, o)
	first := make([]bool, len(values))
	for _, e := range scanExcursions(values, len(values), rule, o.MinSegment, nil) {
		first[e.Index] = true
	}
	level := func(end int) (float64, bool) {
		var before []float64
		for j := end - 1; j >= 0 && len(before) < excursionLevelNights; j-- {
			if !first[j] {
				before = append(before, values[j])
			}
		}
		return sample.MedianInPlace(before), len(before) >= o.MinSegment
	}
	tail := pendingNights(values, level, rule, o.MinSegment)
	return scanExcursions(values, len(values)-tail, rule, o.MinSegment, first)
}

// scanExcursions scans values[:n] from the oldest night. At night i it
// tries runs [i, i+r) for r below minSegment. The level before the run is
// the median of the excursionLevelNights nights before it that are not
// excursions, the level after it the median of as many nights after it
// that skip does not mark (nil: none). The run is an excursion when every
// night of it departs, in one direction, from both levels, and neither the
// night before it from the level before nor the night after it from the
// level after departs in that direction (else the run is longer, and may
// be a step). At the start of the series there is no level before, and
// the level after alone decides, once it has minSegment nights: with fewer,
// the nights after the run may be the first of a step, as well.
func scanExcursions(values []float64, n int, rule departure, minSegment int, skip []bool) []Excursion {
	flagged := make([]bool, n)
	var out []Excursion
	var before, after []float64
	for i := 0; i < n; i++ {
		before = before[:0]
		for j := i - 1; j >= 0 && len(before) < excursionLevelNights; j-- {
			if !flagged[j] {
				before = append(before, values[j])
			}
		}
		levelBefore := sample.MedianInPlace(before)
		for r := 1; r < minSegment && i+r < n; r++ {
			after = after[:0]
			for j := i + r; j < n && len(after) < excursionLevelNights; j++ {
				if skip == nil || !skip[j] {
					after = append(after, values[j])
				}
			}
			if len(after) == 0 || math.IsNaN(levelBefore) && len(after) < minSegment {
				// At the start of the series the level after alone
				// decides, and only a level: fewer nights after the run
				// may be the first of a step as well.
				break
			}
			next := after[0] // the night after the run
			levelAfter := sample.MedianInPlace(after)
			d := rule.from(values[i], levelAfter)
			switch {
			case d == 0 || rule.from(next, levelAfter) == d:
				continue // not far from the level after, or the run goes on
			case i > 0 && !flagged[i-1] && rule.from(values[i-1], levelBefore) == d:
				continue // the run began earlier
			}
			run := true
			for j := i; j < i+r && run; j++ {
				run = rule.from(values[j], levelAfter) == d && (math.IsNaN(levelBefore) || rule.from(values[j], levelBefore) == d)
			}
			if !run {
				continue
			}
			for j := i; j < i+r; j++ {
				level := nearer(values[j], levelBefore, levelAfter)
				flagged[j] = true
				out = append(out, Excursion{Index: j, Level: level, ChangePct: relativeChangePct(level, values[j])})
			}
			i += r - 1
			break
		}
	}
	return out
}

// pendingNights is the number of newest nights of values, fewer than
// minSegment, that all depart in one direction from the level before them,
// level(n−k) for the newest k: the first nights of a step, or an excursion
// that no night after it has shown to be one yet. The longest such run
// counts. level says false where there is no level of at least minSegment
// nights before.
func pendingNights(values []float64, level func(end int) (float64, bool), rule departure, minSegment int) int {
	n := len(values)
	for k := min(minSegment-1, n-1); k >= 1; k-- {
		before, ok := level(n - k)
		if !ok {
			continue
		}
		d := rule.from(values[n-k], before)
		for _, x := range values[n-k:] {
			if d == 0 || rule.from(x, before) != d {
				d = 0
			}
		}
		if d != 0 {
			return k
		}
	}
	return 0
}

// nearer is whichever of the two levels x lies nearer to (after when
// before is NaN).
func nearer(x, before, after float64) float64 {
	if math.IsNaN(before) || math.Abs(x-after) < math.Abs(x-before) {
		return after
	}
	return before
}

// check validates the options and the values.
func check(values []float64, o Options) error {
	if err := o.validate(); err != nil {
		return err
	}
	for i, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%w at index %d: %v (leave nights without a measurement out of the series)", ErrValue, i, v)
		}
	}
	return nil
}

package changepoint

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/lpmbisect/lpmbisect/stats/sample"
)

// Defaults, chosen from the simulations described in the package
// documentation.
const (
	DefaultP             = 1e-4
	defaultMinMagnitude  = 0.01
	defaultWindow        = 30
	DefaultMinSegment    = 3
	defaultEndP          = 1e-5
	DefaultMatchDistance = 3
	// DefaultExcursionSigmas is the default of Options.ExcursionSigmas.
	DefaultExcursionSigmas = 4
)

// Options tune Detect and Update. The zero value of every field except NoiseFloor
// means its default.
type Options struct {
	// P is the largest two-sided p-value of the t-test between the
	// segments before and after a change point that accepts it (default
	// DefaultP, 1e-4: Otava's 0.001 raises 0.4 false change points per
	// series-year in a nightly run at TCG noise; see the package
	// documentation). The split step accepts candidates at 10·P ("weak"
	// change points, as Otava); the merge step keeps only those at P.
	P float64
	// MinMagnitude is the smallest relative change of the segment means,
	// |After−Before|/|Before|, that a change point may have (default
	// defaultMinMagnitude, 1 %). Tie it to the minimum effect of the
	// verdicts, so that the history does not flag what a comparison would
	// call SAME. Zero means the default; a caller that wants the p-values
	// alone to decide gives a tiny positive value.
	MinMagnitude float64
	// Window is the number of nights the split step analyses at once
	// (default defaultWindow). Windows overlap by half.
	Window int
	// NoiseFloor is the measured noise of one night's value, as a relative
	// standard deviation (0.0003 for instruction counts). Each segment's
	// variance in the t-test is at least (NoiseFloor·mean)², after it
	// borrowed up to 20 nights' worth of variance from the segment across
	// the split (see the package documentation). Zero means no floor: a
	// constant series then makes any difference significant, and only
	// MinMagnitude stands between it and a change point.
	NoiseFloor float64
	// MinSegment is the fewest nights a level must last to count as a
	// segment (default DefaultMinSegment): a shorter excursion is an
	// outlier, not a step. Only the newest segment may be shorter, down to
	// one night, and then it must pass the stricter EndP.
	MinSegment int
	// EndP is the p-value a change point needs while fewer than MinSegment
	// nights follow it (default defaultEndP). The end check tries every
	// such split every night, so it needs a stricter level than P to keep
	// the false alarms of a nightly run where P keeps them for one pass.
	EndP float64
	// ExcursionSigmas is how far a night must lie from the levels on both
	// sides of it to be an excursion (see Excursions), in noise standard
	// deviations (the larger of NoiseFloor and the series' own Noise); it
	// must lie at least MinMagnitude from them too (default
	// DefaultExcursionSigmas, 4). +Inf turns excursions off: the pass then
	// tests the raw values, and one bad night can hide a step for weeks.
	ExcursionSigmas float64
}

// WithDefaults returns o with every zero field replaced by its default.
func (o Options) WithDefaults() Options {
	if o.P == 0 {
		o.P = DefaultP
	}
	if o.MinMagnitude == 0 {
		o.MinMagnitude = defaultMinMagnitude
	}
	if o.Window == 0 {
		o.Window = defaultWindow
	}
	if o.MinSegment == 0 {
		o.MinSegment = DefaultMinSegment
	}
	if o.EndP == 0 {
		o.EndP = defaultEndP
	}
	if o.ExcursionSigmas == 0 {
		o.ExcursionSigmas = DefaultExcursionSigmas
	}
	return o
}

// ErrOptions is wrapped by the errors of Detect for options it cannot use.
var ErrOptions = errors.New("invalid change-point options")

// ErrValue is wrapped by the errors of Detect for a value that is NaN or
// infinite.
var ErrValue = errors.New("non-finite value")

func (o Options) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrOptions, fmt.Sprintf(format, args...))
	}
	switch {
	case !(o.P > 0 && o.P < 1):
		return bad("p-value threshold %g is not in (0, 1)", o.P)
	case !(o.EndP > 0 && o.EndP < 1):
		return bad("end-of-series p-value threshold %g is not in (0, 1)", o.EndP)
	case !(o.MinMagnitude >= 0) || math.IsInf(o.MinMagnitude, 0):
		return bad("minimum magnitude %g is negative or not finite", o.MinMagnitude)
	case !(o.NoiseFloor >= 0) || math.IsInf(o.NoiseFloor, 0):
		return bad("noise floor %g is negative or not finite", o.NoiseFloor)
	case !(o.ExcursionSigmas > 0):
		return bad("excursion threshold of %g noise standard deviations is not positive", o.ExcursionSigmas)
	case o.MinSegment < 2:
		return bad("minimum segment %d is below 2 nights (one night is an outlier, not a level)", o.MinSegment)
	case o.Window < 2*o.MinSegment:
		return bad("window of %d nights cannot hold two segments of %d", o.Window, o.MinSegment)
	}
	return nil
}

// A ChangePoint is a night at which the series moved to a new level.
type ChangePoint struct {
	// Index is the position in the values of the first night of the new
	// level: the change happened between night LastBefore and night Index.
	Index int
	// LastBefore is the last night of the old level: Index−1, or earlier
	// when the nights between were excursions, which belong to neither
	// level (a bad night may hide which kernel moved).
	LastBefore int
	// Before and After are the means of the segments on either side:
	// values[SegmentStart:Index] and values[Index:SegmentEnd], bounded by
	// the neighbouring change points or the ends of the series, without
	// their excursions (see Excursions).
	Before, After float64
	// SegmentStart and SegmentEnd bound the two segments.
	SegmentStart, SegmentEnd int
	// ChangePct is the relative change of the means in percent,
	// 100·(After−Before)/|Before| (±Inf if Before is 0 and After is not).
	ChangePct float64
	// T and P are the statistic and two-sided p-value of the floored Welch
	// t-test of the two segments.
	T, P float64
	// Provisional is set while fewer than Options.MinSegment nights follow
	// the change point: it was accepted by the end-of-series check at
	// Options.EndP and may still be withdrawn if the next nights return to
	// the old level.
	Provisional bool
}

// Detect finds the change points of a series of nightly values, oldest
// first, in the order of their indices. It is deterministic: the same
// values and options give the same result. Excursions (see Excursions)
// are left out of the statistics, and no change point is on one.
//
// Values are expected to be positive (ratios to a reference, times); the
// magnitude is relative to the mean before the change.
func Detect(values []float64, o Options) ([]ChangePoint, error) {
	return Update(values, nil, o)
}

// Update is Detect for a nightly run: prev are the change points the
// previous pass reported over the same series, before the newest nights
// were appended. Their indices join the candidates, and each stays while
// its p-value is at most KeepFactor times its level and its magnitude at
// least MinMagnitude/keepMagnitudeFactor (hysteresis). A step is often
// first seen on a night that happened to land far from the old level; as
// the next nights regress towards the true step, a pass without memory
// would withdraw it and report it again days later, and the caller would
// mail it twice. A candidate that replaces one of prev a few nights away
// (closer than MinSegment, or moved by the refinement) inherits this. Update
// is deterministic in (values, prev, o); Detect is Update without prev.
//
// The pass runs on the series without its excursions; a change point of
// prev on a night that has since become an excursion carries on from the
// next night that is not one.
func Update(values []float64, prev []ChangePoint, o Options) ([]ChangePoint, error) {
	o = o.WithDefaults()
	if err := check(values, o); err != nil {
		return nil, err
	}
	// at[j] is the position in values of the j-th night that is not an
	// excursion.
	exc := findExcursions(values, o)
	clean, at := make([]float64, 0, len(values)-len(exc)), make([]int, 0, len(values)-len(exc))
	for i, k := 0, 0; i < len(values); i++ {
		if k < len(exc) && exc[k].Index == i {
			k++
			continue
		}
		clean, at = append(clean, values[i]), append(at, i)
	}
	kept := map[int]bool{}
	for _, c := range prev {
		if j, _ := slices.BinarySearch(at, c.Index); j > 0 && j < len(clean) {
			kept[j] = true
		}
	}
	cps := detect(clean, kept, o)
	// The newest nights that departed from the level of the newest
	// segment before them, unless the end-of-series check made them a new
	// level, belong to no level yet: the pass runs again without them,
	// lest one bad newest night hide the change points before it.
	from := 0
	if len(cps) > 0 {
		from = cps[len(cps)-1].Index
	}
	level := func(end int) (float64, bool) {
		if end-from < o.MinSegment {
			return math.NaN(), false
		}
		return sample.Median(clean[max(from, end-excursionLevelNights):end]), true
	}
	if k := pendingNights(clean, level, newDeparture(values, o), o.MinSegment); k > 0 {
		cps = detect(clean[:len(clean)-k], kept, o)
	}
	// Back to positions in values: the segments reach the ends of the
	// series, excursions there included.
	for i, c := range cps {
		c.Index, c.LastBefore = at[c.Index], at[c.Index-1]
		if c.SegmentStart > 0 {
			c.SegmentStart = at[c.SegmentStart]
		}
		if c.SegmentEnd < len(at) {
			c.SegmentEnd = at[c.SegmentEnd]
		} else {
			c.SegmentEnd = len(values)
		}
		cps[i] = c
	}
	return cps, nil
}

// detect is the pass over values without excursions; kept holds the
// indices of the previous pass's change points.
func detect(values []float64, kept map[int]bool, o Options) []ChangePoint {
	d := &detector{values: values, o: o, sums: newPrefixSums(values), kept: map[int]bool{}}
	for idx := range kept {
		if idx < len(values) {
			d.kept[idx] = true
		}
	}
	return d.merge(d.refine(d.merge(d.split())))
}

type detector struct {
	values []float64
	o      Options
	sums   *prefixSums
	kept   map[int]bool // indices of the previous pass's change points
}

func (d *detector) test(lo, idx, hi int) (t, p float64) {
	return flooredWelch(d.sums.segment(lo, idx), d.sums.segment(idx, hi), d.o.NoiseFloor)
}

// weakP is the acceptance level of the split step (Otava's first pass).
func (d *detector) weakP() float64 { return math.Min(10*d.o.P, 0.5) }

// split returns the sorted, distinct candidate change points: those of
// E-divisive in every window, plus the best split of the newest nights.
func (d *detector) split() []int {
	n, w, m := len(d.values), d.o.Window, d.o.MinSegment
	var found []int
	step := w / 2
	lastStart := -1
	for start := 0; start+2*m <= n; start += step {
		found = d.splitWindow(found, start, min(start+w, n))
		lastStart = start
	}
	// A window that ends with the series, so that the newest nights are
	// always analysed with a full window before them, whatever the grid.
	if tail := max(0, n-w); tail != lastStart && n >= 2*m {
		found = d.splitWindow(found, tail, n)
	}
	if idx, ok := d.endCandidate(); ok {
		found = append(found, idx)
	}
	for idx := range d.kept {
		found = append(found, idx)
	}
	slices.Sort(found)
	return slices.Compact(found)
}

// splitWindow runs E-divisive on values[ws:we]: the run with the largest
// Q̂ is split at its best τ while the t-test of the run's two sides accepts
// the split at weakP. It appends the accepted splits to found.
func (d *detector) splitWindow(found []int, ws, we int) []int {
	m := d.o.MinSegment
	e := newEnergy(d.values[ws:we])
	type run struct {
		a, b, tau int // relative to ws
		q         float64
		ok        bool
	}
	mk := func(a, b int) run {
		tau, q, ok := e.candidate(a, b, m)
		return run{a: a, b: b, tau: tau, q: q, ok: ok}
	}
	runs := []run{mk(0, we-ws)}
	for {
		best := -1
		for i, r := range runs {
			if r.ok && (best < 0 || r.q > runs[best].q) {
				best = i
			}
		}
		if best < 0 {
			return found
		}
		r := runs[best]
		if _, p := d.test(ws+r.a, ws+r.tau, ws+r.b); p > d.weakP() {
			return found
		}
		found = append(found, ws+r.tau)
		runs = slices.Replace(runs, best, best+1, mk(r.a, r.tau), mk(r.tau, r.b))
	}
}

// endCandidate is the end-of-series check: the split among the newest
// nights with the smallest p-value against the window before it. Merge
// decides whether it stands, at EndP while it is provisional.
func (d *detector) endCandidate() (int, bool) {
	n, m := len(d.values), d.o.MinSegment
	lo := max(0, n-d.o.Window)
	bestIdx, bestP := -1, math.Inf(1)
	for k := m - 1; k >= 1; k-- {
		idx := n - k
		if idx-lo < m {
			continue
		}
		if _, p := d.test(lo, idx, n); p < bestP {
			bestIdx, bestP = idx, p
		}
	}
	return bestIdx, bestIdx >= 0
}

// merge is Otava's merge step with segment lengths: among the candidates it
// repeatedly removes the one that fails worst, recomputing its neighbours'
// statistics over the segments that removal joins, until every segment is
// long enough and every change point passes the t-test and the magnitude.
func (d *detector) merge(idx []int) []ChangePoint {
	n := len(d.values)
	cps := make([]candidate, len(idx))
	for i := range idx {
		cps[i] = candidate{ChangePoint: ChangePoint{Index: idx[i]}, kept: d.kept[idx[i]]}
	}
	recompute := func(i int) {
		if i < 0 || i >= len(cps) {
			return
		}
		lo, hi := 0, n
		if i > 0 {
			lo = cps[i-1].Index
		}
		if i+1 < len(cps) {
			hi = cps[i+1].Index
		}
		cps[i].ChangePoint = d.changePoint(lo, cps[i].Index, hi)
	}
	for i := range cps {
		recompute(i)
	}
	for len(cps) > 0 {
		worst, heir := d.worst(cps)
		if worst < 0 {
			break
		}
		if heir >= 0 && cps[worst].kept {
			// The same change, found a few nights away: the survivor
			// carries on the earlier report.
			cps[heir].kept = true
		}
		cps = slices.Delete(cps, worst, worst+1)
		recompute(worst - 1)
		recompute(worst)
	}
	out := make([]ChangePoint, len(cps))
	for i, c := range cps {
		out[i] = c.ChangePoint
	}
	return out
}

// A candidate is a change point during merge; kept marks one the previous
// pass reported, which stays at the laxer levels of KeepFactor.
type candidate struct {
	ChangePoint
	kept bool
}

// KeepFactor is the hysteresis of Update: a change point the previous pass
// reported stays while its p-value is at most KeepFactor times its level (P,
// or EndP while provisional) and its magnitude at least MinMagnitude /
// keepMagnitudeFactor.
const (
	KeepFactor          = 10
	keepMagnitudeFactor = 1.25
)

// worst returns the candidate merge removes next, or −1 when all stand:
// first one that bounds a segment shorter than MinSegment (the weaker of
// the two; heir is then the other), then the one whose p-value exceeds its
// level the most, then the one with the smallest magnitude below its
// minimum.
func (d *detector) worst(cps []candidate) (worst, heir int) {
	m := d.o.MinSegment
	if cps[0].Index < m {
		return 0, -1
	}
	for i := 0; i+1 < len(cps); i++ {
		if cps[i+1].Index-cps[i].Index < m {
			// Two candidates for one change: keep the one that splits the
			// joined segment better on its own. Their statistics against
			// each other (across a segment of one or two nights) say
			// nothing about that.
			lo, hi := 0, len(d.values)
			if i > 0 {
				lo = cps[i-1].Index
			}
			if i+2 < len(cps) {
				hi = cps[i+2].Index
			}
			_, pa := d.test(lo, cps[i].Index, hi)
			_, pb := d.test(lo, cps[i+1].Index, hi)
			if pb > pa {
				return i + 1, i
			}
			return i, i + 1
		}
	}
	worst, worstRatio := -1, 1.0
	for i, c := range cps {
		level := d.o.P
		if c.Provisional {
			level = d.o.EndP
		}
		if c.kept {
			level *= KeepFactor
		}
		if r := c.P / level; r > worstRatio {
			worst, worstRatio = i, r
		}
	}
	if worst >= 0 {
		return worst, -1
	}
	worstRatio = 1
	for i, c := range cps {
		floor := d.o.MinMagnitude
		if c.kept {
			floor /= keepMagnitudeFactor
		}
		if r := math.Abs(c.ChangePct) / 100 / floor; r < worstRatio {
			worst, worstRatio = i, r
		}
	}
	return worst, -1
}

// refineStep is the most refine moves a change point in one pass: no more
// than DefaultMatchDistance, so that Match pairs it with itself from one
// night to the next however far it travels over many.
const refineStep = DefaultMatchDistance

// refine moves each change point towards the split of the two segments
// around it that separates their means best by least squares,
// n₁n₂/(n₁+n₂)·(m₁−m₂)², among the splits within half a window of it that
// keep its segments at least MinSegment long (the newest segment may be
// shorter when it already was). The window argmax of E-divisive placed it
// from one window's data, and the first nights after a step may place it a
// few nights early or late; this places it from everything between its
// neighbours, which grows every night, so the index settles. It moves at
// most refineStep nights a pass, so that Match pairs it with itself; a best
// split further away is reached over several passes. Searching only
// refineStep nights either side left a change point on a local best: the
// best split near a step is flat over the nights whose noise put them
// between the two levels, and an early report on such a night stayed there,
// more than refineStep nights from the step (package documentation).
// Hysteresis would otherwise hold an early misplacement too. It returns
// the new indices; kept flags follow their change points.
func (d *detector) refine(cps []ChangePoint) []int {
	n, m, r, reach := len(d.values), d.o.MinSegment, refineStep, d.o.Window/2
	idx := make([]int, len(cps))
	for i, c := range cps {
		idx[i] = c.Index
	}
	for i := range idx {
		lo, hi := 0, n
		if i > 0 {
			lo = idx[i-1]
		}
		if i+1 < len(idx) {
			hi = idx[i+1]
		}
		from, to := max(lo+m, idx[i]-reach), min(hi-m, idx[i]+reach)
		if hi-idx[i] < m { // provisional: keep its short newest segment
			to = idx[i]
		}
		best, bestScore := idx[i], d.separation(lo, idx[i], hi)
		for j := from; j <= to; j++ {
			if s := d.separation(lo, j, hi); s > bestScore {
				best, bestScore = j, s
			}
		}
		best = min(max(best, idx[i]-r), idx[i]+r)
		if best != idx[i] && d.kept[idx[i]] {
			d.kept[best] = true
		}
		idx[i] = best
	}
	return idx
}

func (d *detector) separation(lo, idx, hi int) float64 {
	a, b := d.sums.segment(lo, idx), d.sums.segment(idx, hi)
	diff := a.mean - b.mean
	return float64(a.n*b.n) / float64(a.n+b.n) * diff * diff
}

func (d *detector) changePoint(lo, idx, hi int) ChangePoint {
	a, b := d.sums.segment(lo, idx), d.sums.segment(idx, hi)
	t, p := flooredWelch(a, b, d.o.NoiseFloor)
	return ChangePoint{
		Index:        idx,
		Before:       a.mean,
		After:        b.mean,
		SegmentStart: lo,
		SegmentEnd:   hi,
		ChangePct:    relativeChangePct(a.mean, b.mean),
		T:            t,
		P:            p,
		Provisional:  hi == len(d.values) && hi-idx < d.o.MinSegment,
	}
}

func relativeChangePct(before, after float64) float64 {
	if before == 0 {
		if after == before {
			return 0
		}
		return math.Copysign(math.Inf(1), after)
	}
	return 100 * (after - before) / math.Abs(before)
}

// Package sim simulates nightly series and nightly runs of the change-point
// pass, to calibrate its thresholds: false change points on series without
// a change, and precision, recall and detection delay on series with steps
// at known nights. The tests of package changepoint and the cpsim command
// use it; it is deterministic for a given seed.
package sim

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	"github.com/lpmbisect/lpmbisect/stats/changepoint"
)

// A Step multiplies the level of a series by Factor from night Night on.
type Step struct {
	Night  int
	Factor float64
}

// Series returns nights values around 1 with relative Gaussian noise sd,
// with the steps applied: night i is level(i)·(1+N(0, sd²)).
func Series(rng *rand.Rand, nights int, sd float64, steps []Step) []float64 {
	v := make([]float64, nights)
	level := 1.0
	k := 0
	for i := range v {
		for k < len(steps) && steps[k].Night == i {
			level *= steps[k].Factor
			k++
		}
		v[i] = level * (1 + sd*rng.NormFloat64())
	}
	return v
}

// contaminate turns a share rate of the nights of v into bad nights, in
// place: episodes of one night or of two (a pair), half of each, whose
// nights are each off by 10–50 % in the episode's direction (×0.5–0.9 or
// ×1.1–1.5), with at least one good night between episodes. It draws one
// number per night from rng whatever it decides, so a series and its
// contamination come from separate streams, and it returns which nights
// are bad.
func contaminate(rng *rand.Rand, v []float64, rate float64) []bool {
	bad := make([]bool, len(v))
	if rate <= 0 {
		return bad
	}
	start := rate / 1.5 // an episode is 1.5 nights long on average
	for i := 0; i < len(v); i++ {
		if rng.Float64() >= start {
			continue
		}
		length, up := 1+rng.IntN(2), rng.IntN(2) == 0
		for j := i; j < min(i+length, len(v)); j++ {
			u := 0.1 + 0.4*rng.Float64()
			if up {
				v[j] *= 1 + u
			} else {
				v[j] *= 1 - u
			}
			bad[j] = true
		}
		i += length // and the loop's step: a good night between episodes
	}
	return bad
}

// outlierRNG is the stream of series i's bad nights: separate from the
// series' own, so that a contaminated series is its clean twin with bad
// nights, and the clean rows stay what they were.
func outlierRNG(seed uint64, i int) *rand.Rand {
	return rand.New(rand.NewPCG(seed^0x6f75746c69657273, uint64(i))) // "outliers"
}

// A Reported change point is one a nightly run announced: the first night
// it appeared, where, and what later nights made of it.
type reported struct {
	FirstNight int // index of the newest night of the pass that first reported it
	FirstIndex int // its index then
	Index      int // its index in the last pass that still had it
	Up         bool
	// Withdrawn is set when a later pass no longer had it; Night is the
	// newest night of that pass.
	Withdrawn      bool
	WithdrawnNight int
	// Provisional is whether it was provisional when first reported.
	Provisional bool
	// Confirmed is set when some pass held it confirmed (not provisional),
	// first on ConfirmedNight.
	Confirmed      bool
	ConfirmedNight int
}

// replay is the outcome of running the pass every night over a growing
// series.
type replay struct {
	Reported []reported
	// Last is what the nightly run held after the newest night; Fresh is
	// Detect over the whole series, a retrospective analysis without the
	// run's memory.
	Last, Fresh []changepoint.ChangePoint
}

// runReplay runs the pass on values[:n] for every n from first to
// len(values), as a nightly run does: changepoint.Update with the previous
// night's change points, de-duplicated against them with changepoint.Match.
func runReplay(values []float64, o changepoint.Options, first, maxDistance int) (replay, error) {
	var r replay
	var live []changepoint.ChangePoint
	var ids []int // ids[i] is the Reported entry of live[i]
	for n := max(first, 1); n <= len(values); n++ {
		cps, err := changepoint.Update(values[:n], live, o)
		if err != nil {
			return r, err
		}
		m := changepoint.Match(live, cps, maxDistance)
		next := make([]int, len(cps))
		for _, p := range m.Pairs {
			next[p.Next] = ids[p.Prev]
			r.Reported[ids[p.Prev]].Index = cps[p.Next].Index
		}
		for _, i := range m.Withdrawn {
			e := &r.Reported[ids[i]]
			e.Withdrawn, e.WithdrawnNight = true, n-1
		}
		for _, j := range m.Added {
			c := cps[j]
			next[j] = len(r.Reported)
			r.Reported = append(r.Reported, reported{
				FirstNight: n - 1, FirstIndex: c.Index, Index: c.Index,
				Up: c.After > c.Before, Provisional: c.Provisional,
			})
		}
		for j, c := range cps {
			if e := &r.Reported[next[j]]; !c.Provisional && !e.Confirmed {
				e.Confirmed, e.ConfirmedNight = true, n-1
			}
		}
		live, ids = cps, next
		r.Last = cps
	}
	fresh, err := changepoint.Detect(values, o)
	r.Fresh = fresh
	return r, err
}

// NullCase is a family of series without a change.
type NullCase struct {
	Name    string
	SD      float64 // relative noise of one night
	Options changepoint.Options
	// Outliers is the share of bad nights (Contaminate); 0 for none.
	Outliers float64
}

// NullResult counts the false change points of NullCase over Series series.
type NullResult struct {
	Series int
	Nights int
	// Final is the number of change points of a fresh pass (Detect) over
	// each whole series; Nightly the number of distinct change points a
	// nightly run reported over the series' nights, withdrawn ones
	// included; Last the number the nightly run still held after the
	// newest night.
	Final, Nightly, Last int
	// FinalConfirmed and NightlyConfirmed count only confirmed ones: not
	// provisional in the fresh pass, held confirmed on some night by the
	// nightly run (what a caller that mails confirmed change points mails).
	FinalConfirmed, NightlyConfirmed int
	// SeriesWithNightly and SeriesWithConfirmed are the numbers of series
	// with at least one.
	SeriesWithNightly, SeriesWithConfirmed int
	// BadNights is the number of bad nights mixed in (NullCase.Outliers).
	BadNights int
	// Excursions counts the nights changepoint.Excursions flags over each
	// whole series: TrueExcursions are bad nights, the others are not.
	TrueExcursions, FalseExcursions int
}

// PerSeriesYear scales a count to false change points per series and
// 365 nights.
func (r NullResult) PerSeriesYear(count int) float64 {
	return float64(count) / float64(r.Series) * 365 / float64(r.Nights)
}

// Null simulates series of the given number of nights without a change
// and counts false change points. nightly selects the replay of every night
// (slow: one pass per night); without it only the final pass runs.
func Null(c NullCase, series, nights int, seed uint64, nightly bool) (NullResult, error) {
	res := NullResult{Series: series, Nights: nights}
	var mu sync.Mutex
	err := forEach(series, func(i int) error {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		v := Series(rng, nights, c.SD, nil)
		bad := contaminate(outlierRNG(seed, i), v, c.Outliers)
		var one NullResult
		for _, b := range bad {
			if b {
				one.BadNights++
			}
		}
		var fresh []changepoint.ChangePoint
		if nightly {
			r, err := runReplay(v, c.Options, 1, changepoint.DefaultMatchDistance)
			if err != nil {
				return err
			}
			fresh, one.Nightly, one.Last = r.Fresh, len(r.Reported), len(r.Last)
			for _, e := range r.Reported {
				if e.Confirmed {
					one.NightlyConfirmed++
				}
			}
		} else {
			var err error
			if fresh, err = changepoint.Detect(v, c.Options); err != nil {
				return err
			}
		}
		if err := countExcursions(v, bad, c.Options, &one.TrueExcursions, &one.FalseExcursions); err != nil {
			return err
		}
		one.Final = len(fresh)
		for _, cp := range fresh {
			if !cp.Provisional {
				one.FinalConfirmed++
			}
		}
		mu.Lock()
		defer mu.Unlock()
		res.Final += one.Final
		res.FinalConfirmed += one.FinalConfirmed
		res.Nightly += one.Nightly
		res.NightlyConfirmed += one.NightlyConfirmed
		res.Last += one.Last
		res.BadNights += one.BadNights
		res.TrueExcursions += one.TrueExcursions
		res.FalseExcursions += one.FalseExcursions
		if one.Nightly > 0 {
			res.SeriesWithNightly++
		}
		if one.NightlyConfirmed > 0 {
			res.SeriesWithConfirmed++
		}
		return nil
	})
	return res, err
}

// StepCase is a family of series with steps of one size at random nights.
type StepCase struct {
	Name    string
	SD      float64 // relative noise of one night
	Size    float64 // relative size of each step, e.g. 0.03
	Options changepoint.Options
	// Outliers is the share of bad nights (Contaminate); 0 for none.
	Outliers float64
}

// StepResult scores the change points found on StepCase series.
type StepResult struct {
	Series, Steps int
	// FoundFinal and FalseFinal count, in a fresh pass over each whole
	// series (Detect), change points within the match distance of a true
	// step in its direction (one per step) and the others.
	FoundFinal, FalseFinal int
	// FoundNightly counts true steps a nightly run reported at some night;
	// FalseNightly the reported change points that were not the first
	// report of a true step (false alarms and duplicates).
	FoundNightly, FalseNightly int
	// Delays holds, for every step found by the nightly run, the nights
	// after the step until the first report: 0 is the step's own night.
	Delays []int
	// FoundConfirmed, FalseConfirmed and ConfirmDelays are FoundNightly,
	// FalseNightly and Delays counting only the change points the nightly
	// run confirmed, and the nights until it confirmed them.
	FoundConfirmed, FalseConfirmed int
	ConfirmDelays                  []int
	// BadNights, TrueExcursions and FalseExcursions are as in NullResult.
	BadNights, TrueExcursions, FalseExcursions int
	// IndexErrors holds |final index − true night| of the steps the final
	// pass found; Moves |final index − first reported index| of the steps
	// the nightly run found.
	IndexErrors, Moves []int
}

// Recall and Precision of the final pass and of the nightly run.
func (r StepResult) RecallFinal() float64   { return ratio(r.FoundFinal, r.Steps) }
func (r StepResult) RecallNightly() float64 { return ratio(r.FoundNightly, r.Steps) }
func (r StepResult) PrecisionFinal() float64 {
	return ratio(r.FoundFinal, r.FoundFinal+r.FalseFinal)
}
func (r StepResult) PrecisionNightly() float64 {
	return ratio(r.FoundNightly, r.FoundNightly+r.FalseNightly)
}
func (r StepResult) RecallConfirmed() float64 { return ratio(r.FoundConfirmed, r.Steps) }
func (r StepResult) PrecisionConfirmed() float64 {
	return ratio(r.FoundConfirmed, r.FoundConfirmed+r.FalseConfirmed)
}

func ratio(a, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// stepNights places the two steps of a series of 365 nights: one in the
// first half and one in the second, far enough apart and from the ends
// that each has a long segment on both sides.
func stepNights(rng *rand.Rand, nights int) []int {
	a := nights/4 + rng.IntN(nights/6)
	b := nights*3/5 + rng.IntN(nights/5)
	return []int{a, b}
}

// Steps simulates series with two steps each (stepNights), of random
// direction, and scores a final pass and a nightly run over each.
func Steps(c StepCase, series, nights int, seed uint64) (StepResult, error) {
	res := StepResult{Series: series}
	var mu sync.Mutex
	err := forEach(series, func(i int) error {
		one, err := stepSeries(c, nights, seed, i)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		res.add(one)
		return nil
	})
	slices.Sort(res.Delays)
	slices.Sort(res.ConfirmDelays)
	slices.Sort(res.IndexErrors)
	slices.Sort(res.Moves)
	return res, err
}

// stepSeries simulates the series i of Steps and scores it.
func stepSeries(c StepCase, nights int, seed uint64, i int) (StepResult, error) {
	rng := rand.New(rand.NewPCG(seed, uint64(i)))
	var steps []Step
	for _, night := range stepNights(rng, nights) {
		f := 1 + c.Size
		if rng.IntN(2) == 0 {
			f = 1 / (1 + c.Size)
		}
		steps = append(steps, Step{Night: night, Factor: f})
	}
	v := Series(rng, nights, c.SD, steps)
	bad := contaminate(outlierRNG(seed, i), v, c.Outliers)
	r, err := runReplay(v, c.Options, 1, changepoint.DefaultMatchDistance)
	if err != nil {
		return StepResult{}, err
	}
	one := StepResult{Steps: len(steps)}
	for _, b := range bad {
		if b {
			one.BadNights++
		}
	}
	if err := countExcursions(v, bad, c.Options, &one.TrueExcursions, &one.FalseExcursions); err != nil {
		return StepResult{}, err
	}
	one.scoreFinal(r.Fresh, steps)
	one.scoreNightly(r.Reported, steps)
	one.scoreConfirmed(r.Reported, steps)
	return one, nil
}

// nearStep says whether a change point at index, up or down, matches the
// step s: within the match distance, in its direction.
func nearStep(index int, up bool, s Step) bool {
	d := index - s.Night
	tol := changepoint.DefaultMatchDistance
	return d >= -tol && d <= tol && up == (s.Factor > 1)
}

// scoreFinal scores a fresh pass over the whole series: each step takes
// the closest unused change point; the change points left are false.
func (r *StepResult) scoreFinal(final []changepoint.ChangePoint, steps []Step) {
	used := make([]bool, len(final))
	for _, s := range steps {
		best := -1
		for j, cp := range final {
			if used[j] || !nearStep(cp.Index, cp.After > cp.Before, s) {
				continue
			}
			if best < 0 || abs(cp.Index-s.Night) < abs(final[best].Index-s.Night) {
				best = j
			}
		}
		if best >= 0 {
			used[best] = true
			r.FoundFinal++
			r.IndexErrors = append(r.IndexErrors, abs(final[best].Index-s.Night))
		}
	}
	for _, u := range used {
		if !u {
			r.FalseFinal++
		}
	}
}

// scoreNightly scores the nightly run: the first report near a step is
// its detection; any other report is false (or a duplicate).
func (r *StepResult) scoreNightly(reports []reported, steps []Step) {
	match, used := firstReports(reports, steps, func(reported) bool { return true }, func(e reported) int { return e.FirstNight })
	for i, j := range match {
		if j < 0 {
			continue
		}
		e := reports[j]
		r.FoundNightly++
		r.Delays = append(r.Delays, e.FirstNight-steps[i].Night)
		r.Moves = append(r.Moves, abs(e.Index-e.FirstIndex))
	}
	for _, u := range used {
		if !u {
			r.FalseNightly++
		}
	}
}

// scoreConfirmed scores the nightly run as scoreNightly does, counting
// only the change points it confirmed, by the night it confirmed them.
func (r *StepResult) scoreConfirmed(reports []reported, steps []Step) {
	match, used := firstReports(reports, steps, func(e reported) bool { return e.Confirmed }, func(e reported) int { return e.ConfirmedNight })
	for i, j := range match {
		if j >= 0 {
			r.FoundConfirmed++
			r.ConfirmDelays = append(r.ConfirmDelays, reports[j].ConfirmedNight-steps[i].Night)
		}
	}
	for j, e := range reports {
		if e.Confirmed && !used[j] {
			r.FalseConfirmed++
		}
	}
}

// firstReports gives each step, in order, the report that counts and is
// near it (first or last index) with the earliest night, each report
// taken once: match[i] is the report of steps[i] (−1 for none), and used
// says which reports were taken.
func firstReports(reports []reported, steps []Step, counts func(reported) bool, night func(reported) int) (match []int, used []bool) {
	used = make([]bool, len(reports))
	for _, s := range steps {
		best := -1
		for j, e := range reports {
			if !counts(e) || used[j] || !(nearStep(e.FirstIndex, e.Up, s) || nearStep(e.Index, e.Up, s)) {
				continue
			}
			if best < 0 || night(e) < night(reports[best]) {
				best = j
			}
		}
		if best >= 0 {
			used[best] = true
		}
		match = append(match, best)
	}
	return match, used
}

// add adds one series' scores to r.
func (r *StepResult) add(one StepResult) {
	r.Steps += one.Steps
	r.FoundFinal += one.FoundFinal
	r.FalseFinal += one.FalseFinal
	r.FoundNightly += one.FoundNightly
	r.FalseNightly += one.FalseNightly
	r.Delays = append(r.Delays, one.Delays...)
	r.BadNights += one.BadNights
	r.TrueExcursions += one.TrueExcursions
	r.FalseExcursions += one.FalseExcursions
	r.FoundConfirmed += one.FoundConfirmed
	r.FalseConfirmed += one.FalseConfirmed
	r.ConfirmDelays = append(r.ConfirmDelays, one.ConfirmDelays...)
	r.IndexErrors = append(r.IndexErrors, one.IndexErrors...)
	r.Moves = append(r.Moves, one.Moves...)
}

// countExcursions counts the excursions of v on bad nights into onBad and
// the others into onGood.
func countExcursions(v []float64, bad []bool, o changepoint.Options, onBad, onGood *int) error {
	exc, err := changepoint.Excursions(v, o)
	for _, e := range exc {
		if bad[e.Index] {
			*onBad++
		} else {
			*onGood++
		}
	}
	return err
}

// Quantile of sorted ints, by the nearest rank; −1 for none.
func Quantile(sorted []int, q float64) int {
	if len(sorted) == 0 {
		return -1
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// forEach runs f(0) … f(n−1) on GOMAXPROCS goroutines and returns the
// first error.
func forEach(n int, f func(i int) error) error {
	workers := min(runtime.GOMAXPROCS(0), n)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

package nightly

import (
	"context"
	"math"
	"slices"

	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/stats/changepoint"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Noise floors of the change-point pass. The pass's t-test assumes each
// night's value varies by at least the floor (a relative standard
// deviation), so that a series with no visible noise does not make every
// tiny difference significant; package changepoint's simulations show a
// floor near the true noise keeps false alarms near one per hundred
// series-years, and one far below it costs eight times more. The floor is
// measured from the series itself (changepoint.Noise: the night-to-night
// differences, which a step disturbs only once and a bad night twice),
// never below the instrument's own floor: boots of one image differ by
// about 0.03 % under icount, by a few tenths of a percent at best under
// wall time. With fewer than changepoint.MinNoiseNights nights the
// instrument's typical noise is used instead: 0.03 % for icount, 2 % for
// TCG wall time (docs/verdicts.md's TCG section).
const (
	icountNoiseFloor    = 0.0003
	wallClockNoiseFloor = 0.002
	wallClockNoise      = 0.02
)

// changeOptions are the change-point pass's options for a series: the
// package defaults (chosen from simulated null series, see package
// changepoint) and a minimum magnitude tied to the minimum effect of the
// verdicts; lineChanges sets the noise floor per line.
func changeOptions(accel string, minEffectPct float64) changepoint.Options {
	floor := wallClockNoiseFloor
	if wire.Accel(accel).CountsInstructions() {
		floor = icountNoiseFloor
	}
	return changepoint.Options{MinMagnitude: minEffectPct / 100, NoiseFloor: floor}
}

// noiseFloor measures a line's noise per night (changepoint.Noise: robust
// to a step and to bad nights), never below the instrument's floor.
func noiseFloor(values []float64, instrument float64) float64 {
	if len(values) < changepoint.MinNoiseNights {
		if instrument == icountNoiseFloor {
			return instrument
		}
		return wallClockNoise
	}
	return math.Max(instrument, changepoint.Noise(values))
}

// lines are the two series of values of a metric that the pass looks at.
var lines = []struct {
	line  history.Line
	value func(history.NightRow) float64
}{
	{history.LineKernel, func(r history.NightRow) float64 { return r.Ratio }},
	{history.LineHost, func(r history.NightRow) float64 { return r.Reference.Center }},
}

// analysis is what the change-point pass made of a series' history.
type analysis struct {
	// changes are the change points to store: new ones, moved or updated
	// ones (with their IDs), and withdrawn ones.
	changes []Change
	// excursions are, for every metric and line the pass ran on, the
	// excursions it finds now: what the history holds instead of the last
	// pass's (history.Tx.SetExcursions).
	excursions []lineExcursions
	// newExcursions are those the history did not hold yet.
	newExcursions []history.Excursion
}

// lineExcursions are the excursions of one metric on one line.
type lineExcursions struct {
	metric history.Metric
	line   history.Line
	all    []history.Excursion
}

// store writes what the pass found: its change points (setting their IDs)
// and its excursions.
func (a *analysis) store(ctx context.Context, tx *history.Tx, seriesID int64) error {
	for i := range a.changes {
		c := &a.changes[i]
		var err error
		switch {
		case c.Point.ID == 0:
			c.Point.ID, err = tx.PutChangePoint(ctx, c.Point)
		case c.Point.Status == history.ChangeWithdrawn:
			err = tx.WithdrawChange(ctx, c.Point.ID)
		default: // the range the pass found: not the state a person set since it read it
			err = tx.UpdateChangeRange(ctx, c.Point)
		}
		if err != nil {
			return err
		}
	}
	for _, le := range a.excursions {
		if err := tx.SetExcursions(ctx, seriesID, le.metric, le.line, le.all); err != nil {
			return err
		}
	}
	return nil
}

// updateChanges runs the change-point pass over the history of every
// metric of a series, with tonight's rows (not yet stored) appended when
// tonight is not nil.
func updateChanges(ctx context.Context, db *history.DB, series history.Series, opts changepoint.Options, tonight *history.Night, rows []history.NightRow) (*analysis, error) {
	stored, err := db.ChangePoints(ctx, series.ID, history.LiveStatuses()...)
	if err != nil {
		return nil, err
	}
	storedExcursions, err := db.Excursions(ctx, series.ID)
	if err != nil {
		return nil, err
	}
	type place struct {
		night int64
		m     history.Metric
		line  history.Line
	}
	held := map[place]bool{}
	for _, e := range storedExcursions {
		held[place{e.NightID, e.Metric, e.Line}] = true
	}
	metrics, err := db.Metrics(ctx, series.ID)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if !slices.Contains(metrics, r.Metric) {
			metrics = append(metrics, r.Metric)
		}
	}
	a := &analysis{}
	for _, m := range metrics {
		points, err := db.Trend(ctx, series.ID, m)
		if err != nil {
			return nil, err
		}
		if tonight != nil {
			if i := slices.IndexFunc(rows, func(r history.NightRow) bool { return r.Metric == m }); i >= 0 {
				points = append(points, history.TrendPoint{Night: *tonight, Row: rows[i]})
			}
		}
		cpu := cpuOf(points)
		for _, l := range lines {
			var prev []history.ChangePoint
			for _, cp := range stored {
				if cp.Metric == m && cp.Line == l.line {
					prev = append(prev, cp)
				}
			}
			c, exc, err := lineChanges(series, m, l.line, points, onCPU(cpu, l.value), prev, opts)
			if err != nil {
				return nil, err
			}
			a.changes = append(a.changes, c...)
			a.excursions = append(a.excursions, lineExcursions{metric: m, line: l.line, all: exc})
			for _, e := range exc {
				if !held[place{e.NightID, e.Metric, e.Line}] {
					a.newExcursions = append(a.newExcursions, e)
				}
			}
		}
	}
	return a, nil
}

// cpuOf is the CPU model of the newest night of points that names one
// (tonight's, when it is among them): the change-point pass looks only at
// the nights measured on it. Instruction counts of another CPU model, a
// CPU profile given or changed between nights, are another instrument's:
// taking the step between them for a change point would blame the kernel
// for the CPU (the night that changed it says so in its note).
func cpuOf(points []history.TrendPoint) string {
	for i := len(points) - 1; i >= 0; i-- {
		if m := points[i].Night.CPUModel; m != "" {
			return m
		}
	}
	return ""
}

// onCPU is value for the nights measured on the CPU model cpu (or on a
// model they do not name), NaN for the others, which lineChanges leaves out.
func onCPU(cpu string, value func(history.NightRow) float64) func(history.TrendPoint) float64 {
	return func(p history.TrendPoint) float64 {
		if m := p.Night.CPUModel; m != "" && cpu != "" && m != cpu {
			return math.NaN()
		}
		return value(p.Row)
	}
}

// lineChanges is the pass over one line of one metric: the change points
// to store and the line's excursions.
func lineChanges(series history.Series, m history.Metric, line history.Line, points []history.TrendPoint,
	value func(history.TrendPoint) float64, stored []history.ChangePoint, opts changepoint.Options) ([]Change, []history.Excursion, error) {
	// Nights without a value (an imported night without a reference has
	// no host line, a night on another CPU model) are left out; at maps
	// positions back to points.
	var values []float64
	var at []int
	for i, p := range points {
		if v := value(p); !math.IsNaN(v) && !math.IsInf(v, 0) && v > 0 {
			values = append(values, v)
			at = append(at, i)
		}
	}
	position := func(nightIndex int) int { return slices.Index(at, nightIndex) }
	var prev []changepoint.ChangePoint
	var prevStored []history.ChangePoint
	for _, cp := range stored {
		if i := position(cp.NightIndex); i > 0 {
			prev = append(prev, changepoint.ChangePoint{Index: i, Before: 1, After: 1 + cp.DeltaPct/100})
			prevStored = append(prevStored, cp)
		}
	}
	opts.NoiseFloor = noiseFloor(values, opts.NoiseFloor)
	next, err := changepoint.Update(values, prev, opts)
	if err != nil {
		return nil, nil, err
	}
	found, err := changepoint.Excursions(values, opts)
	if err != nil {
		return nil, nil, err
	}
	excursions := make([]history.Excursion, len(found))
	for i, e := range found {
		n := points[at[e.Index]].Night
		excursions[i] = history.Excursion{NightID: n.ID, Night: n.Date, Metric: m, Line: line, Level: e.Level, DeltaPct: e.ChangePct}
	}
	// A change point's range to bisect starts at the last night of the
	// old level: the excursions between it and the first night of the
	// new level may be either.
	at1 := func(c changepoint.ChangePoint) history.ChangePoint {
		after, before := points[at[c.Index]], points[at[c.LastBefore]]
		return history.ChangePoint{SeriesID: series.ID, Metric: m, Line: line, Night: after.Night.Date, NightIndex: at[c.Index],
			BeforeNight: before.Night.Date, BeforeCommit: before.Night.Tip.Commit, AfterCommit: after.Night.Tip.Commit,
			DeltaPct: c.ChangePct, P: c.P, Provisional: c.Provisional, Status: history.ChangeOpen}
	}
	match := changepoint.Match(prev, next, changepoint.DefaultMatchDistance)
	var changes []Change
	for _, p := range match.Pairs {
		old, now := prevStored[p.Prev], at1(next[p.Next])
		upd := old
		upd.Night, upd.NightIndex, upd.BeforeNight, upd.BeforeCommit, upd.AfterCommit = now.Night, now.NightIndex, now.BeforeNight, now.BeforeCommit, now.AfterCommit
		upd.DeltaPct, upd.P, upd.Provisional = now.DeltaPct, now.P, now.Provisional
		what := "updated"
		switch {
		case upd.Night != old.Night:
			what = "moved"
		case old.Provisional && !upd.Provisional:
			what = "confirmed"
		}
		changes = append(changes, Change{Point: upd, What: what})
	}
	for _, j := range match.Added {
		changes = append(changes, Change{Point: at1(next[j]), What: "new"})
	}
	for _, i := range match.Withdrawn {
		w := prevStored[i]
		w.Status = history.ChangeWithdrawn
		changes = append(changes, Change{Point: w, What: "withdrawn"})
	}
	return changes, excursions, nil
}

// changePoints runs the pass for tonight, when tonight measured.
func (r *seriesRun) changePoints(ctx context.Context) (*analysis, error) {
	n := r.n.Night
	if n.Status != history.StatusMeasured && n.Status != history.StatusInconclusive || len(r.n.Rows) == 0 {
		return &analysis{}, nil
	}
	return updateChanges(ctx, r.db, r.n.Series, changeOptions(n.Accel, r.cfg.Stats.MinEffect), &n, r.n.Rows)
}

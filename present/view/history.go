package view

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/host/insight"
)

// History is what the history reports show (report.WriteHistory): every
// series with its nights, its metrics' trends and its change points, as
// package history stores them. The renderers read no database;
// LoadHistory fills the view with package history's queries.
//
// Order does not matter: the renderers sort nights and points by date and
// change points by night, benchmark and line. A night's rows are taken from
// the trends, so a night needs no rows of its own.
type History struct {
	Series []HistorySeries
}

// HistorySeries is one series of a History.
type HistorySeries struct {
	Series history.Series
	// Nights are every night of the series, failed ones included: they
	// are the gaps of the trend plots.
	Nights []history.Night
	// Trends are the series' metrics, one per benchmark and unit.
	Trends []MetricTrend
	// ChangePoints are the series' change points, withdrawn ones included
	// (the text formats list them as withdrawn; plots leave them out).
	ChangePoints []history.ChangePoint
	// Excursions are the nights, per metric and line, that lay far from
	// the nights on both sides of them and that the change-point pass
	// leaves out of its statistics (package changepoint): the text formats
	// list them apart from the change points, the plots mark them.
	Excursions []history.Excursion
	// Triage is the audit log of the series' change points, oldest first
	// (history.DB.TriageLog): who set which state, when and why.
	Triage []history.Triage
	// Insight holds, by night (YYYY-MM-DD), the insight block stored with
	// the night (history.NightInsight, read back): filled for a night's
	// page, nil in a whole history.
	Insight map[string]NightInsight
}

// NightInsight is a night's insight block: why its tip differs from the
// kernel it was compared with (Against says which is side A).
type NightInsight struct {
	Against string
	Diff    *insight.Diff
}

// MetricTrend is one metric's nights, as history.DB.Trend returns them.
// Each point carries both lines of the metric: the kernel line is the
// point's Row.Ratio (the tip over the reference), the host line its
// Row.Reference (the reference kernel alone).
type MetricTrend struct {
	history.Metric
	Points []history.TrendPoint
}

// AtNight is the series restricted to one night (date): that night, its
// point of every trend, its excursions, and the change points whose step
// lies next to it (the night is their first night after the step, or
// their last one before it) with their triage.
func (hs HistorySeries) AtNight(date string) HistorySeries {
	one := HistorySeries{Series: hs.Series}
	for _, n := range hs.Nights {
		if n.Date == date {
			one.Nights = append(one.Nights, n)
		}
	}
	for _, t := range hs.Trends {
		for _, p := range t.Points {
			if p.Night.Date == date {
				one.Trends = append(one.Trends, MetricTrend{Metric: t.Metric, Points: []history.TrendPoint{p}})
			}
		}
	}
	for _, e := range hs.Excursions {
		if e.Night == date {
			one.Excursions = append(one.Excursions, e)
		}
	}
	if in, ok := hs.Insight[date]; ok {
		one.Insight = map[string]NightInsight{date: in}
	}
	return one.withChanges(hs, func(cp history.ChangePoint) bool { return cp.Night == date || cp.BeforeNight == date })
}

// ChangesOnly is the history's change points that keep says to keep, and
// their triage, without nights, trends or excursions; a series without
// any such change point is left out (an alerts page, a list of
// bisections).
func (h History) ChangesOnly(keep func(history.ChangePoint) bool) History {
	var out History
	for _, hs := range h.Series {
		if s := (HistorySeries{Series: hs.Series}).withChanges(hs, keep); len(s.ChangePoints) > 0 {
			out.Series = append(out.Series, s)
		}
	}
	return out
}

// withChanges adds from's change points that keep says to keep, with their
// triage.
func (hs HistorySeries) withChanges(from HistorySeries, keep func(history.ChangePoint) bool) HistorySeries {
	ids := map[int64]bool{}
	for _, cp := range from.ChangePoints {
		if keep(cp) {
			hs.ChangePoints = append(hs.ChangePoints, cp)
			ids[cp.ID] = true
		}
	}
	for _, t := range from.Triage {
		if ids[t.ChangePointID] {
			hs.Triage = append(hs.Triage, t)
		}
	}
	return hs
}

// LoadHistory reads what lpmbisect history and the served pages show from
// the database: every series (or the one named), its nights, every
// metric's trend and its change points, withdrawn ones included, its
// excursions and its triage log.
func LoadHistory(ctx context.Context, db *history.DB, only string) (History, error) {
	var h History
	all, err := db.AllSeries(ctx)
	if err != nil {
		return h, err
	}
	for _, s := range all {
		if only != "" && s.Name != only {
			continue
		}
		hs := HistorySeries{Series: s}
		if hs.Nights, err = db.Nights(ctx, s.ID); err != nil {
			return h, err
		}
		metrics, err := db.Metrics(ctx, s.ID)
		if err != nil {
			return h, err
		}
		for _, m := range metrics {
			points, err := db.Trend(ctx, s.ID, m)
			if err != nil {
				return h, err
			}
			hs.Trends = append(hs.Trends, MetricTrend{Metric: m, Points: points})
		}
		if hs.ChangePoints, err = db.ChangePoints(ctx, s.ID); err != nil {
			return h, err
		}
		if hs.Excursions, err = db.Excursions(ctx, s.ID); err != nil {
			return h, err
		}
		if hs.Triage, err = db.TriageLog(ctx, s.ID); err != nil {
			return h, err
		}
		h.Series = append(h.Series, hs)
	}
	if only != "" && len(h.Series) == 0 {
		return h, fmt.Errorf("%w: the history has no series %q", history.ErrNotFound, only)
	}
	return h, nil
}

// LoadNightInsight reads back the insight block the nights store with a
// night (history.DB.PutNightInsight); ok is false when the night has none.
func LoadNightInsight(ctx context.Context, db *history.DB, nightID int64) (in NightInsight, ok bool, err error) {
	stored, err := db.NightInsight(ctx, nightID)
	if errors.Is(err, history.ErrNotFound) {
		return in, false, nil
	}
	if err != nil {
		return in, false, err
	}
	d, err := insight.DecodeDiff(strings.NewReader(stored.Document))
	if err != nil {
		return in, false, fmt.Errorf("the insight block of night %d: %w", nightID, err)
	}
	return NightInsight{Against: stored.Against, Diff: d}, true, nil
}

// NightsPage says which nights of a series a page shows: page Page (from
// 1, the newest nights) of PerPage nights, newest first, of Pages; the
// series has Nights nights in all, the page those of Dates (newest first).
type NightsPage struct {
	Page, PerPage, Pages, Nights int
	Dates                        []string
}

// Dates are the dates of the series' nights, failed ones and those only
// its trends name included, newest first.
func (hs HistorySeries) Dates() []string {
	seen := map[string]bool{}
	var dates []string
	add := func(d string) {
		if !seen[d] {
			seen[d] = true
			dates = append(dates, d)
		}
	}
	for _, n := range hs.Nights {
		add(n.Date)
	}
	for _, t := range hs.Trends {
		for _, p := range t.Points {
			add(p.Night.Date)
		}
	}
	slices.Sort(dates)
	slices.Reverse(dates)
	return dates
}

// NightsPage is the series with the nights of one page only (page from 1,
// the newest, of per nights each) and their points of every trend; its
// change points, excursions, triage and insight stay whole. A page past
// the last holds no night (the returned NightsPage says how many there
// are).
func (hs HistorySeries) NightsPage(page, per int) (HistorySeries, NightsPage) {
	dates := hs.Dates()
	per = max(per, 1)
	p := NightsPage{Page: page, PerPage: per, Nights: len(dates), Pages: max(1, (len(dates)+per-1)/per)}
	lo := min(len(dates), max(0, (page-1)*per))
	p.Dates = dates[lo:min(len(dates), lo+per)]
	keep := map[string]bool{}
	for _, d := range p.Dates {
		keep[d] = true
	}
	out := hs
	out.Nights = nil
	for _, n := range hs.Nights {
		if keep[n.Date] {
			out.Nights = append(out.Nights, n)
		}
	}
	out.Trends = nil
	for _, t := range hs.Trends {
		mt := MetricTrend{Metric: t.Metric}
		for _, pt := range t.Points {
			if keep[pt.Night.Date] {
				mt.Points = append(mt.Points, pt)
			}
		}
		out.Trends = append(out.Trends, mt)
	}
	return out, p
}

// NightsAround are the dates of the nights before and after date in the
// series ("" at either end).
func (hs HistorySeries) NightsAround(date string) (before, after string) {
	dates := hs.Dates() // newest first
	i := slices.Index(dates, date)
	if i < 0 {
		return "", ""
	}
	if i+1 < len(dates) {
		before = dates[i+1]
	}
	if i > 0 {
		after = dates[i-1]
	}
	return before, after
}

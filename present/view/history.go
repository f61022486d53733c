package view

import "github.com/lpmbisect/lpmbisect/history"

// History is what the history reports show (report.WriteHistory): every
// series with its nights, its metrics' trends and its change points, as
// package history stores them. The renderers read no database; the caller
// fills the view with package history's queries, one call per field:
//
//	for _, s := range series { // db.AllSeries
//		hs := view.HistorySeries{Series: s}
//		hs.Nights, err = db.Nights(ctx, s.ID)
//		metrics, err := db.Metrics(ctx, s.ID)
//		for _, m := range metrics {
//			points, err := db.Trend(ctx, s.ID, m)
//			hs.Trends = append(hs.Trends, view.MetricTrend{Metric: m, Points: points})
//		}
//		hs.ChangePoints, err = db.ChangePoints(ctx, s.ID)
//		hs.Excursions, err = db.Excursions(ctx, s.ID)
//		hs.Triage, err = db.TriageLog(ctx, s.ID)
//		h.Series = append(h.Series, hs)
//	}
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
}

// MetricTrend is one metric's nights, as history.DB.Trend returns them.
// Each point carries both lines of the metric: the kernel line is the
// point's Row.Ratio (the tip over the reference), the host line its
// Row.Reference (the reference kernel alone).
type MetricTrend struct {
	history.Metric
	Points []history.TrendPoint
}

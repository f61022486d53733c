package nightly

import (
	"context"
	"fmt"
	"slices"

	"github.com/lpmbisect/lpmbisect/config"
	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/present/view"
)

// LoadHistory reads what lpmbisect history shows from the database: every
// series (or the one named), its nights, every metric's trend and its
// change points, withdrawn ones included, and its excursions.
func LoadHistory(ctx context.Context, db *history.DB, only string) (view.History, error) {
	var h view.History
	all, err := db.AllSeries(ctx)
	if err != nil {
		return h, err
	}
	for _, s := range all {
		if only != "" && s.Name != only {
			continue
		}
		hs := view.HistorySeries{Series: s}
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
			hs.Trends = append(hs.Trends, view.MetricTrend{Metric: m, Points: points})
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

// ImportSeries imports results files (see Import) into the history of the
// series name as cfg configures it (SeriesFor), its change points judged
// with the series' own minimum effect (config.File.ForSeries), as its
// nights are.
func ImportSeries(ctx context.Context, db *history.DB, cfg *config.File, name string, files []string) (*Imported, error) {
	conf := config.Series{Name: name}
	if i := slices.IndexFunc(cfg.Series, func(s config.Series) bool { return s.Name == name }); i >= 0 {
		conf = cfg.Series[i]
	}
	st := cfg.ForSeries(conf).Stats
	return Import(ctx, db, SeriesFor(cfg, name), campaign.Judge{Alpha: st.Alpha, MinEffectPct: st.MinEffect}.Options(0), files)
}

// SeriesFor is the history's record of a configured series, or of one
// known only to the history (imported results).
func SeriesFor(cfg *config.File, name string) history.Series {
	i := slices.IndexFunc(cfg.Series, func(s config.Series) bool { return s.Name == name })
	if i < 0 {
		return history.Series{Name: name, Kind: history.ImageSeries, Source: "imported"}
	}
	s := cfg.Series[i]
	if s.Repo != "" {
		return history.Series{Name: name, Kind: history.GitSeries, Source: s.Repo, Branch: s.Branch, Reference: s.Reference, Bench: s.Bench, Accel: s.Accel}
	}
	return history.Series{Name: name, Kind: history.ImageSeries, Source: s.Images, Reference: s.Reference, Bench: s.Bench, Accel: s.Accel}
}

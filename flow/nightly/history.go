package nightly

import (
	"context"
	"slices"

	"github.com/lpmbisect/lpmbisect/config"
	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/history"
)

// ImportSeries imports results files (see Import) into the history of the
// series name as cfg configures it (seriesFor), its change points judged
// with the series' own minimum effect (config.File.ForSeries), as its
// nights are.
func ImportSeries(ctx context.Context, db *history.DB, cfg *config.File, name string, files []string) (*Imported, error) {
	conf := config.Series{Name: name}
	if i := slices.IndexFunc(cfg.Series, func(s config.Series) bool { return s.Name == name }); i >= 0 {
		conf = cfg.Series[i]
	}
	st := cfg.ForSeries(conf).Stats
	return Import(ctx, db, seriesFor(cfg, name), campaign.Judge{Alpha: st.Alpha, MinEffectPct: st.MinEffect}.Options(0), files)
}

// seriesFor is the history's record of a configured series, or of one
// known only to the history (imported results).
func seriesFor(cfg *config.File, name string) history.Series {
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

package nightly

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/history"
)

// prune removes old nights' files of the series, by this rule: the run
// directories (console logs, raw captures) of all but the newest KeepRuns
// nights, and the kept kernels (builds of a git series) and their guests'
// insight documents that none of those nights booted as its tip and no
// open change point needs for its bisection, its reproduction command or
// its mail. Everything measured stays in the history; only the
// means of booting an old kernel again go. KeepRuns 0 keeps everything.
func (r *seriesRun) prune() {
	keep := r.cfg.Nightly.KeepRuns
	if keep <= 0 {
		return
	}
	ctx := context.WithoutCancel(context.Background())
	nights, err := r.db.Nights(ctx, r.n.Series.ID)
	if err != nil {
		r.logf("warning: not pruned: %v", err)
		return
	}
	if len(nights) <= keep {
		return
	}
	recent := nights[len(nights)-keep:]
	dates := map[string]bool{}
	kernels := map[string]bool{}
	for _, n := range recent {
		dates[n.Date] = true
		kernels[n.Tip.ImageSHA256] = true
	}
	if cps, err := r.db.ChangePoints(ctx, r.n.Series.ID, history.ChangeOpen, history.ChangeAcknowledged); err == nil {
		for _, cp := range cps {
			for _, n := range nights {
				if n.Date == cp.Night || n.Date == cp.BeforeNight {
					kernels[n.Tip.ImageSHA256] = true
				}
			}
		}
	}
	removed := 0
	removed += removeExcept(filepath.Join(r.dir, "runs"), func(name string) bool { return dates[name] })
	removed += removeExcept(filepath.Join(r.dir, "kernels"), func(name string) bool { return kernels[name] })
	// The guests' documents of those kernels, under every set of
	// measurement parameters (insightStore).
	if params, err := os.ReadDir(filepath.Join(r.dir, "insight")); err == nil {
		for _, p := range params {
			store := &campaign.Store{Dir: filepath.Join(r.dir, "insight", p.Name())}
			removed += store.PruneInsight(func(sha string) bool { return kernels[sha] })
		}
	}
	if removed > 0 {
		r.logf("pruned %d old run directories, kernels and insight documents (keeping the newest %d nights)", removed, keep)
	}
}

// removeExcept removes the entries of dir that keep does not want, and
// returns how many it removed.
func removeExcept(dir string, keep func(name string) bool) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if keep(e.Name()) || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if os.RemoveAll(filepath.Join(dir, e.Name())) == nil {
			n++
		}
	}
	return n
}

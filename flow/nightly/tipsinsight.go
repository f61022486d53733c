package nightly

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/host/measure"
)

// insightStore keeps, per kernel image, the insight document its guest
// sent in the first boot of a night (the symbols, programs, call counts
// and profile of measure.Insight), under the series' state directory and
// the night's measurement parameters: a mail written nights later finds
// the documents of both tips there.
func (r *seriesRun) insightStore() *campaign.Store {
	return &campaign.Store{Dir: filepath.Join(r.dir, "insight", r.setup.Bench.Params)}
}

// keepInsight keeps the documents the night's guests sent; failing to is
// worth a warning, not the night.
func (r *seriesRun) keepInsight(sides []*measure.Side) {
	for _, s := range sides {
		if s.Insight == nil {
			continue
		}
		if err := r.insightStore().KeepInsight(s.Kernel.SHA256, s.Insight); err != nil {
			r.logf("warning: %v (a mail of this tip explains it from its image only)", err)
		}
	}
}

// tipsInsight is the insight block of the tip before a change against the
// tip after it: their images, a build directory's vmlinux, and what their
// guests' passes found on the nights they were measured (keepInsight).
// nil when a tip is unknown; a tip whose kernel is gone says so in its
// side of the block.
func (r *seriesRun) tipsInsight(before, after history.Kernel) *insight.Diff {
	if r.setup == nil || before.Input == "" || after.Input == "" {
		return nil
	}
	var ks [2]*kernel.Kernel
	for i, tip := range []history.Kernel{before, after} {
		k, err := r.setup.Bench.Resolve(tip.Input)
		if err != nil {
			var opts insight.Options
			return insight.Compare(insight.LoadKernel(before.Input, r.setup.Measure.CacheDir, opts), insight.LoadKernel(after.Input, r.setup.Measure.CacheDir, opts), opts)
		}
		ks[i] = k
	}
	return r.insightStore().InsightDiff(r.setup.Bench.Insight, ks[0], ks[1])
}

// attributeTips makes the profile rows of d split each tip's timed
// numbers (its night's centre, rows before and after the change) by share.
func attributeTips(d *insight.Diff, before, after []history.NightRow) {
	if d == nil {
		return
	}
	d.AttributeTimed(func(bench string, side int) (float64, string, bool) {
		for _, row := range [2][]history.NightRow{before, after}[side] {
			if row.Benchmark == bench && strings.HasSuffix(row.Unit, "/op") {
				return row.Tip.Center, row.Unit, row.Tip.Boots > 0
			}
		}
		return 0, "", false
	})
}

// nightInsight is the insight block of tonight's tip against the last
// measured tip (prev; its rows split the profile's timed numbers), or
// against the reference ref on a series' first night: what the night's
// page shows under its verdicts. None without the guest's insight pass.
func (r *seriesRun) nightInsight(ctx context.Context, prev history.Night, ref *kernel.Kernel) {
	if r.setup.Bench.Insight == nil {
		return
	}
	tip := r.n.Night.Tip
	if prev.ID != 0 && prev.Tip.Input != "" {
		r.n.Insight = r.tipsInsight(prev.Tip, tip)
		prevRows, err := r.db.NightRows(ctx, prev.ID)
		if err == nil {
			attributeTips(r.n.Insight, prevRows, r.n.Rows)
		}
		r.n.InsightAgainst = fmt.Sprintf("A: the tip of %s (%s), B: tonight's tip (%s)", prev.Date, describe(prev.Tip), describe(tip))
		return
	}
	tk, err := r.setup.Bench.Resolve(tip.Input)
	if err != nil {
		return
	}
	r.n.Insight = r.insightStore().InsightDiff(r.setup.Bench.Insight, ref, tk)
	r.n.InsightAgainst = fmt.Sprintf("A: the reference (%s), B: tonight's tip (%s), the series' first night", describe(r.n.Night.Reference), describe(tip))
}

// putInsight stores the night's insight block with the night (compact:
// without the sides' function sizes, which only a redrawn size table
// needs).
func (r *seriesRun) putInsight(ctx context.Context, tx *history.Tx) error {
	if r.n.Insight == nil {
		return nil
	}
	var b bytes.Buffer
	if err := insight.EncodeDiff(&b, r.n.Insight.Compact()); err != nil {
		return fmt.Errorf("store the night's insight block: %w", err)
	}
	if b.Len() > history.MaxDocumentBytes {
		r.logf("warning: the night's insight block is %d bytes, more than the history keeps (%d): not stored", b.Len(), history.MaxDocumentBytes)
		return nil
	}
	return tx.PutNightInsight(ctx, history.NightInsight{NightID: r.n.Night.ID, Against: r.n.InsightAgainst, Document: b.String()})
}

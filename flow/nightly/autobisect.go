package nightly

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lpmbisect/lpmbisect/flow/bisect"
	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/internal/cachefile"
	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// notifyAndBisect bisects the night's confirmed (no longer provisional)
// change points on the kernel line, records what became of them, and mails
// them, one mail per night, to whoever the configuration names.
//
// One bisection serves every change point of the same nights: it measures
// the whole plan, so the commit that moved one benchmark is found once, and
// a control that stepped on those nights (the kernel's own loop overhead)
// gets the culprit of the benchmarks beside it instead of a bisection of
// its own. Non-control change points go first for that.
func (r *seriesRun) notifyAndBisect(ctx context.Context) {
	var tell []history.ChangePoint
	order := make([]int, len(r.n.Changes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int {
		ci, cj := compare.IsControl(r.n.Changes[i].Point.Benchmark, nil), compare.IsControl(r.n.Changes[j].Point.Benchmark, nil)
		switch {
		case ci == cj:
			return 0
		case cj:
			return -1
		}
		return 1
	})
	done := map[bisectRange]history.Bisection{}
	for _, i := range order {
		c := &r.n.Changes[i]
		cp := &c.Point
		if cp.Line != history.LineKernel || cp.Status == history.ChangeWithdrawn || cp.Provisional {
			continue
		}
		if worse(*cp) && (c.What == "new" || c.What == "confirmed") && !compare.IsControl(cp.Benchmark, nil) {
			r.n.Outcome = max(r.n.Outcome, Regression)
		}
		if cp.Bisect.State == history.BisectNone && r.cfg.Nightly.Bisect {
			cp.Bisect = r.autoBisect(ctx, *cp, done)
			if ctx.Err() != nil {
				return // interrupted: the bisection resumes with the next run
			}
			if err := r.store(ctx, func(tx *history.Tx) error { return tx.SetChangeBisection(ctx, cp.ID, cp.Bisect) }); err != nil {
				r.logf("warning: cannot record the bisection of change point %d: %v", cp.ID, err)
			}
		}
		if cp.Mailed.IsZero() && cp.Status == history.ChangeOpen {
			tell = append(tell, *cp)
		}
	}
	if len(tell) == 0 {
		return
	}
	if err := r.mail(ctx, tell); err != nil {
		r.logf("warning: the change points were not mailed: %v", err)
	}
}

// bisectRequested bisects the series' change points that a person asked
// to bisect (history.ActionBisect, from history ack --state bisect or the
// served page), whatever [nightly] bisect says, and records the culprit,
// or why there is none, where the page shows it.
func (r *seriesRun) bisectRequested(ctx context.Context) {
	cps, err := r.db.ChangePoints(ctx, r.n.Series.ID, history.LiveStatuses()...)
	if err != nil {
		r.logf("warning: cannot list the change points to bisect on request: %v", err)
		return
	}
	done := map[bisectRange]history.Bisection{}
	for _, cp := range cps {
		if cp.Bisect.State != history.BisectRequested {
			continue
		}
		cp.Bisect = r.autoBisect(ctx, cp, done)
		if ctx.Err() != nil {
			return // interrupted: still requested, the next run bisects it
		}
		if err := r.store(ctx, func(tx *history.Tx) error { return tx.SetChangeBisection(ctx, cp.ID, cp.Bisect) }); err != nil {
			r.logf("warning: cannot record the bisection of change point %d: %v", cp.ID, err)
			continue
		}
		r.n.Alerts = append(r.n.Alerts, strings.TrimSpace(fmt.Sprintf("change point %d bisected on request: %s %s %s%s",
			cp.ID, cp.Bisect.State, cp.Bisect.Culprit, cp.Bisect.Subject, cp.Bisect.Reason)))
	}
}

// bisectRequestedAgain bisects the change points asked for on a night
// already recorded (nightly run again on its date): the night measures
// nothing, but a request waits for no new night. The boot setup is made
// only when there is a request.
func (r *seriesRun) bisectRequestedAgain(ctx context.Context) {
	cps, err := r.db.ChangePoints(ctx, r.n.Series.ID, history.LiveStatuses()...)
	if err != nil || !slices.ContainsFunc(cps, func(cp history.ChangePoint) bool { return cp.Bisect.State == history.BisectRequested }) {
		return
	}
	if r.setup, err = r.o.SetupFor(&r.cfg, filepath.Join(r.dir, "runs", r.o.Date), r.conf.Reference); err != nil {
		r.logf("warning: cannot bisect the change points asked for: %v", err)
		r.n.Alerts = append(r.n.Alerts, fmt.Sprintf("bisections asked for wait: no boot setup: %v", err))
		return
	}
	r.bisectRequested(ctx)
}

// mail writes the mail body of change points (Options.WriteMail) into the
// series' state directory (mail/<night>.md), pipes it to the configured
// notify command (with its subject, Options.MailSubject, in
// $LPMBISECT_SUBJECT), and records them as mailed.
func (r *seriesRun) mail(ctx context.Context, cps []history.ChangePoint) error {
	if r.o.WriteMail == nil || r.o.MailSubject == nil {
		return errors.New("no mail renderer (Options.WriteMail, Options.MailSubject)")
	}
	m := view.Mail{Series: r.n.Series, Changes: cps, Config: r.cfg.Path}
	var err error
	if m.Before, err = r.db.Night(ctx, r.n.Series.ID, cps[0].BeforeNight); err != nil {
		return err
	}
	if m.After, err = r.db.Night(ctx, r.n.Series.ID, cps[0].Night); err != nil {
		return err
	}
	if m.BeforeRows, err = r.db.NightRows(ctx, m.Before.ID); err != nil {
		return err
	}
	if m.AfterRows, err = r.db.NightRows(ctx, m.After.ID); err != nil {
		return err
	}
	if m.Excursions, err = r.mailExcursions(ctx, cps); err != nil {
		return err
	}
	m.Reproduce = view.Reproduction{Flags: []string{"--accel", r.cfg.Measure.Accel, "--bench", r.cfg.Bench.Select},
		Before: m.Before.Tip.Input, After: m.After.Tip.Input}
	m.Insight = r.tipsInsight(m.Before.Tip, m.After.Tip)
	attributeTips(m.Insight, m.BeforeRows, m.AfterRows)
	var body bytes.Buffer
	if err := r.o.WriteMail(&body, m); err != nil {
		return err
	}
	path := filepath.Join(r.dir, "mail", r.o.Date+".md")
	if err := cachefile.WriteBytes(path, body.Bytes()); err != nil {
		return fmt.Errorf("mail body: %w", err)
	}
	r.n.Mail = path
	if cmd := r.cfg.Nightly.Notify; cmd != "" {
		c := exec.CommandContext(ctx, "sh", "-c", cmd)
		c.Stdin = &body
		c.Env = append(os.Environ(), "LPMBISECT_SUBJECT="+r.o.MailSubject(m), "LPMBISECT_MAIL="+path)
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("notify command %q: %v: %s (the mail body is in %s)", cmd, err, bytes.TrimSpace(out), path)
		}
	}
	now := time.Now()
	return r.store(ctx, func(tx *history.Tx) error {
		for _, cp := range cps {
			if err := tx.SetChangeMailed(ctx, cp.ID, now); err != nil {
				return err
			}
		}
		return nil
	})
}

// mailExcursions are the excursions a mail of cps tells (view.Mail): of a
// change point's metric and line between its BeforeNight and its Night,
// which the range skips, and the night's new ones.
func (r *seriesRun) mailExcursions(ctx context.Context, cps []history.ChangePoint) ([]history.Excursion, error) {
	all, err := r.db.Excursions(ctx, r.n.Series.ID)
	if err != nil {
		return nil, err
	}
	var out []history.Excursion
	for _, e := range all {
		skipped := slices.ContainsFunc(cps, func(cp history.ChangePoint) bool {
			return cp.Metric == e.Metric && cp.Line == e.Line && e.Night > cp.BeforeNight && e.Night < cp.Night
		})
		fresh := slices.ContainsFunc(r.n.Excursions, func(n history.Excursion) bool {
			return n.NightID == e.NightID && n.Metric == e.Metric && n.Line == e.Line
		})
		if skipped || fresh {
			out = append(out, e)
		}
	}
	return out, nil
}

// worse reports whether a kernel-line change point is a regression, in
// its unit's direction (compare.DirectionOf: a rise of a cost per
// operation, a fall of a rate). A unit without a known direction counts
// as worse, as compare's --fail-on regression counts it: a change nobody
// can judge is bisected, not passed over.
func worse(cp history.ChangePoint) bool {
	d := compare.DirectionOf(cp.Metric.Unit, cp.DeltaPct)
	return d == compare.Worse || (d == compare.Changed && cp.DeltaPct != 0)
}

// bisectRange is what one bisection searches: the nights around a change
// and its direction.
type bisectRange struct {
	before, after string // night dates
	reverse       bool
}

// autoBisect bisects a change point between the nights around it, widened
// by one night on each side: a git series with the bisect driver, an images
// series over the kernels CI dropped in between. done holds the
// bisections of this run, which a change point of the same nights shares.
func (r *seriesRun) autoBisect(ctx context.Context, cp history.ChangePoint, done map[bisectRange]history.Bisection) history.Bisection {
	if floor := r.resolvable(cp.Metric); math.Abs(cp.DeltaPct) < floor {
		return history.Bisection{State: history.BisectSkipped,
			Reason: fmt.Sprintf("not bisected: below what this host resolves (%+.2f%% against ±%.2g%%)", cp.DeltaPct, floor)}
	}
	points, err := r.db.Trend(ctx, r.n.Series.ID, cp.Metric)
	if err != nil {
		return failed(err)
	}
	if i := slices.IndexFunc(points, func(p history.TrendPoint) bool { return p.Night.Date == r.n.Night.Date }); i < 0 {
		points = append(points, history.TrendPoint{Night: r.n.Night})
	}
	before, after := cp.NightIndex-2, cp.NightIndex+1 // widened by one night each side
	before, after = max(before, 0), min(after, len(points)-1)
	good, bad := points[before].Night.Tip, points[after].Night.Tip
	key := bisectRange{points[before].Night.Date, points[after].Night.Date, !worse(cp)}
	if b, ok := done[key]; ok {
		return b
	}
	if compare.IsControl(cp.Benchmark, nil) {
		for k, b := range done {
			if k.before == key.before && k.after == key.after {
				return b // the control moved with the benchmarks beside it
			}
		}
		// Or with benchmarks whose change point an earlier night bisected.
		if cps, err := r.db.ChangePoints(ctx, r.n.Series.ID); err == nil {
			for _, other := range cps {
				if other.Night == cp.Night && other.Line == cp.Line && other.Bisect.State == history.BisectFound && !compare.IsControl(other.Benchmark, nil) {
					return other.Bisect
				}
			}
		}
	}
	setup := *r.setup
	bench := *setup.Bench
	bench.Reverse = key.reverse // an improvement: the bad (newer) end is the faster
	setup.Bench = &bench
	dir := "worse"
	if key.reverse {
		dir = "better"
	}
	state := filepath.Join(r.dir, "bisect", key.before+"_"+key.after+"_"+dir)
	r.logf("bisecting change point %d (%s %+.2f%%) between %s (%s) and %s (%s)", cp.ID, cp.Benchmark, cp.DeltaPct,
		points[before].Night.Date, describe(good), points[after].Night.Date, describe(bad))
	var res *campaign.Result
	if r.conf.Repo != "" {
		res, _, err = setup.Git(ctx, filepath.Join(r.dir, "worktree"), good.Commit, bad.Commit, state, filepath.Join(r.dir, "build"))
	} else {
		var images []string
		if images, err = r.imagesBetween(good.Input, bad.Input); err == nil {
			res, _, err = setup.Images(ctx, images, state)
		}
	}
	var b history.Bisection
	switch {
	case err != nil:
		return failed(err) // not shared: an interruption or a failure is tried again
	case res.Found():
		b = history.Bisection{State: history.BisectFound, Culprit: res.FirstBad, Subject: res.Subject}
	default:
		b = history.Bisection{State: history.BisectFailed, Reason: (bisect.Report{State: &campaign.State{}, Result: res}).Culprit()}
		if b.Reason == "" {
			b.Reason = "the bisection named no culprit (see " + state + ")"
		}
	}
	done[key] = b
	return b
}

func failed(err error) history.Bisection {
	return history.Bisection{State: history.BisectFailed, Reason: err.Error()}
}

// resolvable is the smallest change of a metric this host tells apart: the
// series' minimum effect (a bisection calls a candidate good or bad only
// beyond it).
func (r *seriesRun) resolvable(m history.Metric) float64 {
	return r.cfg.Stats.MinEffect
}

// imagesBetween lists the kernels of an images series from good to bad.
func (r *seriesRun) imagesBetween(good, bad string) ([]string, error) {
	list, err := candidates(r.conf.Images)
	if err != nil {
		return nil, err
	}
	i, j := slices.Index(list, good), slices.Index(list, bad)
	if i < 0 || j < 0 || j <= i {
		return nil, fmt.Errorf("the kernels around the change (%s, %s) are no longer in %s in that order", filepath.Base(good), filepath.Base(bad), r.conf.Images)
	}
	return list[i : j+1], nil
}

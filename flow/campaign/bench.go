package campaign

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/internal/words"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Errors that stop a bisection before it starts.
var (
	// ErrEndpointsNotDifferent: the good and bad endpoints measure the same
	// (or undecidably) within the boot cap: there is nothing to bisect.
	ErrEndpointsNotDifferent = errors.New("the good and bad endpoints are not different")
	// ErrWrongDirection: the endpoints differ, but not in the direction
	// asked for (a regression without --reverse, an improvement with it).
	ErrWrongDirection = errors.New("the endpoints differ in the other direction")
)

// Candidate is a kernel a bisection measures: an endpoint, or a candidate
// between them.
type Candidate struct {
	Input  string            // anything kernel.Resolve accepts
	Label  string            // short name for progress lines (commit, file name); "" for its release
	Labels map[string]string // configuration keys added to its results
}

// Bench classifies kernels by measuring them against measured endpoints,
// for every kind of bisection. Measurements are kept in Store by image
// SHA-256, so a kernel is measured once however often it comes up.
type Bench struct {
	Judge
	Store    *Store
	Measurer Measurer
	// Resolve resolves a kernel input (kernel.Resolve with the cache).
	Resolve func(input string) (*kernel.Kernel, error)
	// Boots is the number of boots of each look at a kernel; 0 means
	// compare.DeterministicBoots when Deterministic, else the fewest with
	// which a first look can reach both SAME and DIFFERENT (compare.Start:
	// 4 for one benchmark with MaxBoots 8 at α=0.05).
	Boots int
	// Deterministic says the deterministic rule decides every benchmark of
	// the plan (Judge.Calibrate).
	Deterministic bool
	// MaxBoots caps the boots of a kernel while its verdict stays UNKNOWN
	// (default 10); a candidate still UNKNOWN at the cap is skipped.
	MaxBoots int
	// Reverse looks for an improvement: the bad endpoint is the faster.
	Reverse bool
	// Params identifies the measurement parameters (measure.Setup.ParamsKey): results
	// measured with other parameters are kept apart and never compared.
	Params string
	// Insight, when set, explains the re-check: the guest's insight pass
	// (with the profile, when it asks for one) runs in the first boot of
	// the culprit and of its parent that the re-check adds, and the store
	// keeps each one's document for the report (Setup.Recheck). The
	// measurement decides whether the pass runs (measure.Insight).
	Insight *measure.Insight
	Log     *log.Logger

	good, bad *measured
	rows      int // rows compared, controls included (1 before the endpoints are measured)
	signal    []RowKey
	effect    map[RowKey]CompareRow
	measured  map[string]bool // image SHA-256s measured by this process
}

// measured is a kernel with its stored results.
type measured struct {
	Candidate
	k       *kernel.Kernel
	results []*benchfmt.Result
}

// boots is the boots of a first look at a kernel (compare.Start, both
// verdicts reachable), at most the cap.
func (b *Bench) boots() int {
	n, err := compare.Start(b.Judge.Options(b.maxBoots()), b.firstLook(max(b.rows, 1)))
	if err != nil {
		return b.maxBoots() // more boots than the cap were asked for, or no verdict is reachable below it
	}
	return n
}

func (b *Bench) firstLook(rows int) compare.FirstLook {
	return compare.FirstLook{Boots: b.Boots, Rows: rows, Deterministic: b.Deterministic, Both: true}
}

func (b *Bench) maxBoots() int {
	if b.MaxBoots <= 0 {
		return compare.DefaultMaxBoots
	}
	return b.MaxBoots
}

// OpenState opens the state of the bisection want describes in dir (a saved
// one of the same bisection, else a new one), with this bench's
// parameters, statistics and direction as part of its identity, and keeps
// the bench's measurements in it.
func (b *Bench) OpenState(dir string, want State) (*State, error) {
	want.Params, want.Reverse = b.Params, b.Reverse
	want.Judge = fmt.Sprintf("alpha=%g min-effect=%g%% boots=%d deterministic=%v max-boots=%d", b.Alpha, b.MinEffectPct, b.Boots, b.Deterministic, b.maxBoots())
	st, err := OpenState(dir, want)
	if err != nil {
		return nil, err
	}
	b.Store = &Store{Dir: filepath.Join(st.Dir(), "measurements", b.Params)}
	return st, nil
}

// CheckLevels reports levels with which no verdict can ever be reached.
func (b *Bench) CheckLevels() error {
	_, err := compare.Start(b.Judge.Options(b.maxBoots()), compare.FirstLook{Rows: 1, Both: true})
	return err
}

func (b *Bench) logf(format string, args ...any) {
	if b.Log != nil {
		b.Log.Printf(format, args...)
	}
}

// Effect is the measured difference between the endpoints.
type Effect struct {
	Rows []EffectRow `json:"rows"`
	// Signal names the rows the bisection follows: those that differ in the
	// direction asked for.
	Signal []RowKey `json:"signal"`
	// Drift names control rows (harness measurements) that differ between
	// the endpoints under wall time: the host or the harness changed, not
	// only the kernel.
	Drift []RowKey `json:"drift,omitempty"`
	// Harness names control rows that differ under instruction counts:
	// the kernel's own cost of the harness changed (compare decides which
	// it is: compare.Row.HarnessChanged), never the host.
	Harness []RowKey `json:"harness,omitempty"`
}

// EffectRow compares the bad endpoint with the good one on one row.
type EffectRow struct {
	RowKey
	CompareRow
}

// SetEndpoints measures both endpoints (Boots boots each, more while the
// difference stays UNKNOWN, up to MaxBoots) and checks that they differ in
// the expected direction. Errors wrap ErrEndpointsNotDifferent or
// ErrWrongDirection when the measurements forbid the bisection.
func (b *Bench) SetEndpoints(ctx context.Context, good, bad Candidate) (*Effect, error) {
	var err error
	if b.good, err = b.resolve(good); err != nil {
		return nil, fmt.Errorf("good endpoint: %w", err)
	}
	if b.bad, err = b.resolve(bad); err != nil {
		return nil, fmt.Errorf("bad endpoint: %w", err)
	}
	if b.good.k.SHA256 == b.bad.k.SHA256 {
		return nil, fmt.Errorf("%w: both are the same image (sha256 %s)", ErrEndpointsNotDifferent, words.ShortHash(b.good.k.SHA256))
	}
	seq, err := b.Judge.sequence(b.maxBoots())
	if err != nil {
		return nil, err
	}
	var eff *Effect
	var other []string
	_, err = b.adaptive().Run(ctx, b.source(b.good, b.bad), func(n int) (bool, error) {
		rows, err := b.Judge.look(seq, b.good.results, b.bad.results)
		if err != nil {
			return false, fmt.Errorf("compare the endpoints: %w", err)
		}
		b.effect = rows
		eff = b.effectOf(rows)
		// Controls share the Holm family with the benchmarks: they count.
		b.rows = len(eff.Rows)
		if len(eff.Signal) > 0 {
			b.signal = eff.Signal
			return false, nil
		}
		other = nil
		unknown := false
		for _, r := range eff.Rows {
			switch {
			case r.Control:
			case r.Verdict == compare.Different:
				other = append(other, fmt.Sprintf("%s %+.2f%%", r.Benchmark, r.DeltaPct))
			case r.Verdict == compare.Unknown:
				unknown = true
			}
		}
		if unknown && n < b.maxBoots() {
			b.logf("endpoints: UNKNOWN after %d boots each (%s); adding boots", n, describeRows(eff.Rows))
		}
		return unknown, nil
	})
	switch {
	case err != nil && eff == nil:
		return nil, fmt.Errorf("measure the endpoints: %w", err)
	case err != nil:
		return eff, err
	case len(eff.Signal) > 0:
		return eff, nil
	case len(other) > 0:
		return eff, b.wrongDirection(other)
	}
	return eff, fmt.Errorf("%w after %d boots each: %s (nothing to bisect: check the endpoints, or allow more boots or a smaller minimum effect)",
		ErrEndpointsNotDifferent, Boots(b.good.results), describeRows(eff.Rows))
}

// adaptive is the stop rule of every comparison a bisection makes: looks
// at Boots, 2·Boots, … up to MaxBoots.
func (b *Bench) adaptive() compare.Adaptive {
	return compare.Adaptive{Start: b.boots(), Step: b.boots(), MaxBoots: b.maxBoots()}
}

// source measures kernels together for an adaptive run: Measure(n) brings
// each to n boots, interleaved.
func (b *Bench) source(ks ...*measured) compare.Source { return topUpSource{b, ks} }

type topUpSource struct {
	b  *Bench
	ks []*measured
}

func (s topUpSource) Measure(ctx context.Context, n int) error {
	return s.b.topUp(ctx, n, nil, s.ks...)
}

func (b *Bench) wrongDirection(rows []string) error {
	if b.Reverse {
		return fmt.Errorf("%w: bad is slower than good (%s), a regression: bisect for a regression to find the commit that caused it", ErrWrongDirection, strings.Join(rows, ", "))
	}
	return fmt.Errorf("%w: bad is faster than good (%s), an improvement: bisect for an improvement to find the commit that made it", ErrWrongDirection, strings.Join(rows, ", "))
}

// effectOf orders the endpoint comparison and picks the signal rows.
// Benchmarks report time (or instructions) per operation: lower is better.
func (b *Bench) effectOf(rows map[RowKey]CompareRow) *Effect {
	eff := &Effect{}
	for _, k := range sortedRowKeys(rows) {
		r := rows[k]
		eff.Rows = append(eff.Rows, EffectRow{k, r})
		regression := r.B > r.A
		switch {
		case r.Control && r.HarnessChanged:
			eff.Harness = append(eff.Harness, k)
		case r.Control && r.Verdict == compare.Different:
			eff.Drift = append(eff.Drift, k)
		case r.Control:
		case r.Verdict == compare.Different && regression != b.Reverse:
			eff.Signal = append(eff.Signal, k)
		}
	}
	return eff
}

func describeRows(rows []EffectRow) string {
	var parts []string
	for _, r := range rows {
		parts = append(parts, fmt.Sprintf("%s %s", r.Benchmark, r.Comparison))
	}
	return strings.Join(parts, "; ")
}

func sortedRowKeys(m map[RowKey]CompareRow) []RowKey {
	keys := make([]RowKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b RowKey) int {
		if c := strings.Compare(a.Benchmark, b.Benchmark); c != 0 {
			return c
		}
		return strings.Compare(a.Unit, b.Unit)
	})
	return keys
}

// resolve resolves a kernel and loads what the store has for it.
func (b *Bench) resolve(k Candidate) (*measured, error) {
	rk, err := b.Resolve(k.Input)
	if err != nil {
		return nil, err
	}
	res, err := b.Store.Load(rk.SHA256)
	if err != nil {
		return nil, err
	}
	if k.Label == "" {
		k.Label = rk.Release
	}
	return &measured{Candidate: k, k: rk, results: res}, nil
}

// topUp boots the kernels that have fewer than target boots, interleaved,
// and stores the new boots, also when measuring fails part way. in, when
// set, asks for the guest's insight pass in the first of the new boots of
// each kernel, whose documents the store keeps.
func (b *Bench) topUp(ctx context.Context, target int, in *measure.Insight, ks ...*measured) error {
	var need []*measured
	var targets []Candidate
	n := 0
	for _, m := range ks {
		if slices.ContainsFunc(need, func(o *measured) bool { return o.k.SHA256 == m.k.SHA256 }) {
			continue
		}
		if have := Boots(m.results); have < target {
			need = append(need, m)
			targets = append(targets, Candidate{Input: m.Input, Label: m.Label})
			n = max(n, target-have)
		}
	}
	if len(need) == 0 {
		return nil
	}
	boots, docs, err := b.measure(ctx, targets, n, in)
	for i, m := range need {
		if docs[i] != nil {
			if serr := b.Store.KeepInsight(m.k.SHA256, docs[i]); serr != nil {
				b.logf("warning: %v (the re-check's report explains the change from the images only)", serr)
			}
		}
		if b.measured == nil {
			b.measured = map[string]bool{}
		}
		if len(boots[i]) > 0 {
			b.measured[m.k.SHA256] = true
		}
		// Keep every completed boot, even beyond the target, and even
		// when another kernel failed: a resumed bisection reuses them.
		all, serr := b.Store.Add(m.k.SHA256, toSlices(boots[i]), m.labels())
		if serr != nil {
			return serr
		}
		m.results = all
		// Kernels that share an image share results.
		for _, o := range ks {
			if o != m && o.k.SHA256 == m.k.SHA256 {
				o.results = all
			}
		}
	}
	return err
}

// measure boots kernels with the Measurer, with the guest's insight pass
// when in asks for it and the Measurer can run it: docs has an element per
// kernel, nil where none came back.
func (b *Bench) measure(ctx context.Context, kernels []Candidate, boots int, in *measure.Insight) ([][]BootResults, [][]byte, error) {
	if im, ok := b.Measurer.(insightMeasurer); ok && in != nil {
		return im.MeasureInsight(ctx, kernels, boots, in)
	}
	out, err := b.Measurer.Measure(ctx, kernels, boots)
	return out, make([][]byte, len(kernels)), err
}

func (m *measured) labels() map[string]string {
	l := map[string]string{}
	for k, v := range m.Labels {
		l[k] = v
	}
	return l
}

func toSlices(bs []BootResults) [][]*benchfmt.Result {
	out := make([][]*benchfmt.Result, len(bs))
	for i, b := range bs {
		out[i] = b
	}
	return out
}

// MeasuredImages returns the SHA-256 of every image this Bench booted (not
// those whose results all came from the store).
func (b *Bench) MeasuredImages() []string {
	var out []string
	for sha := range b.measured {
		out = append(out, sha)
	}
	slices.Sort(out)
	return out
}

// ClassifyKernel measures a candidate (Boots boots, more while UNKNOWN, up to
// MaxBoots) and classifies it against the endpoints. It also returns the
// resolved kernel, nil when the input is not a kernel.
func (b *Bench) ClassifyKernel(ctx context.Context, k Candidate) (Verdict, *kernel.Kernel, error) {
	if b.good == nil {
		return Verdict{}, nil, errors.New("bisect: ClassifyKernel before SetEndpoints")
	}
	m, err := b.resolve(k)
	if err != nil {
		if kernel.IsBadInput(err) {
			return Verdict{Class: Skip, Reason: fmt.Sprintf("no kernel to boot: %v", err)}, nil, nil
		}
		return Verdict{}, nil, err
	}
	vsGood, err := b.Judge.sequence(b.maxBoots())
	if err != nil {
		return Verdict{}, m.k, err
	}
	vsBad, err := b.Judge.sequence(b.maxBoots())
	if err != nil {
		return Verdict{}, m.k, err
	}
	var v Verdict
	decided := false
	n, err := b.adaptive().Run(ctx, b.source(m, b.good, b.bad), func(n int) (bool, error) {
		var err error
		v, decided, err = b.judge(m, vsGood, vsBad)
		if err == nil && !decided && n < b.maxBoots() {
			b.logf("%s: UNKNOWN after %d boots (%s); adding boots", m.Label, v.Boots, v.Reason)
		}
		return !decided, err
	})
	switch {
	case err != nil && isBootFailure(err) && ctx.Err() == nil:
		if Boots(b.good.results) < n || Boots(b.bad.results) < n {
			return Verdict{}, m.k, fmt.Errorf("an endpoint failed while adding boots: %w", err)
		}
		return Verdict{Class: Skip, Reason: fmt.Sprintf("did not boot: %v", err), Boots: Boots(m.results)}, m.k, nil
	case err != nil:
		return Verdict{}, m.k, err
	case !decided:
		v.Class = Skip
		v.Reason = fmt.Sprintf("UNKNOWN after %d boots: %s", v.Boots, v.Reason)
	}
	return v, m.k, nil
}

// judge compares a measured candidate with both endpoints on the signal
// rows, as the next looks of vsGood and vsBad.
func (b *Bench) judge(m *measured, vsGood, vsBad *compare.Sequence) (Verdict, bool, error) {
	rowsGood, err := b.Judge.look(vsGood, b.good.results, m.results)
	if err != nil {
		return Verdict{}, false, fmt.Errorf("compare with the good endpoint: %w", err)
	}
	rowsBad, err := b.Judge.look(vsBad, b.bad.results, m.results)
	if err != nil {
		return Verdict{}, false, fmt.Errorf("compare with the bad endpoint: %w", err)
	}
	v := Verdict{Boots: Boots(m.results)}
	for _, k := range b.signal {
		g, okG := rowsGood[k]
		bd, okB := rowsBad[k]
		if !okG || !okB {
			v.Rows = append(v.Rows, RowVerdict{Benchmark: k.Benchmark, Unit: k.Unit, VsGood: Comparison{Verdict: compare.Unknown, P: 1}, VsBad: Comparison{Verdict: compare.Unknown, P: 1}})
			continue
		}
		v.Rows = append(v.Rows, RowVerdict{Benchmark: k.Benchmark, Unit: k.Unit, Center: g.B, VsGood: g.Comparison, VsBad: bd.Comparison})
	}
	class, ok, reason := classifyRows(v.Rows)
	v.Class, v.Reason = class, reason
	return v, ok, nil
}

// judgeOnce classifies a measured kernel in a single look at all its boots.
func (b *Bench) judgeOnce(m *measured) (Verdict, error) {
	vsGood, err := b.Judge.sequence(0)
	if err != nil {
		return Verdict{}, err
	}
	vsBad, err := b.Judge.sequence(0)
	if err != nil {
		return Verdict{}, err
	}
	v, _, err := b.judge(m, vsGood, vsBad)
	return v, err
}

// Recheck is the culprit measured again against its parent.
type Recheck struct {
	Boots     int         `json:"boots"` // boots of each after the re-check
	Rows      []EffectRow `json:"rows"`
	Confirmed bool        `json:"confirmed"`
	// Parent and Culprit are their classifications with all boots.
	Parent  Verdict `json:"parent"`
	Culprit Verdict `json:"culprit"`
	// SameImage: the culprit's image is byte-identical to its parent's, so
	// the change cannot be in the kernel: the result is suspect.
	SameImage bool   `json:"same_image"`
	Note      string `json:"note,omitempty"`
}

// RecheckTarget returns the boots per kernel a re-check of parent and
// culprit with extra more boots measures to.
func (b *Bench) RecheckTarget(parent, culprit Candidate, extra int) (int, error) {
	p, err := b.resolve(parent)
	if err != nil {
		return 0, fmt.Errorf("re-check: parent: %w", err)
	}
	c, err := b.resolve(culprit)
	if err != nil {
		return 0, fmt.Errorf("re-check: culprit: %w", err)
	}
	return max(Boots(p.results), Boots(c.results)) + extra, nil
}

// SameImageRecheck is the re-check of a culprit whose kernel image
// (sha256 image) is its parent's: nothing to boot, and the note says why.
func SameImageRecheck(image string) *Recheck {
	return &Recheck{SameImage: true, Note: fmt.Sprintf("the culprit's kernel image is identical to its parent's (sha256 %s): the commit cannot have changed the kernel; suspect noise or a change outside the image", words.ShortHash(image))}
}

// Recheck boots the parent and the culprit up to target boots each,
// interleaved, then compares them directly and against the endpoints. The
// result is confirmed when the culprit differs from its parent on every
// signal row in the expected direction, the parent classifies good and the
// culprit bad.
func (b *Bench) Recheck(ctx context.Context, parent, culprit Candidate, target int) (*Recheck, error) {
	p, err := b.resolve(parent)
	if err != nil {
		return nil, fmt.Errorf("re-check: parent: %w", err)
	}
	c, err := b.resolve(culprit)
	if err != nil {
		return nil, fmt.Errorf("re-check: culprit: %w", err)
	}
	if p.k.SHA256 == c.k.SHA256 {
		return SameImageRecheck(c.k.SHA256), nil
	}
	rc := &Recheck{}
	if err := b.topUp(ctx, target, b.Insight, p, c); err != nil {
		return nil, fmt.Errorf("re-check: %w", err)
	}
	rows, err := b.Judge.once(p.results, c.results)
	if err != nil {
		return nil, fmt.Errorf("re-check: %w", err)
	}
	rc.Boots = min(Boots(p.results), Boots(c.results))
	confirmed := len(b.signal) > 0
	for _, k := range sortedRowKeys(rows) {
		r := rows[k]
		rc.Rows = append(rc.Rows, EffectRow{k, r})
		if slices.Contains(b.signal, k) {
			regression := r.B > r.A
			if r.Verdict != compare.Different || regression == b.Reverse {
				confirmed = false
			}
		}
	}
	if rc.Parent, err = b.judgeOnce(p); err != nil {
		return nil, err
	}
	if rc.Culprit, err = b.judgeOnce(c); err != nil {
		return nil, err
	}
	rc.Confirmed = confirmed && rc.Parent.Class == Good && rc.Culprit.Class == Bad
	return rc, nil
}

// CompareStored compares two kernels' stored results (a as side A, b as
// side B) in a single look, for reports: compare's full Report, which
// package report renders.
func (b *Bench) CompareStored(a, bk Candidate) (*compare.Report, *kernel.Kernel, *kernel.Kernel, error) {
	ma, mb, err := b.resolvePair(a, bk)
	if err != nil {
		return nil, nil, nil, err
	}
	rep, err := compare.Build(asSides(ma, mb), b.Judge.Options(0))
	return rep, ma.k, mb.k, err
}

// CompareKernels measures a and bk together and compares them, for a
// patch series: Boots boots each (none for a kernel whose image the store
// has enough of), more while a benchmark stays UNKNOWN, up to MaxBoots, as
// the looks of one adaptive comparison. The report is its last look (a as
// side A, bk as side B). When boots fail it returns the error, which wraps
// measure.ErrBootFailed and names the kernel, with a nil report; for a
// failure of a, FirstKernelFailed says so.
func (b *Bench) CompareKernels(ctx context.Context, a, bk Candidate) (*compare.Report, *kernel.Kernel, *kernel.Kernel, error) {
	ma, mb, err := b.resolvePair(a, bk)
	if err != nil {
		return nil, nil, nil, err
	}
	seq, err := b.Judge.sequence(b.maxBoots())
	if err != nil {
		return nil, nil, nil, err
	}
	var rep *compare.Report
	n, err := b.adaptive().Run(ctx, b.source(ma, mb), func(n int) (bool, error) {
		var err error
		if rep, err = seq.Look(asSides(ma, mb)); err != nil {
			return false, err
		}
		return rep.NeedMoreBoots(nil), nil // compare's one rule: not for rows no boot can decide, nor after a drift
	})
	if err != nil && isBootFailure(err) && ctx.Err() == nil && Boots(ma.results) < n {
		err = firstKernelFailed{err}
	}
	if err != nil {
		return nil, ma.k, mb.k, err
	}
	return rep, ma.k, mb.k, nil
}

// firstKernelFailed marks a boot failure of CompareKernels' first kernel
// (the one compared with), by the boots it holds, as ClassifyKernel tells
// an endpoint's failure from a candidate's; its message is the error's.
type firstKernelFailed struct{ error }

func (e firstKernelFailed) Unwrap() error { return e.error }

// FirstKernelFailed reports whether err from CompareKernels is a boot
// failure of its first kernel, a, rather than of the second.
func FirstKernelFailed(err error) bool {
	var f firstKernelFailed
	return errors.As(err, &f)
}

// resolvePair resolves two kernels with their stored results.
func (b *Bench) resolvePair(a, bk Candidate) (*measured, *measured, error) {
	ma, err := b.resolve(a)
	if err != nil {
		return nil, nil, err
	}
	mb, err := b.resolve(bk)
	return ma, mb, err
}

// asSides labels two measured kernels' results as sides A and B of a
// comparison, each with its kernel label.
func asSides(a, b *measured) []*benchfmt.Result {
	var results []*benchfmt.Result
	for _, side := range []struct {
		m    *measured
		name string
	}{{a, compare.SideA}, {b, compare.SideB}} {
		for _, r := range compare.AsSide(side.m.results, side.name) {
			r.SetConfig(wire.KeyKernel, side.m.Label)
			results = append(results, r)
		}
	}
	return results
}

// Confidence bounds the chance that no decided step was wrong: 1 − Σp over
// the claims that decided the steps (for each signal row, the DIFFERENT
// claim against one endpoint and the SAME claim against the other; the
// union bound assumes nothing about how steps depend on each other). With
// few boots each p is at least a few percent, so the bound is modest even
// for a clear effect; the re-check's p is the sharper statement about the
// culprit.
func Confidence(steps []Step) float64 {
	sum := 0.0
	for _, s := range steps {
		for _, r := range s.Verdict.Rows {
			switch s.Verdict.Class {
			case Good:
				sum += r.VsBad.PClaim + r.VsGood.PClaim
			case Bad:
				sum += r.VsGood.PClaim + r.VsBad.PClaim
			}
		}
	}
	return math.Max(0, 1-sum)
}

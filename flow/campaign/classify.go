package campaign

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/flow/calibrate"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// Class is what a bisection step decides about a candidate.
type Class int

const (
	// Skip: the candidate cannot be classified: it did not build, did not
	// boot, or its measurements matched neither endpoint within the boot cap.
	Skip Class = iota
	// Good: it matches the good (old) endpoint and not the bad one.
	Good
	// Bad: it matches the bad (new) endpoint and not the good one.
	Bad
)

var classNames = [...]string{Skip: "skip", Good: "good", Bad: "bad"}

// Exit codes of a git bisect run step (git-bisect(1)): git marks the commit
// good on 0, bad on 1–127 except 125, skips it on 125, and aborts the
// bisection on 128–255. A step exits with one of these (130 and 143, the
// signals, abort it too).
const (
	ExitGood  = 0   // the commit matches the good endpoint
	ExitBad   = 1   // the commit matches the bad endpoint
	ExitSkip  = 125 // it did not build or boot, or stayed UNKNOWN at the boot cap
	ExitAbort = 255 // stop the bisection: usage error, endpoints not different, host failure
)

// ExitCode is the exit code of a git bisect run step that classed its
// commit c.
func (c Class) ExitCode() int {
	switch c {
	case Good:
		return ExitGood
	case Bad:
		return ExitBad
	}
	return ExitSkip
}

func (c Class) String() string {
	if c >= 0 && int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// MarshalText encodes the class as its name.
func (c Class) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText decodes a class name.
func (c *Class) UnmarshalText(b []byte) error {
	for i, n := range classNames {
		if n == string(b) {
			*c = Class(i)
			return nil
		}
	}
	return fmt.Errorf("unknown class %q (want good, bad or skip)", b)
}

// Verdict is the classification of one candidate, with the evidence.
type Verdict struct {
	Class  Class  `json:"class"`
	Reason string `json:"reason"` // one line: why
	// Rows compare the candidate with each endpoint, one per benchmark that
	// tells the endpoints apart.
	Rows []RowVerdict `json:"rows,omitempty"`
	// Boots is the number of boots of the candidate the verdict counts.
	Boots int `json:"boots"`
}

// Comparison is one benchmark row of one kernel against another.
type Comparison struct {
	Verdict  compare.Verdict `json:"verdict"`
	DeltaPct float64         `json:"delta_pct"` // change of the candidate against the reference, %
	P        float64         `json:"p"`         // Mann-Whitney U p-value over per-boot medians
	// PClaim is the p-value behind the verdict: for DIFFERENT the larger of
	// the U test and the minimum-effect test, adjusted over rows (Holm);
	// for SAME the equivalence test's; 1 for UNKNOWN.
	PClaim float64 `json:"p_claim"`
}

// PValue is the p-value behind the verdict: the equivalence test's for
// SAME, the adjusted difference test's for DIFFERENT, the plain U test's
// for UNKNOWN.
func (c Comparison) PValue() float64 {
	if c.Verdict != compare.Unknown {
		return c.PClaim
	}
	return c.P
}

// String shows the verdict, the change and PValue, written p(same) for SAME.
func (c Comparison) String() string {
	p := "p"
	if c.Verdict == compare.Same {
		p = "p(same)"
	}
	return fmt.Sprintf("%s (%s, %s%s)", c.Verdict, view.FormatDelta(c.DeltaPct), p, view.FormatPRelation(c.PValue()))
}

// RowVerdict compares a candidate with both endpoints on one benchmark.
type RowVerdict struct {
	Benchmark string     `json:"benchmark"`
	Unit      string     `json:"unit"`
	Center    float64    `json:"center"` // the candidate's median of per-boot medians
	VsGood    Comparison `json:"vs_good"`
	VsBad     Comparison `json:"vs_bad"`
}

// Judge holds the statistical levels of a bisection.
type Judge struct {
	// Alpha bounds the error of each comparison's claims (default 0.05).
	Alpha float64
	// MinEffectPct is the smallest change, in percent, that counts as a
	// difference (default 1). Instruction counts move by a few
	// instructions between unrelated builds: that is the same.
	MinEffectPct float64
	// Bounds and MinEffects are compare's per-benchmark calibration: the
	// jitter bounds of deterministic benchmarks (decided from two boots)
	// and their own minimum effects (see compare.Options).
	Bounds, MinEffects map[string]float64
}

// Options are the statistics of the judge's comparisons in an adaptive run
// capped at maxBoots (0: a single look with all of α).
func (j Judge) Options(maxBoots int) compare.Options {
	return compare.Options{Alpha: j.Alpha, MinEffect: j.MinEffectPct / 100, MaxBoots: maxBoots, Bounds: j.Bounds, MinEffects: j.MinEffects}
}

// Calibrate sets the judge's calibrated statistics for setup (see
// calibrate.Use) and reports whether the deterministic rule then decides
// every benchmark of the plan.
func (j *Judge) Calibrate(ctx context.Context, setup *measure.Setup, auto, statistical bool) bool {
	opts := j.Options(0)
	deterministic := calibrate.Use(ctx, setup, &opts, auto, statistical)
	j.Bounds, j.MinEffects = opts.Bounds, opts.MinEffects
	return deterministic
}

// sequence starts a comparison of two kernels over the looks of an
// adaptive run capped at maxBoots (0: a single look with all of α).
func (j Judge) sequence(maxBoots int) (*compare.Sequence, error) {
	return compare.NewSequence(j.Options(maxBoots))
}

// look compares kernel b's boots with kernel a's, row by row, as the next
// look of seq, and decides each row SAME, DIFFERENT or UNKNOWN with
// compare's verdicts: DIFFERENT is significant and shown beyond the minimum
// effect, SAME is shown within it (an equivalence test), UNKNOWN is neither
// (see package compare).
//
// This is the single place where a bisection turns measurements into
// verdicts.
func (j Judge) look(seq *compare.Sequence, a, b []*benchfmt.Result) (map[RowKey]CompareRow, error) {
	rep, err := seq.Look(append(compare.AsSide(a, compare.SideA), compare.AsSide(b, compare.SideB)...))
	if err != nil {
		return nil, err
	}
	out := map[RowKey]CompareRow{}
	for _, row := range rep.Rows {
		c := Comparison{Verdict: row.Verdict, DeltaPct: row.DeltaPct, P: row.P, PClaim: 1}
		if row.Verdict != compare.Unknown {
			c.PClaim = row.ClaimP()
		}
		out[RowKey{row.Benchmark, row.Unit}] = CompareRow{Comparison: c, A: row.A.Center, B: row.B.Center,
			BootsA: row.A.Boots, BootsB: row.B.Boots, Control: row.Control, HarnessChanged: row.HarnessChanged}
	}
	return out, nil
}

// once compares a and b in a single look with all of α.
func (j Judge) once(a, b []*benchfmt.Result) (map[RowKey]CompareRow, error) {
	seq, err := j.sequence(0)
	if err != nil {
		return nil, err
	}
	return j.look(seq, a, b)
}

// RowKey names a row: a benchmark in a unit.
type RowKey struct {
	Benchmark string `json:"benchmark"`
	Unit      string `json:"unit"`
}

func (k RowKey) String() string { return k.Benchmark + " (" + k.Unit + ")" }

// CompareRow is one row of Judge.Compare.
type CompareRow struct {
	Comparison
	// A and B are the two kernels' centres (median of per-boot medians).
	A       float64 `json:"a"`
	B       float64 `json:"b"`
	BootsA  int     `json:"boots_a"`
	BootsB  int     `json:"boots_b"`
	Control bool    `json:"control"` // a benchmark that measures the harness
	// HarnessChanged: a control that moved under instruction counts, the
	// kernel's cost of the harness, not drift (compare.Row.HarnessChanged).
	HarnessChanged bool `json:"harness_changed,omitempty"`
}

// Classify decides a candidate from its comparisons with the endpoints on
// the signal rows (those where the endpoints differ):
//
//   - Good when on every signal row it is SAME as good and DIFFERENT from bad;
//   - Bad when on every signal row it is DIFFERENT from good and SAME as bad;
//   - otherwise undecided (ok false): more boots may decide it, and at the
//     boot cap the step is skipped. A candidate that is DIFFERENT from both
//     lies between them or elsewhere: perhaps a second change in the range.
func classifyRows(rows []RowVerdict) (class Class, ok bool, reason string) {
	good, bad := 0, 0
	var parts []string
	for _, r := range rows {
		switch {
		case r.VsGood.Verdict == compare.Same && r.VsBad.Verdict == compare.Different:
			good++
		case r.VsGood.Verdict == compare.Different && r.VsBad.Verdict == compare.Same:
			bad++
		}
		parts = append(parts, fmt.Sprintf("%s: vs good %s, vs bad %s", r.Benchmark, r.VsGood, r.VsBad))
	}
	detail := strings.Join(parts, "; ")
	switch {
	case len(rows) > 0 && good == len(rows):
		return Good, true, detail
	case len(rows) > 0 && bad == len(rows):
		return Bad, true, detail
	}
	return Skip, false, detail
}

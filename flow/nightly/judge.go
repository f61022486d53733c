package nightly

import (
	"fmt"
	"math"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// Verdicts are a night's comparisons, with compare's statistics: the
// data behind its alerts and rows.
type Verdicts struct {
	// VsReference compares the tip (B) with the reference (A).
	VsReference *compare.Report
	// VsPrevious compares the tip (B) with the last measured tip (A), or
	// with it rebuilt tonight when the toolchain changed; nil on a series'
	// first night.
	VsPrevious *compare.Report
	// Host compares tonight's reference (B) with the last measured
	// night's (A): a change there is the host's or the harness's.
	Host *compare.Report
	// Previous is the night VsPrevious and Host compare with.
	Previous *history.Night
}

// judge compares the night's boots and sets its rows, outcome and alerts.
func (r *seriesRun) judge(ref, tip, prevTip, prevRef [][]*benchfmt.Result, prev history.Night) error {
	opts := r.compareOptions()
	v := &r.n.Verdicts
	var err error
	if v.VsReference, v.VsPrevious, err = judgeTips(ref, tip, prevTip, opts); err != nil {
		return err
	}
	if v.VsPrevious != nil {
		v.Previous = &prev
	}
	if len(prevRef) > 0 {
		if v.Host, err = compare.Build(sides(prevRef, ref), opts); err != nil {
			return fmt.Errorf("compare the reference with last night's: %w", err)
		}
		v.Previous = &prev
	}
	r.n.Rows = nightRows(v.VsReference, v.VsPrevious)
	r.n.Outcome = Quiet
	if v.VsPrevious != nil {
		switch v.VsPrevious.Outcome(compare.FailOnRegression) {
		case compare.Regression:
			r.n.Outcome = Regression
		case compare.Inconclusive:
			r.n.Outcome = Inconclusive
			r.n.Night.Status = history.StatusInconclusive
			r.n.Night.Reason = "the tip could not be told apart from the last tip, nor shown the same"
		}
		for _, row := range v.VsPrevious.Rows {
			if !row.Control && row.Verdict == compare.Different {
				what := "improvement"
				if row.Worse() {
					what = "regression"
				}
				r.n.Alerts = append(r.n.Alerts, fmt.Sprintf("%s against the last tip (%s, %s): %s %+.2f%% %s", what, prev.Date,
					describe(prev.Tip), row.Benchmark, row.DeltaPct, row.Unit))
			}
		}
	}
	if v.Host != nil {
		for _, row := range v.Host.Rows {
			if row.Verdict == compare.Different {
				r.n.Alerts = append(r.n.Alerts, fmt.Sprintf("host or harness changed: the reference moved since %s: %s %+.2f%% %s",
					prev.Date, row.Benchmark, row.DeltaPct, row.Unit))
				r.n.Outcome = max(r.n.Outcome, Inconclusive)
			}
		}
	}
	return nil
}

// judgeTips is the one rule that turns a night's boots into its verdicts,
// for measured and imported nights alike: the tip against the reference
// (nil without reference boots) and against the last tip (nil without
// one), by compare's statistics with opts.
func judgeTips(ref, tip, prevTip [][]*benchfmt.Result, opts compare.Options) (vsRef, vsPrev *compare.Report, err error) {
	if len(ref) > 0 {
		if vsRef, err = compare.Build(sides(ref, tip), opts); err != nil {
			return nil, nil, fmt.Errorf("compare the tip with the reference: %w", err)
		}
	}
	if len(prevTip) > 0 {
		if vsPrev, err = compare.Build(sides(prevTip, tip), opts); err != nil {
			return nil, nil, fmt.Errorf("compare the tip with the last tip: %w", err)
		}
	}
	return vsRef, vsPrev, nil
}

// sides labels boots of two kernels as sides A and B of a comparison.
func sides(a, b [][]*benchfmt.Result) []*benchfmt.Result {
	var out []*benchfmt.Result
	for _, boot := range a {
		out = append(out, compare.AsSide(boot, compare.SideA)...)
	}
	for _, boot := range b {
		out = append(out, compare.AsSide(boot, compare.SideB)...)
	}
	return out
}

// nightRows turns a night's comparisons into the rows the history keeps:
// per benchmark and unit, the tip and the reference, their ratio (the
// kernel line) and the night's verdicts.
func nightRows(vsRef, vsPrev *compare.Report) []history.NightRow {
	prev := previousRows(vsPrev)
	var rows []history.NightRow
	for _, row := range vsRef.Rows {
		if !row.Compared() {
			continue
		}
		m := history.Metric{Benchmark: row.Benchmark, Unit: row.Unit}
		nr := history.NightRow{Metric: m, Tip: estimate(row.B), Reference: estimate(row.A), Ratio: math.NaN(), VsReference: comparison(row)}
		if row.A.Center != 0 {
			nr.Ratio = row.B.Center / row.A.Center
		}
		if p, ok := prev[m]; ok && p.Compared() {
			nr.VsPrevious = comparison(p)
		}
		rows = append(rows, nr)
	}
	return rows
}

// previousRows are the rows of the comparison with the last tip (nil:
// none) by metric.
func previousRows(vsPrev *compare.Report) map[history.Metric]compare.Row {
	prev := map[history.Metric]compare.Row{}
	if vsPrev != nil {
		for _, row := range vsPrev.Rows {
			prev[history.Metric{Benchmark: row.Benchmark, Unit: row.Unit}] = row
		}
	}
	return prev
}

func estimate(s compare.Summary) history.Estimate {
	return history.Estimate{Center: s.Center, Lo: s.Lo, Hi: s.Hi, Boots: s.Boots}
}

func comparison(row compare.Row) *history.Comparison {
	return &history.Comparison{Verdict: row.Verdict, DeltaPct: row.DeltaPct, P: row.ClaimP()}
}

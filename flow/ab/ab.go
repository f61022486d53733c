// Package ab runs an A/B comparison of two kernels to its verdict: it
// starts a measurement of both (measure.Setup.Start), boots them through
// the setup's executor in interleaved rounds (or pairs), writes every
// completed boot to a results file as it ends, looks after every round
// with the one adaptive rule of package compare, and returns the report
// with what the renderers need to know about the run.
//
// Only the command imports it: lpmbisect compare (and stat, which
// re-decides a results file) is this package with flags, also when a fleet
// client's setup boots remotely. nightly and calibrate do not go through
// it: they start their own measurements with measure.Setup.Start and judge
// with compare (a night at a fixed number of boots, a calibration of a
// kernel against itself). The results file is written under
// FILE.partial while boots run and renamed to FILE only when the run ends
// as planned, so an interrupted run keeps its finished boots and a file
// under its final name is always complete; the insight block, when asked
// for, is kept beside it (insight.DiffFile), where Restat's callers find
// it.
package ab

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/wire"
)

// ErrResultsFile is wrapped when the results file (or the run directory
// that holds it) cannot be created: a mistake of the caller's, found before
// any boot.
var ErrResultsFile = errors.New("cannot write the results")

// Options describe one comparison.
type Options struct {
	Setup   *measure.Setup
	Kernels [2]string // A and B: anything kernel.Resolve accepts
	// Compare are the statistics; Compare.MaxBoots 0 makes a fixed-size
	// comparison of Start boots (one look with all of α), otherwise Start
	// is the first look of an adaptive run capped at MaxBoots.
	Compare compare.Options
	Start   int
	// Selected are the benchmarks whose UNKNOWN verdicts call for more
	// boots (nil: every benchmark that is not a control).
	Selected *regexp.Regexp
	// Seed orders the boots of each round (recorded in the results).
	Seed uint64
	// Results is the results file ("": <run dir>/results.txt).
	Results string
	// Labels are extra configuration lines of every result (commit, date).
	Labels map[string]string
	// OnRunner, when set, is called with the runner before the first boot
	// (to attach progress reporting).
	OnRunner func(*measure.Runner)
	// Command is the command line recorded in the report.
	Command string
	// Insight asks for the insight block beside the verdicts
	// (Result.Meta.Insight); nil leaves it out.
	Insight *measure.Insight
}

// Result is a finished (or interrupted) comparison.
type Result struct {
	Report  *compare.Report // nil when no look happened
	Meta    view.Meta
	Summary *measure.Summary
	Sides   []*measure.Side
	// Results is where the results are: FILE when the run ended as
	// planned, FILE.partial when not.
	Results string
}

// Run runs the comparison. Errors before the first boot are the caller's
// (kernels that are not kernels, an unwritable results file); an error
// later comes with the Result of what completed.
func Run(ctx context.Context, o Options) (*Result, error) {
	s := o.Setup
	runner, err := s.Start(o.Kernels[:], measure.RunOptions{Seed: o.Seed, Labels: o.Labels, Insight: o.Insight})
	if err != nil {
		return nil, err
	}
	sides := runner.Sides
	path := o.Results
	if path == "" {
		if err := os.MkdirAll(s.RunDir, 0o755); err != nil {
			return nil, fmt.Errorf("%w: run directory: %w", ErrResultsFile, err)
		}
		path = filepath.Join(s.RunDir, "results.txt")
	}
	out, err := measure.CreateResultsFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrResultsFile, err)
	}
	start := time.Now()
	runner.Sink = out
	if o.OnRunner != nil {
		o.OnRunner(runner)
	}
	var selected func(string) bool
	if o.Selected != nil {
		selected = o.Selected.MatchString
	}
	rep, runErr := compare.Decide(ctx, runner, o.Compare, o.Start, selected)
	s.Finish(runner)
	res := &Result{Report: rep, Summary: runner.Summary(), Sides: sides}
	res.Results, err = s.CloseResults(out, runErr)
	if runErr != nil {
		return res, runErr
	}
	if err != nil {
		return res, err
	}
	seed := int64(o.Seed)
	res.Meta = view.Meta{Seed: &seed, Samples: s.Plan.Samples, Date: start, Command: o.Command,
		ResultsFile: res.Results, FailedBoots: len(res.Summary.Failed), BootCost: measure.BootCosts(runner.Results()), CPU: sideCPUs(runner.Results())}
	for i, side := range sides {
		*[]*view.KernelInfo{&res.Meta.A, &res.Meta.B}[i] = view.KernelInfo{Input: side.Kernel.Input, Release: side.Label, SHA256: side.Kernel.SHA256}
	}
	if len(res.Summary.Accels) > 0 {
		res.Meta.Accel = res.Summary.Accels[0]
	}
	if d := runner.InsightDiff(); d != nil {
		measure.AttributeTimed(d, rep)
		keepInsight(res.Results, d, s.Log)
		res.AddInsight(d)
	}
	return res, nil
}

// AddInsight puts the insight block d into the result: into Meta, and its
// memory counts (insight.Diff.MemoryRows) as rows of the report beside
// the timed ones, where every format shows them and Outcome weighs them
// (compare.Row.Exact). A nil d adds nothing.
func (r *Result) AddInsight(d *insight.Diff) {
	if d == nil {
		return
	}
	r.Meta.Insight = d
	if r.Report != nil {
		r.Report.Rows = append(r.Report.Rows, d.MemoryRows()...)
	}
}

// keepInsight keeps the insight block d beside the results file, where
// stat finds it (insight.DiffFile); failing to is worth a warning, not the
// comparison.
func keepInsight(results string, d *insight.Diff, log *log.Logger) {
	if d == nil {
		return
	}
	if err := insight.WriteDiffFile(insight.DiffFile(results), d); err != nil {
		log.Printf("warning: insight block not kept beside the results: %v", err)
	}
}

// SavedInsight reads the insight block kept beside the results file
// (keepInsight): nil, and no error, when there is none.
func SavedInsight(results string) (*insight.Diff, error) {
	d, err := insight.ReadDiffFile(insight.DiffFile(results))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return d, err
}

// sideCPUs returns the CPU of sides "A" and "B" of results (view.SideCPU),
// from each side's first result (every boot of a side runs one model and
// one kernel, which compare.Build checks); nil for a side without results
// or without a model and vulnerabilities to tell.
func sideCPUs(results []*benchfmt.Result) [2]*view.SideCPU {
	var out [2]*view.SideCPU
	for _, r := range results {
		side := 0
		switch r.GetConfig(wire.KeySide) {
		case compare.SideA:
		case compare.SideB:
			side = 1
		default:
			continue
		}
		if out[side] != nil {
			continue
		}
		c := &view.SideCPU{Model: r.GetConfig(wire.KeyCPUModel), Append: r.GetConfig(wire.KeyAppend),
			Vulnerabilities: wire.ParseVulnerabilities(r.GetConfig(wire.KeyVulnerabilities))}
		if c.Model == "" && len(c.Vulnerabilities) == 0 {
			continue
		}
		if p, ok := vmrunner.CPUProfileOfModel(wire.Accel(r.GetConfig(wire.KeyAccel)), c.Model); ok && c.Model != "" {
			c.Profile = p.Label()
		}
		c.ReturnThunk = wire.ReturnThunk(c.Vulnerabilities)
		out[side] = c
	}
	return out
}

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
	"strings"
	"time"

	"github.com/lpmbisect/lpmbisect/compare"
	"github.com/lpmbisect/lpmbisect/insight"
	"github.com/lpmbisect/lpmbisect/kernel"
	"github.com/lpmbisect/lpmbisect/measure"
	"github.com/lpmbisect/lpmbisect/view"
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
	// Hooks, when set, is called with the runner before the first boot
	// (to attach progress reporting).
	Hooks func(*measure.Runner)
	// Command is the command line recorded in the report.
	Command string
	// Insight asks for the insight block beside the verdicts
	// (Result.Meta.Insight); nil leaves it out.
	Insight *Insight
}

// Insight says how to explain a comparison from the kernels themselves
// (package insight). Each side's symbols come from the best source
// available: the vmlinux or debug package given for it, a build
// directory's vmlinux, else the kallsyms the guest read. A side without a
// source says so in one line; it never fails the comparison.
type Insight struct {
	// Given are the sources given per side (Vmlinux, DebugPackage);
	// Image and the guest's findings are filled in by Run.
	Given [2]insight.Input
	// Options select the symbols of the size diff and the functions whose
	// calls are listed.
	Options insight.Options
	// Guest arms the guest's insight pass in the first boot of each side,
	// after its timed samples: /proc/kallsyms, the benchmark programs'
	// sizes and JITed code, and calls counted per operation (of
	// insight.CountTargets).
	Guest bool
	// ProfilePeriod, when not 0, adds the profile pass to the guest's
	// pass, sampling every ProfilePeriod ns of guest clock (instructions
	// under icount; see wire.ProfileDoc).
	ProfilePeriod int
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
	o.Insight = o.Insight.forSetup(s)
	runner, err := s.Start(o.Kernels[:], measure.RunOptions{Seed: o.Seed, Labels: o.Labels})
	if err != nil {
		return nil, err
	}
	sides := runner.Sides
	path := o.Results
	if path == "" {
		if err := os.MkdirAll(s.RunDir, 0o755); err != nil {
			return nil, fmt.Errorf("%w: run directory: %v (choose a writable one)", ErrResultsFile, err)
		}
		path = filepath.Join(s.RunDir, "results.txt")
	}
	out, err := measure.CreateResultsFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrResultsFile, err)
	}
	start := time.Now()
	runner.Sink = out
	var static [2]*insight.Side
	if o.Insight != nil {
		static = o.Insight.static(sides)
		if err := o.Insight.arm(runner, static); err != nil {
			return nil, err
		}
	}
	if o.Hooks != nil {
		o.Hooks(runner)
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
		ResultsFile: res.Results, FailedBoots: len(res.Summary.Failed), BootCost: wire.BootCosts(runner.Results())}
	for i, side := range sides {
		*[]*view.KernelInfo{&res.Meta.A, &res.Meta.B}[i] = view.KernelInfo{Input: side.Kernel.Input, Release: side.Label, SHA256: side.Kernel.SHA256}
	}
	if len(res.Summary.Accels) > 0 {
		res.Meta.Accel = res.Summary.Accels[0]
	}
	if o.Insight != nil {
		res.Meta.Insight = o.Insight.diff(sides, static)
		attributeTimed(res.Meta.Insight, rep)
		keepInsight(res.Results, res.Meta.Insight, s.Log)
	}
	return res, nil
}

// attributeTimed makes the profile rows of d split the verdict's centres
// (the timed instructions per operation of each side) by share.
func attributeTimed(d *insight.Diff, rep *compare.Report) {
	if d == nil || rep == nil {
		return
	}
	d.AttributeTimed(func(bench string, side int) (float64, string, bool) {
		for _, r := range rep.Rows {
			if r.Benchmark != bench || !strings.HasSuffix(r.Unit, "/op") {
				continue
			}
			s := [2]compare.Summary{r.A, r.B}[side]
			return s.Center, r.Unit, s.Boots > 0
		}
		return 0, "", false
	})
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

// forSetup is the insight a comparison booted by s can have: without the
// guest's pass when s boots on a fleet, whose jobs bring back the timed
// results only (the pass would cost each side's first boot its time for
// nothing).
func (in *Insight) forSetup(s *measure.Setup) *Insight {
	if in == nil || !in.Guest || s.Remote == nil {
		return in
	}
	c := *in
	c.Guest, c.ProfilePeriod = false, 0
	s.Log.Printf("insight from static sources only, and no profile: boots on a fleet do not bring back the guest's pass (the profile is local only)")
	return &c
}

// input is what is known of side i before any boot.
func (in *Insight) input(i int, side *measure.Side) insight.Input {
	given := in.Given[i]
	given.Image, given.Payload = side.Kernel.Image, side.BootImage // the PVH boot's ELF, if any: not decompressed again
	if given.Vmlinux == "" && given.DebugPackage == "" {
		given.Vmlinux = kernel.BuildVmlinux(side.Kernel.Image)
	}
	return given
}

// static loads the sides that have a static symbol source, before the
// boots: their callees join the functions the guest counts. A side
// without one is nil.
func (in *Insight) static(sides []*measure.Side) [2]*insight.Side {
	var out [2]*insight.Side
	for i, side := range sides[:min(len(sides), 2)] {
		if given := in.input(i, side); given.Vmlinux != "" || given.DebugPackage != "" {
			if s := insight.Load(given, in.Options); s.Symbols != nil {
				out[i] = s
			}
		}
	}
	return out
}

// arm adds the guest's insight pass to the runner's plan, when asked for:
// the functions to count, and for each side with a static symbol source
// that its guest keep kallsyms, which the host would throw away (Debian's
// packages without their -dbg package have no such source: kallsyms is
// all there is).
func (in *Insight) arm(runner *measure.Runner, static [2]*insight.Side) error {
	if !in.Guest {
		return nil
	}
	args, err := wire.InsightArgs(insight.CountTargets(in.Options, static[:]...))
	if err != nil {
		return fmt.Errorf("insight: %w", err)
	}
	runner.GuestArgs = append(runner.GuestArgs, args...)
	if in.ProfilePeriod > 0 {
		arg, err := wire.ProfileArg(in.ProfilePeriod)
		if err != nil {
			return fmt.Errorf("profile: %w", err)
		}
		runner.GuestArgs = append(runner.GuestArgs, arg)
	}
	for i, side := range runner.Sides[:min(len(runner.Sides), 2)] {
		side.StaticSymbols = static[i] != nil
	}
	return nil
}

// diff builds the insight block once the boots are done, adding what
// each side's guest reported; a side's static load is reused.
func (in *Insight) diff(sides []*measure.Side, static [2]*insight.Side) *insight.Diff {
	var loaded [2]*insight.Side
	for i, side := range sides[:min(len(sides), 2)] {
		given := in.input(i, side)
		var problem string
		if side.Insight != nil {
			doc, err := wire.DecodeInsight(side.Insight)
			if err != nil {
				problem = "guest insight: " + err.Error()
			} else {
				given.Programs, given.Counts, given.Profile = doc.Programs, doc.Counts, doc.Profile
				if static[i] == nil && doc.Kallsyms != "" {
					given.Kallsyms = []byte(doc.Kallsyms)
				}
				if doc.KallsymsProblem != "" {
					problem = "guest kallsyms: " + doc.KallsymsProblem
				}
			}
		} else if side.InsightProblem != "" {
			problem = "guest insight: " + side.InsightProblem
		}
		if s := static[i]; s != nil {
			s.Programs, s.Counts = given.Programs, given.Counts
			s.AddProfile(given.Profile)
			loaded[i] = s
		} else {
			loaded[i] = insight.Load(given, in.Options)
		}
		if problem != "" {
			loaded[i].Problems = append(loaded[i].Problems, problem)
		}
	}
	if loaded[0] == nil || loaded[1] == nil {
		return nil
	}
	return insight.Compare(loaded[0], loaded[1], in.Options)
}

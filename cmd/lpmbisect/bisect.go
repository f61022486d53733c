package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/bisect"
	"github.com/lpmbisect/lpmbisect/compare"
	"github.com/lpmbisect/lpmbisect/internal/git"
	"github.com/lpmbisect/lpmbisect/measure"
	"github.com/lpmbisect/lpmbisect/report"
)

// Exit codes of bisect-run, the git bisect run contract. git marks the
// commit good on 0, bad on 1–127 except 125, skips it on 125, and aborts the
// bisection on 128–255. bisect-run only ever exits with these:
const (
	exitRunGood  = 0   // the commit matches the good endpoint
	exitRunBad   = 1   // the commit matches the bad endpoint
	exitRunSkip  = 125 // it did not build or boot, or stayed UNKNOWN at the boot cap
	exitRunAbort = 255 // stop the bisection: usage error, endpoints not different, host failure
	// 130 and 143 (SIGINT, SIGTERM) abort it too.
)

// bisectOpts are the flags of both bisect commands.
func bisectOpts(r *run) []opt {
	m, s, b := &r.Measure, &r.Stats, &r.Bisect
	return append(append(append(append(vmOpts(r), buildOpts(r)...), fleetOpts(r)...), fleetBuildOpts(r)...),
		opt{name: "build-command", ptr: &r.Build.Command, usage: "build with this shell command instead (run in the tree; prints the KERNEL it built as its last line; non-zero exit: the commit does not build)"},
		opt{name: "alpha", ptr: &s.Alpha, usage: "error rate of each comparison's SAME and DIFFERENT claims"},
		minEffectOpt(r),
		ruleOpt(r),
		opt{name: "boots", ptr: &m.Boots, usage: "boots per look at a kernel (0: the fewest with which one look can decide, given --alpha and --max-boots)"},
		opt{name: "max-boots", ptr: &m.MaxBoots, usage: "boots per kernel at most while its verdict is UNKNOWN; a candidate still UNKNOWN is skipped"},
		opt{name: "reverse", ptr: &b.Reverse, usage: "find an improvement: the bad (newer) endpoint is the faster one"},
		opt{name: "state", ptr: &b.State, usage: "state directory: measurements, kept kernels, step logs (default: <git-dir>/lpmbisect, or <cache-dir>/bisect for --images)"},
	)
}

// bisectSetup makes the bisection's setup from the flags (controls: with
// the harness controls in the plan).
func (r *run) bisectSetup(controls bool) (*bisect.Setup, error) {
	s, err := r.setup(false, controls)
	if err != nil {
		return nil, err
	}
	auto, err := r.parseMinEffect()
	if err != nil {
		return nil, err
	}
	if a := r.Stats.Alpha; !(a > 0 && a < 1) {
		return nil, usageError("--alpha %v must be between 0 and 1", a)
	}
	if err := r.checkRule(); err != nil {
		return nil, err
	}
	judge := bisect.Judge{Alpha: r.Stats.Alpha, MinEffectPct: r.Stats.MinEffect}
	opts := judge.Options(0)
	boots := r.Measure.Boots
	if r.calibrated(s, &opts, auto) && boots == 0 {
		boots = compare.DeterministicBoots
	}
	judge.Bounds, judge.MinEffects = opts.Bounds, opts.MinEffects
	bench, err := bisect.NewBench(s, judge, boots, r.Measure.MaxBoots, r.Bisect.Reverse)
	if err != nil {
		return nil, usageError("%v (check --boots, --max-boots and --alpha)", err)
	}
	o, err := r.buildOptions()
	if err != nil {
		return nil, err
	}
	return r.useFleetBuilds(&bisect.Setup{Bench: bench, Measure: s, BuildCommand: r.Build.Command, Build: o, RecheckBoots: r.Bisect.RecheckBoots, Log: r.log})
}

func bisectRunCommand(r *run) *cli.Command {
	opts := append(bisectOpts(r),
		opt{name: "good", ptr: &r.Bisect.Good, usage: "good endpoint: KERNEL or revision (default: git bisect's good commit)"},
		opt{name: "bad", ptr: &r.Bisect.Bad, usage: "bad endpoint: KERNEL or revision (default: git bisect's bad commit)"},
		opt{name: "src", ptr: &r.src, usage: "the checked-out tree"})
	cmd := command("bisect-run", "one git bisect run step: build the checked-out tree, measure it, exit 0 (good), 1 (bad) or 125 (skip)", "", opts, func(c *cli.Context) (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = &exitError{code: exitRunAbort, err: fmt.Errorf("internal error: %v\n%s", p, debug.Stack())}
			}
		}()
		v, err := bisectRunStep(c, r)
		return bisectRunExit(c, v, err)
	})
	cmd.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
		return &exitError{code: exitRunAbort, err: fmt.Errorf("%v (see --help; exit %d aborts git bisect run)", err, exitRunAbort)}
	}
	return cmd
}

// bisectRunExit maps a step's outcome to git bisect run's exit codes.
func bisectRunExit(c *cli.Context, v bisect.Verdict, err error) error {
	var se *signalError
	switch {
	case errors.As(err, &se):
		return err
	case err != nil:
		return &exitError{code: exitRunAbort, err: fmt.Errorf("%v (exit %d aborts git bisect run)", err, exitRunAbort)}
	}
	switch v.Class {
	case bisect.Good:
		fmt.Fprintf(c.App.ErrWriter, "lpmbisect: good (exit %d): %s\n", exitRunGood, v.Reason)
		return nil
	case bisect.Bad:
		return &exitError{code: exitRunBad, err: fmt.Errorf("bad (exit %d): %s", exitRunBad, v.Reason)}
	}
	return &exitError{code: exitRunSkip, err: fmt.Errorf("skip (exit %d): %s", exitRunSkip, v.Reason)}
}

func bisectRunStep(c *cli.Context, r *run) (bisect.Verdict, error) {
	if c.NArg() > 0 {
		return bisect.Verdict{}, usageError("bisect-run takes no arguments, got %q", c.Args().Slice())
	}
	setup, err := r.bisectSetup(false)
	if err != nil {
		return bisect.Verdict{}, err
	}
	v, err := setup.Step(c.Context, r.src, r.Bisect.Good, r.Bisect.Bad, r.Bisect.State, r.Build.BuildDir)
	return v, bisectError(err, r)
}

func bisectCommand(r *run) *cli.Command {
	b := &r.Bisect
	opts := append(bisectOpts(r),
		opt{name: "repo", ptr: &b.Repo, usage: "kernel git repository to bisect"},
		opt{name: "good", ptr: &b.Good, usage: "good (older) revision"},
		opt{name: "bad", ptr: &b.Bad, usage: "bad (newer) revision"},
		opt{name: "images", ptr: &b.Images, usage: "ordered kernels to search instead of a repository: files, a directory, or a list file (repeatable)"},
		opt{name: "recheck-boots", ptr: &b.RecheckBoots, usage: "boots added to the culprit and its parent to re-check them (0: no re-check)"},
		opt{name: "html", ptr: &r.html, usage: "also write the report as HTML to this file"})
	return command("bisect", "find the commit (or prebuilt kernel) that changed a benchmark, with statistics", "", opts, func(c *cli.Context) error {
		if c.NArg() > 0 {
			return usageError("bisect takes no arguments (kernels go to --images), got %q", c.Args().Slice())
		}
		images := b.Images
		if len(images) == 0 && b.Repo == "" {
			for _, k := range r.Kernels {
				images = append(images, k.Path)
			}
		}
		switch {
		case len(images) > 0 && b.Repo != "":
			return usageError("give --repo or --images, not both")
		case len(images) == 0 && b.Repo == "":
			return usageError("bisect needs --repo DIR --good REV --bad REV, or --images LIST")
		case b.RecheckBoots < 0:
			return usageError("--recheck-boots must not be negative")
		}
		if r.html != "" {
			if err := measure.CheckWritable(r.html); err != nil {
				return usageError("--html: %v", err)
			}
		}
		setup, err := r.bisectSetup(false)
		if err != nil {
			return err
		}
		var res *bisect.Result
		var st *bisect.State
		switch {
		case len(images) > 0:
			res, st, err = setup.Images(c.Context, images, b.State)
		case b.Good == "" || b.Bad == "":
			return usageError("--repo needs --good REV and --bad REV")
		default:
			res, st, err = setup.Git(c.Context, b.Repo, b.Good, b.Bad, b.State, r.Build.BuildDir)
		}
		if err != nil {
			return bisectError(err, r)
		}
		return bisectReport(c, r, setup, st, res)
	})
}

// bisectError maps a failed bisection to an exit code, with the flag that
// would fix it.
func bisectError(err error, r *run) error {
	var ee *exitError
	var se *signalError
	switch {
	case err == nil, errors.As(err, &ee), errors.As(err, &se):
		return err
	case errors.Is(err, bisect.ErrEndpointsNotDifferent):
		return &exitError{code: exitInconclusive, err: fmt.Errorf("%w (raise --max-boots or lower --min-effect)", err)}
	case errors.Is(err, bisect.ErrWrongDirection) && r.Bisect.Reverse:
		return usageError("%v (drop --reverse)", err)
	case errors.Is(err, bisect.ErrWrongDirection):
		return usageError("%v (add --reverse)", err)
	case errors.Is(err, bisect.ErrNoEndpoint):
		return usageError("%v (give --good and --bad, or start git bisect with both)", err)
	case errors.Is(err, bisect.ErrTooFewImages), errors.Is(err, fs.ErrNotExist) && len(r.Bisect.Images) > 0:
		return usageError("--images: %v", err)
	case errors.Is(err, bisect.ErrOtherBisection), errors.Is(err, git.ErrGit), errors.Is(err, bisect.ErrEndpointBroken), errors.Is(err, git.ErrNotRepo):
		return usageError("%v", err)
	}
	return err
}

// bisectReport prints the report, writes it into the state directory (and
// --html), and returns the exit code's error.
func bisectReport(c *cli.Context, r *run, setup *bisect.Setup, st *bisect.State, res *bisect.Result) error {
	var extra []string
	if r.html != "" {
		extra = append(extra, r.html)
	}
	run := report.Meta{Accel: r.Measure.Accel, Samples: r.Bench.Samples, Command: strings.Join(os.Args, " "), Date: time.Now()}
	rep := bisect.Report{State: st, Result: res}
	files, err := rep.WriteReports(c.App.Writer, setup.Bench, run, extra...)
	if files != nil && files.RecheckErr != nil {
		r.log.Printf("warning: no comparison report of the re-check: %v", files.RecheckErr)
	}
	if err != nil {
		return usageError("%v (choose a writable --html or --state)", err)
	}
	if r.html != "" {
		r.log.Printf("HTML report in %s", r.html)
	}
	if res.Found() {
		return nil
	}
	return &exitError{code: exitInconclusive, err: fmt.Errorf("inconclusive: %s", rep.Verdict())}
}

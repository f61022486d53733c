package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/config"
	"github.com/lpmbisect/lpmbisect/config/cliflag"
	"github.com/lpmbisect/lpmbisect/flow/bisect"
	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/internal/cachefile"
	"github.com/lpmbisect/lpmbisect/internal/git"
	"github.com/lpmbisect/lpmbisect/internal/interrupt"
	"github.com/lpmbisect/lpmbisect/present/report"
	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// exitRunAbort is bisect-run's exit code for what must stop git bisect run
// (campaign.ExitAbort; the others are campaign.Class.ExitCode).
const exitRunAbort = campaign.ExitAbort

// bisectOpts are the flags of both bisect commands.
func bisectOpts(r *invocation) []opt {
	k := func(key, usage string) opt { return cliflag.Key(r.File, key, usage) }
	return append(append(append(append(append(vmOpts(r), buildOpts(r)...), fleetOpts(r)...), fleetBuildOpts(r)...), cliflag.Keys(r.File, "stats", "bisect.reverse", "bisect.state")...),
		k("build.command", "build with this shell command instead (run in the tree; prints the KERNEL it built as its last line; non-zero exit: the commit does not build)"),
		k("stats.alpha", "error rate of each comparison's SAME and DIFFERENT claims"),
		minEffectOpt(r),
		k("measure.boots", "boots per look at a kernel (0: the fewest with which one look can decide, given --alpha and --max-boots)"),
		k("measure.max_boots", "boots per kernel at most while its verdict is UNKNOWN; a candidate still UNKNOWN is skipped"))
}

// bisectSetup makes the bisection's setup from the flags (controls: with
// the harness controls in the plan); probe are the kernels known before
// anything is built (an endpoint on disk, the first of --images, a
// series' reference), which probe KVM when auto must decide it. Without
// one, a KVM whose verdict is not kept is not probed, and auto is icount.
func (r *invocation) bisectSetup(ctx context.Context, controls bool, probe ...string) (*bisect.Bisector, error) {
	// The flags first: the setup may boot probe kernels.
	auto, err := r.stats()
	if err != nil {
		return nil, err
	}
	if _, err := r.insightInput(); err != nil {
		return nil, err
	}
	s, err := r.setup(false, controls, probe...)
	if err != nil {
		return nil, err
	}
	bs, err := bisect.NewBisector(ctx, s, campaign.FromConfig(r.File, auto))
	if err != nil {
		return nil, usageError("%v (check --boots, --max-boots and --alpha)", err)
	}
	o, err := r.buildOptions()
	if err != nil {
		return nil, err
	}
	bs.BuildCommand, bs.Build = r.Build.Command, o
	// The re-check's boots explain the culprit (bisect) and the tips'
	// boots a night's mail (nightly): bisect-run re-checks nothing.
	if bs.Bench.Insight, err = r.compareInsight(s.CacheDir, s.Plan, false); err != nil {
		return nil, err
	}
	return r.useFleetBuilds(bs)
}

func bisectRunCommand(r *invocation) *cli.Command {
	opts := append(bisectOpts(r),
		cliflag.Key(r.File, "bisect.good", "good endpoint: KERNEL or revision (default: git bisect's good commit)"),
		cliflag.Key(r.File, "bisect.bad", "bad endpoint: KERNEL or revision (default: git bisect's bad commit)"),
		opt{Name: "src", Ptr: &r.src, Usage: "the checked-out tree"})
	return command("bisect-run", "one git bisect run step: build the checked-out tree, measure it, exit 0 (good), 1 (bad) or 125 (skip)", "", opts, func(c *cli.Context) error {
		if c.NArg() > 0 {
			return usageError("bisect-run takes no arguments, got %q", c.Args().Slice())
		}
		setup, err := r.bisectSetup(c.Context, false, bisect.KernelEndpoints(r.Bisect.Good, r.Bisect.Bad)...)
		if err != nil {
			return err
		}
		v, err := setup.Step(c.Context, r.src, r.Bisect.Good, r.Bisect.Bad, r.Bisect.State, r.Build.BuildDir)
		if err != nil {
			return bisectError(err, r)
		}
		code := v.Class.ExitCode()
		if code == campaign.ExitGood {
			fmt.Fprintf(c.App.ErrWriter, "lpmbisect: %v (exit %d): %s\n", v.Class, code, v.Reason)
			return nil
		}
		return &exitError{code: code, err: fmt.Errorf("%v (exit %d): %s", v.Class, code, v.Reason), verdict: true}
	})
}

// bisectRunCode keeps git bisect run's contract for bisect-run's exit:
// its verdict's code (0, 1, 125), a signal's, or 255, which stops the
// bisection, for anything else (a usage error's 2 would read as "bad").
func bisectRunCode(err error, code int, hint string) (int, string) {
	var ee *exitError
	var se *interrupt.Error
	if err == nil || errors.As(err, &se) || errors.As(err, &ee) && ee.verdict {
		return code, hint
	}
	return exitRunAbort, fmt.Sprintf("%s (exit %d aborts git bisect run)", hint, exitRunAbort)
}

func bisectCommand(r *invocation) *cli.Command {
	b := &r.Bisect
	opts := append(append(bisectOpts(r), cliflag.Keys(r.File, "bisect.repo", "bisect.images", "bisect.recheck_boots")...), noInsightOpt(r), noProfileOpt(r),
		cliflag.Key(r.File, "bisect.good", "good (older) revision"),
		cliflag.Key(r.File, "bisect.bad", "bad (newer) revision"),
		opt{Name: "html", Ptr: &r.html, Usage: "also write the report as HTML to this file"})
	return command("bisect", "find the commit (or prebuilt kernel) that changed a benchmark, with statistics", "", opts, func(c *cli.Context) error {
		if c.NArg() > 0 {
			return usageError("bisect takes no arguments (kernels go to --images), got %q", c.Args().Slice())
		}
		images, err := r.BisectImages()
		switch {
		case errors.Is(err, config.ErrRepoAndImages):
			return usageError("give --repo or --images, not both")
		case errors.Is(err, config.ErrNothingToBisect):
			return usageError("bisect needs --repo DIR --good REV --bad REV, or --images LIST")
		case errors.Is(err, config.ErrNoRevisions):
			return usageError("--repo needs --good REV and --bad REV")
		case err != nil:
			return flagError(err)
		}
		if err := writable("html", r.html); err != nil {
			return err
		}
		// The good end of --images probes KVM. A list that does not
		// expand probes nothing: the search, which expands it again,
		// reports it once the other flags are checked.
		kernels, _ := bisect.ExpandImages(images)
		setup, err := r.bisectSetup(c.Context, false, kernels[:min(1, len(kernels))]...)
		if err != nil {
			return err
		}
		res, st, err := setup.Search(c.Context, bisect.Target{Images: images, Repo: b.Repo, Good: b.Good, Bad: b.Bad}, b.State, r.Build.BuildDir)
		if err != nil {
			return bisectError(err, r)
		}
		rep := bisect.Report{State: st, Result: res}
		if err := writeBisectionReports(c.App.Writer, setup, rep, commandLine(os.Args), r.html); err != nil {
			return usageError("%v (choose a writable --html or --state)", err)
		}
		if err := rep.Outcome(); err != nil {
			return &exitError{code: exitInconclusive, err: err}
		}
		return nil
	})
}

// writeBisectionReports writes rep's reports (bisect.Report.Files): as
// text to w and to the state directory, as HTML to the state directory and
// to html ("" for none), and beside every HTML page the re-check's
// comparison report, measured by setup and run by command. It logs where
// the HTML went, and a re-check without its own report.
func writeBisectionReports(w io.Writer, setup *bisect.Bisector, rep bisect.Report, command, html string) error {
	var extra []string
	if html != "" {
		extra = append(extra, html)
	}
	recheck, meta, recheckErr := setup.Recheck(rep)
	meta.Command = command
	err := writeBisectionFiles(w, rep, rep.Files(extra...), recheck, meta)
	if setup.Log != nil && recheckErr != nil {
		setup.Log.Printf("warning: no comparison report of the re-check: %v", recheckErr)
	}
	if setup.Log != nil && err == nil && html != "" {
		setup.Log.Printf("HTML report in %s", html)
	}
	return err
}

// writeBisectionFiles renders and writes the files of writeBisectionReports;
// recheck is nil without a comparison report of the re-check.
func writeBisectionFiles(w io.Writer, rep bisect.Report, files bisect.Reports, recheck *compare.Report, meta view.Meta) error {
	var text bytes.Buffer
	v := rep.View("")
	v.Insight = meta.Insight
	if err := report.WriteBisectionText(&text, v); err != nil {
		return err
	}
	if _, err := w.Write(text.Bytes()); err != nil {
		return err
	}
	if err := cachefile.WriteBytes(files.Text, text.Bytes()); err != nil {
		return fmt.Errorf("bisection report: %w", err)
	}
	for _, page := range files.HTML {
		name := ""
		if recheck != nil {
			name = bisect.RecheckPage(page)
			if err := report.WriteHTMLFile(filepath.Join(filepath.Dir(page), name), recheck, meta); err != nil {
				return fmt.Errorf("re-check report: %w", err)
			}
		}
		v := rep.View(name)
		v.Insight = meta.Insight
		if err := cachefile.WriteAtomic(page, func(w io.Writer) error { return report.WriteBisectionHTML(w, v) }); err != nil {
			return fmt.Errorf("bisection report: %w", err)
		}
	}
	return nil
}

// bisectError maps a failed bisection to an exit code, with the flag that
// would fix it.
func bisectError(err error, r *invocation) error {
	var ee *exitError
	var se *interrupt.Error
	switch {
	case err == nil, errors.As(err, &ee), errors.As(err, &se):
		return err
	case errors.Is(err, campaign.ErrEndpointsNotDifferent):
		return &exitError{code: exitInconclusive, err: fmt.Errorf("%w (raise --max-boots or lower --min-effect)", err)}
	case errors.Is(err, campaign.ErrWrongDirection) && r.Bisect.Reverse:
		return usageError("%v (drop --reverse)", err)
	case errors.Is(err, campaign.ErrWrongDirection):
		return usageError("%v (add --reverse)", err)
	case errors.Is(err, bisect.ErrNoEndpoint):
		return usageError("%v (give --good and --bad, or start git bisect with both)", err)
	case errors.Is(err, bisect.ErrTooFewImages), errors.Is(err, fs.ErrNotExist) && len(r.Bisect.Images) > 0:
		return usageError("--images: %v", err)
	case errors.Is(err, campaign.ErrOtherBisection), errors.Is(err, git.ErrGit), errors.Is(err, bisect.ErrEndpointBroken), errors.Is(err, git.ErrNotRepo):
		return usageError("%v", err)
	}
	return err
}

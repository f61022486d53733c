package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/config/cliflag"
	"github.com/lpmbisect/lpmbisect/flow/nightly"
	"github.com/lpmbisect/lpmbisect/flow/series"
	"github.com/lpmbisect/lpmbisect/present/report"
	"github.com/lpmbisect/lpmbisect/present/view"
)

// seriesFlags are the flags only series has.
type seriesFlags struct {
	base, mbox, cover, worktree string
}

func seriesCommand(r *invocation) *cli.Command {
	var sf seriesFlags
	opts := append(bisectOpts(r),
		cliflag.Key(r.File, "bisect.repo", "the kernel git repository (default: the current directory)"),
		opt{Name: "base", Ptr: &sf.base, Usage: "with --mbox: the revision the series applies to"},
		opt{Name: "mbox", Ptr: &sf.mbox, Usage: "the series as mail (git format-patch --stdout, b4 am's .mbx), applied with git am --message-id in a worktree of its own"},
		opt{Name: "cover", Ptr: &sf.cover, Usage: "the cover letter in a file of its own (b4 am's .cover)"},
		opt{Name: "worktree", Ptr: &sf.worktree, Usage: "where --mbox is applied, kept for incremental builds (default: <git-dir>/lpmbisect/series)"},
		opt{Name: "fail-on", Ptr: &r.failOn, Usage: "what fails the exit code: regression (a patch worse than its parent) or change (any)"},
		opt{Name: "format", Ptr: &r.format, Usage: "report on stdout: text, markdown, json, mail (a plain-text reply to the cover letter) or github (GitHub Actions annotations per patch)"},
		opt{Name: "html", Ptr: &r.html, Usage: "also write the report as HTML to this file"})
	return command("series", "measure a patch series patch by patch: each patch against its parent and the base, with a reply for the list", "[BASE..TIP]", opts,
		func(c *cli.Context) error { return runSeries(c, r, sf) })
}

func runSeries(c *cli.Context, r *invocation, sf seriesFlags) error {
	o := series.Options{Repo: r.Bisect.Repo, Mbox: sf.mbox, Cover: sf.cover, Worktree: sf.worktree, StateDir: r.Bisect.State, BuildDir: r.Build.BuildDir}
	if o.Repo == "" {
		o.Repo = "."
	}
	switch {
	case sf.mbox != "" && c.NArg() > 0:
		return usageError("give --mbox FILE --base REV or BASE..TIP, not both")
	case sf.mbox != "" && sf.base == "":
		return usageError("--mbox needs --base REV, the commit the series applies to")
	case sf.mbox != "":
		o.Base = sf.base
	case c.NArg() != 1 || !strings.Contains(c.Args().First(), ".."):
		return usageError("series takes BASE..TIP (or --mbox FILE --base REV), got %q", c.Args().Slice())
	default:
		o.Base, o.Tip, _ = strings.Cut(c.Args().First(), "..")
	}
	failOn, _, _, err := r.verdicts()
	if err != nil && r.format != string(report.FormatMail) {
		return err
	}
	format := report.FormatMail
	if r.format != string(report.FormatMail) {
		if format, err = r.stdoutFormat(); err != nil {
			return err
		}
		if format == report.FormatVeristat || format == report.FormatKCIDB {
			return usageError("--format %s is compare's and stat's: series writes text, markdown, json, mail or github", format)
		}
	}
	setup, err := r.bisectSetup(c.Context, false)
	if err != nil {
		return err
	}
	o.Setup = setup.Setup
	res, err := series.Run(c.Context, o)
	if err != nil && res != nil && c.Context.Err() != nil {
		// Interrupted: what was measured so far, then the signal's code.
		report.WriteSeries(c.App.Writer, format, res.View(commandLine(os.Args), failOn))
	}
	if err != nil {
		return seriesError(err, r)
	}
	v := res.View(commandLine(os.Args), failOn)
	if err := report.WriteSeries(c.App.Writer, format, v); err != nil {
		return err
	}
	if r.html != "" {
		f, err := os.Create(r.html)
		if err != nil {
			return usageError("--html: %v", err)
		}
		defer f.Close()
		if err := report.WriteSeriesHTML(f, v); err != nil {
			return err
		}
		r.log.Printf("HTML report in %s", r.html)
	}
	if err := recordSeries(c, r, v); err != nil {
		return err
	}
	return seriesOutcomeError(v.Outcome, failOn)
}

// recordSeries stores the run in the history when the configuration names
// one ([nightly] db), where lpmbisect serve lists it.
func recordSeries(c *cli.Context, r *invocation, v view.Series) error {
	if r.File.Nightly.DB == "" {
		return nil
	}
	var doc, text strings.Builder
	if err := report.WriteSeriesRecord(&doc, v); err != nil {
		return err
	}
	if err := report.WriteSeries(&text, report.FormatText, v); err != nil {
		return err
	}
	db, err := nightly.OpenHistory(c.Context, r.File)
	if err != nil {
		return historyError(err, r)
	}
	defer db.Close()
	id, err := series.Record(c.Context, db, v, doc.String(), text.String())
	if err != nil {
		return &exitError{code: exitInfra, err: fmt.Errorf("record the series in the history %s: %w (the report above stands; [nightly] db names the history)", db.Location(), err)}
	}
	r.log.Printf("recorded as patch-series run %d in the history %s (lpmbisect serve shows it at %s)", id, db.Location(), report.PatchSeriesRunPath(id))
	return nil
}

// seriesError gives a series' errors their exit codes.
func seriesError(err error, r *invocation) error {
	switch {
	case errors.Is(err, series.ErrBaseBroken): // first: it keeps its boot's cause, which may be any
		return &exitError{code: exitInfra, err: err}
	case errors.Is(err, series.ErrEmptySeries), errors.Is(err, series.ErrNoPatches), errors.Is(err, fs.ErrNotExist):
		return usageError("%v", err)
	}
	return bisectError(err, r)
}

func seriesOutcomeError(o fmt.Stringer, failOn fmt.Stringer) error {
	switch o.String() {
	case "regression":
		return &exitError{code: exitRegression, err: fmt.Errorf("a patch regresses (--fail-on %v)", failOn)}
	case "inconclusive":
		return &exitError{code: exitInconclusive, err: errors.New("inconclusive: a patch stayed UNKNOWN or was not measured (see the report)")}
	}
	return nil
}

package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/config"
	"github.com/lpmbisect/lpmbisect/flow/bisect"
	"github.com/lpmbisect/lpmbisect/flow/nightly"
	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/internal/cachefile"
	"github.com/lpmbisect/lpmbisect/present/report"
	"github.com/lpmbisect/lpmbisect/present/view"
)

func nightlyCommand(r *invocation) *cli.Command {
	var date string
	var only []string
	var wait time.Duration
	opts := []opt{configOpt(r),
		{Name: "date", Ptr: &date, Usage: "the night, YYYY-MM-DD (default: today)"},
		{Name: "series", Ptr: &only, Usage: "run only this series (repeatable; default: every [[series]])"},
		{Name: "wait", Ptr: &wait, Usage: "wait up to this long for another nightly that holds the history (default: refuse at once)"},
		{Name: "format", Ptr: &r.format, Usage: "morning report on stdout: text, markdown, json"},
		{Name: "verbose", Alias: "v", Ptr: &r.verbose, Usage: "print QEMU command lines and decisions"},
		noInsightOpt(r), noProfileOpt(r),
	}
	opts = append(append(opts, fleetOpts(r)...), fleetBuildOpts(r)...)
	return command("nightly", "one night's work for every series: build or take the tip, measure it beside the reference, find and bisect change points", "", opts, func(c *cli.Context) error {
		format, err := r.stdoutFormat()
		if err != nil {
			return err
		}
		if r.Path == "" {
			return usageError("nightly needs --config FILE with [[series]] (see kernels.example.toml)")
		}
		nights, err := nightly.Run(c.Context, nightly.Options{Config: r.File, Date: date, Only: only, Wait: wait, Log: r.log,
			SetupFor: func(cfg *config.File, runDir, reference string) (*bisect.Bisector, error) {
				rr := *r
				rr.File, rr.runDir = cfg, runDir
				rr.minEffect = strconv.FormatFloat(cfg.Stats.MinEffect, 'g', -1, 64) // the series' own
				return rr.bisectSetup(c.Context, true, reference)
			},
			WriteMail: report.WriteChangePointMail, MailSubject: report.MailSubject})
		var sums []view.NightSummary
		for _, n := range nights {
			sums = append(sums, n.Summary())
		}
		if len(sums) > 0 {
			if werr := report.WriteMorning(c.App.Writer, format, sums); werr != nil && err == nil {
				err = werr
			}
		}
		if err != nil {
			return historyError(err, r)
		}
		switch nightly.Worst(nights) {
		case nightly.Failure:
			return &exitError{code: exitInfra, err: errors.New("a night failed (see the report)")}
		case nightly.Regression:
			return &exitError{code: exitRegression, err: errors.New("a new regression (see the report)")}
		case nightly.Inconclusive:
			return &exitError{code: exitInconclusive, err: errors.New("inconclusive (see the report)")}
		}
		return nil
	})
}

// triager is who a triage from this command line records: user@host.
func triager() string {
	who := cmp.Or(os.Getenv("USER"), os.Getenv("LOGNAME"), "unknown")
	if host, err := os.Hostname(); err == nil && host != "" {
		who += "@" + host
	}
	return who
}

// historyError adds the command that fixes a history database problem.
func historyError(err error, r *invocation) error {
	switch {
	case errors.Is(err, history.ErrNeedsMigration):
		return usageError("%v (lpmbisect history migrate --config %s)", err, r.Path)
	case errors.Is(err, history.ErrLocked):
		return &exitError{code: exitInfra, err: fmt.Errorf("%w (wait for it, or give --wait)", err)}
	case errors.Is(err, history.ErrNewerSchema), errors.Is(err, history.ErrForeignDatabase), errors.Is(err, nightly.ErrNoSeries),
		errors.Is(err, nightly.ErrImport), errors.Is(err, history.ErrNotFound), errors.Is(err, history.ErrBadTriage):
		return usageError("%v", err)
	}
	return err
}

func historyCommand(r *invocation) *cli.Command {
	var series string
	opts := []opt{configOpt(r),
		{Name: "series", Ptr: &series, Usage: "only this series"},
		{Name: "format", Ptr: &r.format, Usage: "on stdout: text, markdown, json"},
		{Name: "html", Ptr: &r.html, Usage: "also write an HTML page with a trend plot per benchmark to this file"},
	}
	cmd := command("history", "the series nightly follows: their nights and change points (text, markdown, json, HTML with trend plots)", "", opts, func(c *cli.Context) error {
		format, err := r.stdoutFormat()
		if err != nil {
			return err
		}
		db, err := r.openHistory(c)
		if err != nil {
			return err
		}
		defer db.Close()
		h, err := view.LoadHistory(c.Context, db, series)
		if err != nil {
			return historyError(err, r)
		}
		if err := report.WriteHistory(c.App.Writer, format, h); err != nil {
			return err
		}
		if r.html != "" {
			if err := cachefile.WriteAtomic(r.html, func(w io.Writer) error { return report.WriteHistoryHTML(w, h) }); err != nil {
				return usageError("--html: %v", err)
			}
			r.log.Printf("HTML history in %s", r.html)
		}
		return nil
	})
	cmd.Subcommands = []*cli.Command{historyAckCommand(r), historyImportCommand(r), historyMigrateCommand(r)}
	return cmd
}

// openHistory opens the history database that the configuration's
// [nightly] db names.
func (r *invocation) openHistory(c *cli.Context) (*history.DB, error) {
	if r.Path == "" {
		return nil, usageError("history needs --config FILE (its [nightly] db names the database)")
	}
	db, err := nightly.OpenHistory(c.Context, r.File)
	return db, historyError(err, r)
}

// historyAckCommand is lpmbisect history ack: the triage of change points.
func historyAckCommand(r *invocation) *cli.Command {
	var mute bool
	state, comment := string(history.ActionAcknowledge), ""
	return command("ack", "triage change points: acknowledge (seen), or --state invalid|muted|open|bisect, with a --comment", "ID...", []opt{configOpt(r),
		{Name: "mute", Ptr: &mute, Usage: "mute instead: no more mail (--state muted)"},
		{Name: "state", Ptr: &state, Usage: "acknowledged, invalid, muted, open, or bisect (the next nightly bisects it)"},
		{Name: "comment", Ptr: &comment, Usage: "why, for the audit log"}}, func(c *cli.Context) error {
		if c.NArg() == 0 {
			return usageError("history ack takes change point IDs (lpmbisect history shows them)")
		}
		if mute {
			if state != string(history.ActionAcknowledge) {
				return usageError("history ack: give --mute or --state, not both")
			}
			state = string(history.ActionMute)
		}
		action, err := history.ParseTriageAction(state)
		if err != nil {
			return usageError("--state: %v", err)
		}
		var ids []int64
		for _, a := range c.Args().Slice() {
			id, err := strconv.ParseInt(a, 10, 64)
			if err != nil {
				return usageError("history ack: %q is not a change point ID", a)
			}
			ids = append(ids, id)
		}
		db, err := r.openHistory(c)
		if err != nil {
			return err
		}
		defer db.Close()
		for _, id := range ids {
			cp, changed, err := db.Triage(c.Context, id, action, comment, triager())
			if err != nil {
				return historyError(err, r)
			}
			if !changed {
				r.log.Printf("change point %d is %s already: nothing recorded (add a --comment to record one)", id, cp.Status)
				continue
			}
			r.log.Printf("change point %d %s (bisection: %s)", id, cp.Status, cmp.Or(string(cp.Bisect.State), "none"))
		}
		return nil
	})
}

// historyImportCommand is lpmbisect history import: results files into a
// series' history.
func historyImportCommand(r *invocation) *cli.Command {
	var series string
	return command("import", "import results files whose lines carry commit: and date: into a series' history", "RESULTS...", []opt{configOpt(r),
		{Name: "series", Ptr: &series, Usage: "the series to import into"}}, func(c *cli.Context) error {
		if series == "" || c.NArg() == 0 {
			return usageError("history import needs --series NAME and results files")
		}
		db, err := r.openHistory(c)
		if err != nil {
			return err
		}
		defer db.Close()
		imp, err := nightly.ImportSeries(c.Context, db, r.File, series, c.Args().Slice())
		if err != nil {
			return historyError(err, r)
		}
		fmt.Fprintf(c.App.Writer, "imported %d nights (%d new boots) into %s; %d change points new, moved or withdrawn; %d new excursions (nights far from both neighbours)\n",
			imp.Nights, imp.Boots, series, len(imp.Changes), len(imp.Excursions))
		return nil
	})
}

// historyMigrateCommand is lpmbisect history migrate.
func historyMigrateCommand(r *invocation) *cli.Command {
	return command("migrate", "create or upgrade the history database's tables (never done behind your back on a shared database)", "", []opt{configOpt(r)}, func(c *cli.Context) error {
		if r.Path == "" {
			return usageError("history migrate needs --config FILE")
		}
		loc, err := nightly.HistoryLocation(r.File)
		if err != nil {
			return err
		}
		from, to, err := history.Migrate(c.Context, loc)
		if err != nil {
			return historyError(err, r)
		}
		r.log.Printf("history %s: schema version %d → %d", history.Redact(loc), from, to)
		return nil
	})
}

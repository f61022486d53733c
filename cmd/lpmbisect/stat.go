package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/flow/ab"
	"github.com/lpmbisect/lpmbisect/guest/workloads"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/present/report"
	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/wire"
)

func statCommand(r *invocation) *cli.Command {
	opts := append(verdictOpts(r), configOpt(r), noInsightOpt(r), symbolsOpt(r))
	return command("stat", "give verdicts on a results file again, without booting (other --min-effect, --alpha, format)", "RESULTS", opts, func(c *cli.Context) error {
		if c.NArg() != 1 {
			return argsError("stat", "one results file", c.Args().Slice())
		}
		failOn, format, opts, err := r.verdicts()
		if err != nil {
			return err
		}
		insightOpts, err := r.insightOptions("")
		if err != nil {
			return err
		}
		path := c.Args().First()
		results, err := measure.ReadResultsFile(path)
		if err != nil {
			return usageError("%v (give a results file written by lpmbisect compare)", err)
		}
		res, err := ab.Restat(results, path, opts, r.Stats.Statistical())
		if err != nil {
			return usageError("%s: %v", path, err)
		}
		res.Meta.FailOn, res.Meta.Command = failOn, "lpmbisect stat "+strings.Join(c.Args().Slice(), " ")
		res.AddInsight(r.statInsight(path, insightOpts))
		if err := r.writeReports(c, format, res.Report, res.Meta); err != nil {
			return err
		}
		return outcomeError(res.Report, failOn)
	})
}

// writeReports writes the report in format to standard output and, with
// --html, the HTML report to its file.
func (r *invocation) writeReports(c *cli.Context, format report.Format, rep *compare.Report, meta view.Meta) error {
	meta.Verifier, meta.Veristat = r.verifiersOf(rep.Rows, meta.ResultsFile), r.veristatEmit
	if err := report.Write(c.App.Writer, format, rep, meta); err != nil || r.html == "" {
		return err
	}
	if err := report.WriteHTMLFile(r.html, rep, meta); err != nil {
		return fmt.Errorf("--html: %w", err)
	}
	r.log.Printf("HTML report in %s", r.html)
	return nil
}

// verdicts reads the flags that shape verdicts and reports.
func (r *invocation) verdicts() (compare.FailOn, report.Format, compare.Options, error) {
	var opts compare.Options
	failOn, err := compare.ParseFailOn(r.failOn)
	if err != nil {
		return failOn, "", opts, usageError("--%v", err)
	}
	format, err := r.stdoutFormat()
	if err != nil {
		return failOn, format, opts, err
	}
	if r.autoMinEffect, err = r.stats(); err != nil {
		return failOn, format, opts, err
	}
	opts = compare.Options{Alpha: r.Stats.Alpha, MinEffect: r.Stats.MinEffect / 100}
	if r.noControls {
		opts.Controls = []string{}
	}
	if err := writable("html", r.html); err != nil {
		return failOn, format, opts, err
	}
	if err := r.readVeristatEmit(); err != nil {
		return failOn, format, opts, err
	}
	return failOn, format, opts, nil
}

// outcomeError turns a report's outcome into the exit code: nil (0), a
// regression (1) or inconclusive (3).
func outcomeError(rep *compare.Report, failOn compare.FailOn) error {
	switch rep.Outcome(failOn) {
	case compare.Regression:
		return &exitError{code: exitRegression, err: fmt.Errorf("regression (--fail-on %v)", failOn)}
	case compare.Inconclusive:
		return &exitError{code: exitInconclusive, err: fmt.Errorf("inconclusive at %d %s (see the report)", rep.Look.Boots, compare.Units(rep.Paired))}
	}
	return nil
}

// verifiersOf gathers the verifier rows of rows, with the rejection
// reasons read from the results file at path (none if it cannot be read).
func (r *invocation) verifiersOf(rows []compare.Row, path string) []view.VerifierProgram {
	if !slices.ContainsFunc(rows, func(row compare.Row) bool { return strings.HasPrefix(row.Benchmark, wire.VerifierPrefix) }) {
		return nil
	}
	var results []*benchfmt.Result
	if path != "" {
		results, _ = measure.ReadResultsFile(path)
	}
	return r.verifiers(rows, results)
}

// verifiers gathers the verifier rows of rows with the rejection reasons
// in results, naming the --workload object when there is one.
func (r *invocation) verifiers(rows []compare.Row, results []*benchfmt.Result) []view.VerifierProgram {
	w := view.Workload{Own: workloads.OwnPrograms()}
	if object, _, _ := strings.Cut(r.workload.object, ":"); object != "" {
		w.File, w.Programs = filepath.Base(object), r.workloadProgs.Verified
	}
	return view.Verifiers(rows, results, w)
}

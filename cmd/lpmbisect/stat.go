package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/compare"
	"github.com/lpmbisect/lpmbisect/internal/cachefile"
	"github.com/lpmbisect/lpmbisect/measure"
	"github.com/lpmbisect/lpmbisect/report"
)

func statCommand() *cli.Command {
	return &cli.Command{
		Name:         "stat",
		Usage:        "give verdicts on a results file again, without booting (other --min-effect, --alpha, format)",
		OnUsageError: onUsageError,
		ArgsUsage:    "RESULTS",
		Description: `Reads a results file written by compare (--out, or results.txt in the run
directory; a .partial file of an interrupted run works too) and reports it as
compare does, with the verdict rules given here. The file is taken as one look
with all of --alpha: an adaptive compare spent α over several looks, so its
own report is the one to quote; stat is for asking other questions of the same
boots (a larger --min-effect, another format). Paired results (a pair key on
every result) are analysed as pairs. Exit codes as compare: 0, 1, 3, 2.

Examples:
   lpmbisect stat results.txt
   lpmbisect stat --min-effect 5 --format markdown results.txt`,
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "no-controls", Usage: "treat noop and baseline as ordinary benchmarks"},
		}, verdictFlagDefs()...),
		Action: runStat,
	}
}

func runStat(c *cli.Context) error {
	if c.NArg() != 1 {
		return argsError("stat", "one results file", c.Args().Slice())
	}
	failOn, format, opts, err := verdictFlags(c)
	if err != nil {
		return err
	}
	if c.Bool("no-controls") {
		opts.Controls = []string{}
	}
	path := c.Args().First()
	results, err := measure.ReadResultsFile(path)
	if err != nil {
		return usageError("%v (give a results file written by lpmbisect compare)", err)
	}
	rep, err := compare.Build(results, opts)
	if err != nil {
		return usageError("%s: %v", path, err)
	}
	meta := report.Meta{FailOn: failOn, ResultsFile: path, Command: "lpmbisect stat " + strings.Join(c.Args().Slice(), " ")}
	meta.A.Release, meta.B.Release = rep.A.Kernel, rep.B.Kernel
	if len(results) > 0 {
		meta.Accel = results[0].GetConfig("accel")
	}
	if err := writeReports(c, format, rep, meta); err != nil {
		return err
	}
	return outcomeError(rep, failOn)
}

// writeReports writes the report in format to standard output and, with
// --html, the HTML report to its file.
func writeReports(c *cli.Context, format report.Format, rep *compare.Report, meta report.Meta) error {
	if err := report.Write(c.App.Writer, format, rep, meta); err != nil {
		return err
	}
	if h := c.String("html"); h != "" {
		if err := cachefile.WriteAtomic(h, func(w io.Writer) error { return report.WriteHTML(w, rep, meta) }); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
		fmt.Fprintf(c.App.ErrWriter, "lpmbisect: HTML report in %s\n", h)
	}
	return nil
}

// verdictFlagDefs are the flags that shape verdicts and reports, shared by
// compare and stat; verdictFlags reads them.
func verdictFlagDefs() []cli.Flag {
	return []cli.Flag{
		&cli.Float64Flag{Name: "min-effect", Value: 1, Usage: "smallest change that counts, in percent (DIFFERENT needs more, SAME excludes it)"},
		&cli.Float64Flag{Name: "alpha", Value: 0.05, Usage: "family-wise error rate of DIFFERENT claims (and of each SAME claim)"},
		&cli.StringFlag{Name: "fail-on", Value: "regression", Usage: "what fails the exit code: regression (only a change for the worse) or change (any)"},
		&cli.StringFlag{Name: "format", Value: "text", Usage: "report on stdout: text, markdown, json"},
		&cli.StringFlag{Name: "html", Usage: "also write an HTML report with SVG plots of every boot to this file"},
	}
}

// verdictFlags reads the flags that shape verdicts and reports, shared by
// compare and stat.
func verdictFlags(c *cli.Context) (compare.FailOn, report.Format, compare.Options, error) {
	var opts compare.Options
	failOn, err := compare.ParseFailOn(c.String("fail-on"))
	if err != nil {
		return failOn, "", opts, usageError("--%v", err)
	}
	format, err := report.ParseFormat(c.String("format"))
	if err != nil || format == report.FormatHTML {
		return failOn, format, opts, usageError("--format %q: use text, markdown or json (and --html FILE for HTML)", c.String("format"))
	}
	opts = compare.Options{Alpha: c.Float64("alpha"), MinEffect: c.Float64("min-effect") / 100}
	if !(opts.Alpha > 0 && opts.Alpha < 1) {
		return failOn, format, opts, usageError("--alpha %v must be between 0 and 1", opts.Alpha)
	}
	if !(opts.MinEffect > 0 && opts.MinEffect < 1) {
		return failOn, format, opts, usageError("--min-effect %v must be a percentage between 0 and 100", c.Float64("min-effect"))
	}
	if path := c.String("html"); path != "" {
		if err := measure.CheckWritable(path); err != nil {
			return failOn, format, opts, usageError("--html: %v", err)
		}
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
		return &exitError{code: exitInconclusive, err: fmt.Errorf("inconclusive at %s (see the report)", lookSize(rep))}
	}
	return nil
}

// lookSize says how many boots the report's last look counted.
func lookSize(rep *compare.Report) string {
	if rep.Paired {
		return fmt.Sprintf("%d pairs", rep.Look.Boots)
	}
	return fmt.Sprintf("%d boots per side", rep.Look.Boots)
}

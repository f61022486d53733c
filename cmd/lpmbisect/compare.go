package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/compare"
	"github.com/lpmbisect/lpmbisect/measure"
	"github.com/lpmbisect/lpmbisect/report"
	"github.com/lpmbisect/lpmbisect/vmrunner"
)

func compareCommand() *cli.Command {
	return &cli.Command{
		Name:         "compare",
		Usage:        "A/B two kernels: paired or interleaved boots, per-boot statistics, significance",
		OnUsageError: onUsageError,
		ArgsUsage:    "KERNEL-A KERNEL-B",
		Description: `Boots A and B in rounds and keeps every sample of both sides in one results
file that plain benchstat reads (benchstat -col kernel -ignore side,boot,image,pair FILE).
A round boots one A and one B, one after the other in an order drawn from
--seed. With --paired (tcg, kvm) a round is a pair instead: A and B boot side
by side, pinned to one host CPU, and take their samples in turn, so the
host's changing speed cancels in B/A. Every benchmark gets a verdict, each
boot (or pair) one unit:

   DIFFERENT  significant (Wilcoxon signed-rank over pairs, or the U test
              over per-boot medians; α spent over the looks and
              Holm-corrected across benchmarks) and beyond --min-effect
   SAME       an equivalence test excludes a change of --min-effect
   UNKNOWN    neither yet: a round is added, up to --max-boots

The noop and baseline controls run alongside; if they move, the report says
the environment changed instead of blaming the kernel. Exit codes: 0 no
regression, 1 regression (--fail-on regression|change), 3 inconclusive,
2 usage, 4 infrastructure.

Examples:
   lpmbisect compare vmlinuz-6.1 vmlinuz-6.12
   lpmbisect compare --accel icount old/arch/x86/boot/bzImage new/arch/x86/boot/bzImage
   lpmbisect compare --format markdown --html report.html --out ab.txt linux-image-6.1.0-57-*.deb linux-image-6.12.117+deb12-*.deb`,
		Flags: append(append(vmFlags(),
			&cli.IntFlag{Name: "boots", Usage: "boots per side (pairs, when paired) to start with (default: the fewest at which a verdict is possible)"},
			&cli.IntFlag{Name: "max-boots", Value: 10, Usage: "most boots per side (pairs, when paired); rounds are added only while a selected benchmark is UNKNOWN"},
			&cli.BoolFlag{Name: "paired", Usage: "under wall-clock accelerators (tcg, kvm), boot A and B in pairs that take their samples in turn on one host CPU, and test per-pair ratios: for small changes and SAME claims; DIFFERENT then needs 8 pairs or more (icount is never paired)"},
			&cli.BoolFlag{Name: "no-controls", Usage: "do not run the noop and baseline controls alongside"},
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "raw results file (default: <run-dir>/results.txt)"},
			&cli.Uint64Flag{Name: "seed", Usage: "seed of the randomized A/B boot order (default: from the clock; recorded in the results as order-seed)"},
		), verdictFlagDefs()...),
		Action: runCompare,
	}
}

// runCompare boots A and B in rounds until every selected benchmark has a
// verdict or --max-boots is reached, then reports and sets the exit code.
func runCompare(c *cli.Context) error {
	if c.NArg() != 2 {
		return argsError("compare", "two kernels, A and B", c.Args().Slice())
	}
	failOn, format, opts, err := verdictFlags(c)
	if err != nil {
		return err
	}
	if path := c.String("out"); path != "" {
		if err := measure.CheckWritable(path); err != nil {
			return usageError("--out: %v", err)
		}
	}
	opts.MaxBoots = c.Int("max-boots")
	if opts.MaxBoots < 1 || opts.MaxBoots > 200 {
		return usageError("--max-boots %d must be between 1 and 200", opts.MaxBoots)
	}
	s, err := newSession(c)
	if err != nil {
		return err
	}
	selected, err := regexp.Compile(s.plan.Pattern())
	if err != nil {
		return usageError("--bench: %v", err)
	}
	s.paired = c.Bool("paired") && s.selector.Requested != vmrunner.Icount
	if c.Bool("no-controls") {
		opts.Controls = []string{}
	} else {
		s.plan = s.plan.WithControls()
	}
	boots := c.Int("boots")
	if boots == 0 {
		minToDecide := compare.MinBootsToDecide
		if s.paired {
			minToDecide = compare.MinPairsToDecide
		}
		same, different, err := minToDecide(opts, max(1, s.plan.Benchmarks()))
		if err != nil {
			return usageError("%v", err)
		}
		boots = max(2, min(positiveMin(same, different), opts.MaxBoots))
	}
	if boots < 1 || boots > opts.MaxBoots {
		return usageError("--boots %d must be between 1 and --max-boots %d", boots, opts.MaxBoots)
	}
	seed := c.Uint64("seed")
	if !c.IsSet("seed") {
		seed = uint64(time.Now().UnixNano())
	}

	sides, err := s.prepare(c.Args().Slice())
	if err != nil {
		return err
	}
	outPath := c.String("out")
	if outPath == "" {
		if err := os.MkdirAll(s.runDir, 0o755); err != nil {
			return usageError("run directory: %v (choose a writable --run-dir)", err)
		}
		outPath = filepath.Join(s.runDir, "results.txt")
	}
	out, err := measure.CreateResultsFile(outPath)
	if err != nil {
		return usageError("%v", err)
	}

	// Each round that completes is a look at the data: decide, then add a
	// round only while a selected benchmark is UNKNOWN. Passing the previous
	// look keeps α spent over the looks, not afresh at each.
	var rep *compare.Report
	var lookErr error
	resultsPath := out.Path() // FILE.partial while boots run
	look := func() bool {
		results, err := measure.ReadResultsFile(resultsPath)
		if err == nil {
			rep, err = compare.Build(results, opts)
		}
		if err != nil {
			lookErr = err
			return false
		}
		opts.Previous = &rep.Look
		return rep.NeedMoreBoots(func(b string) bool { return selected.MatchString(b) })
	}
	start := time.Now()
	sum, runErr := s.measureAdaptive(c.Context, sides, boots, opts.MaxBoots, look, seed, out)
	path, closeErr := out.Close(runErr == nil)
	if runErr != nil {
		fmt.Fprintf(s.log, "lpmbisect: finished boots kept in %s\n", path)
		return runErr
	}
	if closeErr != nil {
		return closeErr
	}
	resultsPath = path // renamed to FILE
	if lookErr != nil {
		return lookErr
	}
	lookedAtAll := rep != nil && opts.Previous != nil && rep.Look.Boots >= sum.OK[compare.SideA] && rep.Look.Boots >= sum.OK[compare.SideB]
	if s.paired {
		lookedAtAll = rep != nil && opts.Previous != nil && rep.Look.Boots >= sum.Pairs
	}
	if !lookedAtAll {
		// No look yet at the final boots (a fixed-size run): decide now.
		if !look() && lookErr != nil {
			return lookErr
		}
	}

	meta := reportMeta(c, sides, sum, seed, s.plan.Samples, failOn, path, start)
	if err := writeReports(c, format, rep, meta); err != nil {
		return err
	}
	if format != report.FormatText { // the text report names it itself
		fmt.Fprintf(s.log, "lpmbisect: raw results in %s (benchstat -col kernel -ignore side,boot,image,pair %s)\n", path, path)
	}
	return outcomeError(rep, failOn)
}

func positiveMin(a, b int) int {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}

func reportMeta(c *cli.Context, sides []*measure.Side, sum *measure.Summary, seed uint64, samples int, failOn compare.FailOn, results string, start time.Time) report.Meta {
	s := int64(seed)
	m := report.Meta{
		Seed: &s, Samples: samples, FailOn: failOn, Date: start,
		Command: strings.Join(os.Args, " "), ResultsFile: results, FailedBoots: len(sum.Failed),
	}
	kernels := []*report.Kernel{&m.A, &m.B}
	for i, side := range sides {
		*kernels[i] = report.Kernel{Input: side.Kernel.Input, Release: side.Label, SHA256: side.Kernel.SHA256}
	}
	if len(sum.Accels) > 0 {
		m.Accel = sum.Accels[0]
	}
	return m
}

package main

import (
	"errors"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/config/cliflag"
	"github.com/lpmbisect/lpmbisect/flow/ab"
	"github.com/lpmbisect/lpmbisect/present/report"
)

func compareCommand(r *invocation) *cli.Command {
	opts := append(append(vmOpts(r),
		cliflag.Key(r.File, "measure.boots", "boots per side (pairs, when paired) to start with (0: the fewest at which a verdict is possible)"),
		cliflag.Key(r.File, "measure.max_boots", "most boots per side (pairs, when paired); rounds are added only while a selected benchmark is UNKNOWN"),
		opt{Name: "paired", Ptr: &r.paired, Usage: "under wall-clock accelerators (tcg, kvm), boot A and B in pairs that take their samples in turn on one host CPU, and test per-pair ratios: for small changes and SAME claims; DIFFERENT then needs 8 pairs or more (icount is never paired)"},
		opt{Name: "out", Alias: "o", Ptr: &r.out, Usage: "raw results file (default: <run-dir>/results.txt)"},
		opt{Name: "seed", Ptr: &r.seed, Usage: "seed of the randomized A/B boot order (default: from the clock; recorded in the results as order-seed)"},
		opt{Name: "cpu-profile-b", Ptr: &r.cpuProfileB, Usage: "side B's CPU profile instead of --cpu-profile's (default names the default model): one kernel as A and B measures what the CPU's mitigations cost"},
		opt{Name: "append-b", Ptr: &r.appendB, Usage: "kernel parameters side B alone gets after --append, e.g. \"mitigations=off\": one kernel as A and B measures what they change"},
	), append(verdictOpts(r), fleetOpts(r)...)...)
	opts = append(opts, insightOpts(r)...)
	return command("compare", "A/B two kernels: paired or interleaved boots, per-boot statistics, significance", "KERNEL-A KERNEL-B", opts,
		func(c *cli.Context) error { return runCompare(c, r) })
}

// runCompare boots A and B in rounds until every selected benchmark has a
// verdict or --max-boots is reached, then reports and sets the exit code.
func runCompare(c *cli.Context, r *invocation) error {
	kernels, err := r.kernels(c, "compare", "two kernels, A and B", 2)
	if err != nil {
		return err
	}
	failOn, format, opts, err := r.verdicts()
	if err != nil {
		return err
	}
	if err := writable("out", r.out); err != nil {
		return err
	}
	if _, err := r.insightInput(); err != nil { // before the setup, whose accelerator may need a probe boot
		return err
	}
	opts.MaxBoots = r.Measure.MaxBoots
	if !c.IsSet("seed") { // before the setup: a fleet's paired rounds draw their turns from it
		r.seed = uint64(time.Now().UnixNano())
	}
	s, err := r.setup(r.paired, !r.noControls, kernels...)
	if err != nil {
		return err
	}
	o := ab.Options{Setup: s, Kernels: [2]string(kernels), Compare: opts, Seed: r.seed, Results: r.out, Command: commandLine(os.Args)}
	if err := o.Calibrate(c.Context, r.Measure.Boots, r.autoMinEffect, r.Stats.Statistical()); err != nil {
		return usageError("%v", flagError(err))
	}
	if o.Insight, err = r.compareInsight(s.CacheDir, s.Plan, true); err != nil {
		return err
	}
	prog := report.NewProgress(r.log.Writer())
	o.OnRunner = watchBoots(prog)
	res, err := ab.Run(c.Context, o)
	prog.Done()
	if errors.Is(err, ab.ErrResultsFile) {
		return usageError("%v (choose a writable --out or --run-dir)", err)
	}
	if err != nil {
		return err
	}
	res.Meta.FailOn = failOn
	if err := r.writeReports(c, format, res.Report, res.Meta); err != nil {
		return err
	}
	if format != report.FormatText { // the text report names it itself
		r.log.Printf("raw results in %s (%s)", res.Results, report.BenchstatCommand(res.Report, res.Meta.Accel, res.Results))
	}
	return outcomeError(res.Report, failOn)
}

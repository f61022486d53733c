package main

import (
	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/config/cliflag"
	"github.com/lpmbisect/lpmbisect/flow/calibrate"
	"github.com/lpmbisect/lpmbisect/present/report"
)

func calibrateCommand(r *invocation) *cli.Command {
	boots := calibrate.DefaultBoots
	var seed uint64
	opts := append(vmOpts(r),
		opt{Name: "boots", Ptr: &boots, Usage: "boots of the kernel (at least 6 for wall-time floors; more make the bounds surer)"},
		cliflag.Key(r.File, "measure.max_boots", "boots per side at most of the comparisons the floors serve: the self-compares spend α over their looks as those do (give at least twice as many --boots)"),
		opt{Name: "paired", Ptr: &r.paired, Usage: "calibrate for paired comparisons (tcg, kvm): boot the kernel in pairs with itself, --boots pairs"},
		opt{Name: "seed", Ptr: &seed, Usage: "seed of the splits of the boots into self-compares"},
		opt{Name: "format", Ptr: &r.format, Usage: "on stdout: text, markdown, json"})
	opts = append(opts, fleetOpts(r)...) // --db, --queue: calibrate a fleet queue's host class, stored in the fleet
	return command("calibrate", "measure what this host's boots of one kernel agree to: icount jitter bounds, wall-time floors of the minimum effect", "KERNEL", opts, func(c *cli.Context) error {
		kernels, err := r.kernels(c, "calibrate", "one KERNEL", 1)
		if err != nil {
			return err
		}
		format, err := r.stdoutFormat()
		if err != nil {
			return err
		}
		s, err := r.setup(r.paired, true, kernels...)
		if err != nil {
			return err
		}
		prog := report.NewProgress(r.log.Writer())
		cal, err := calibrate.Run(c.Context, s, kernels[0], boots, calibrate.Options{Seed: seed, MaxBoots: r.Measure.MaxBoots, OnRunner: watchBoots(prog)})
		prog.Done()
		if err != nil {
			return err
		}
		shelf := calibrate.ShelfFor(s, s.CacheDir)
		if err := calibrate.Store(c.Context, shelf, cal); err != nil {
			return err
		}
		r.log.Printf("calibration stored in %s", shelf.Where(cal.Key))
		v, err := cal.View()
		if err != nil {
			return err
		}
		return report.WriteCalibration(c.App.Writer, format, v)
	})
}

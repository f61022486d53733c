package main

import (
	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/present/report"
)

func runCommand(r *run) *cli.Command {
	boots := 1
	opts := append(vmOpts(r),
		opt{Name: "boots", Ptr: &boots, Usage: "number of boots"},
		opt{Name: "out", Alias: "o", Ptr: &r.out, Usage: "results file (default: stdout)"})
	return command("run", "boot one kernel and print its benchmark results (Go benchmark format)", "KERNEL", opts, func(c *cli.Context) error {
		kernels, err := r.kernels(c, "run", "one KERNEL", 1)
		if err != nil {
			return err
		}
		if boots < 1 {
			return usageError("--boots must be at least 1")
		}
		s, err := r.setup(false, false)
		if err != nil {
			return err
		}
		if err := writable("out", r.out); err != nil {
			return err
		}
		runner, err := s.Start(kernels, measure.RunOptions{})
		if err != nil {
			return err
		}
		out, err := measure.OpenResults(r.out, c.App.Writer)
		if err != nil {
			return usageError("--out: %v", err)
		}
		prog := report.NewProgress(r.log.Writer())
		path, err := s.Record(c.Context, runner, boots, out, prog.Attach)
		prog.Done()
		if err == nil && r.out != "" {
			r.log.Printf("results in %s", path)
		}
		return err
	})
}

package main

import (
	"bytes"

	"github.com/urfave/cli/v2"
	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/config/cliflag"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/present/report"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

func runCommand(r *invocation) *cli.Command {
	boots := 1
	opts := append(vmOpts(r),
		opt{Name: "boots", Ptr: &boots, Usage: "number of boots"},
		opt{Name: "out", Alias: "o", Ptr: &r.out, Usage: "results file (default: stdout)"},
		opt{Name: "format", Ptr: &r.runFormat, Usage: "stdout: benchfmt (the results) or veristat (the verifier rows as veristat's CSV; the results go to --out)"})
	opts = append(opts, cliflag.Keys(r.File, "report")...)
	return command("run", "boot one kernel and print its benchmark results (Go benchmark format)", "KERNEL", opts, func(c *cli.Context) error {
		kernels, err := r.kernels(c, "run", "one KERNEL", 1)
		if err != nil {
			return err
		}
		if boots < 1 {
			return usageError("--boots must be at least 1")
		}
		if err := r.readVeristatEmit(); err != nil {
			return err
		}
		switch r.runFormat {
		case "", "benchfmt", "veristat":
		default:
			return usageError("--format %q: use benchfmt or veristat", r.runFormat)
		}
		if err := writable("out", r.out); err != nil {
			return err
		}
		s, err := r.setup(false, false, kernels...)
		if err != nil {
			return err
		}
		runner, err := s.Start(kernels, measure.RunOptions{})
		if err != nil {
			return err
		}
		stdout := c.App.Writer
		var captured bytes.Buffer
		if r.runFormat == "veristat" {
			stdout = &captured
		}
		out, err := measure.OpenResults(r.out, stdout)
		if err != nil {
			return usageError("--out: %v (choose a writable place)", err)
		}
		prog := report.NewProgress(r.log.Writer())
		path, err := s.Record(c.Context, runner, boots, out, watchBoots(prog))
		prog.Done()
		if err == nil && r.out != "" {
			r.log.Printf("results in %s", path)
		}
		if err != nil || r.runFormat != "veristat" {
			return err
		}
		return r.writeVeristat(c, path, captured.Bytes())
	})
}

// writeVeristat writes the verifier rows of one kernel's results (the
// file at path, else data) as veristat's CSV on standard output.
func (r *invocation) writeVeristat(c *cli.Context, path string, data []byte) error {
	var results []*benchfmt.Result
	var err error
	if r.out != "" {
		results, err = measure.ReadResultsFile(path)
	} else {
		results, err = measure.ReadResults(bytes.NewReader(data), "results")
	}
	if err != nil {
		return err
	}
	rows, err := compare.Summarize(results)
	if err != nil {
		return err
	}
	return report.WriteVeristat(c.App.Writer, r.verifiers(rows, results), r.veristatEmit)
}

// watchBoots makes a runner report its boots to p as they start and end.
func watchBoots(p *report.Progress) func(*measure.Runner) {
	return func(r *measure.Runner) { r.OnBootStart, r.OnBoot = p.BootStarts, p.BootEnded }
}

package main

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/measure"
)

func runCommand() *cli.Command {
	return &cli.Command{
		Name:         "run",
		Usage:        "boot one kernel and print its benchmark results (Go benchmark format)",
		OnUsageError: onUsageError,
		ArgsUsage:    "KERNEL",
		Description: `Boots KERNEL --boots times and writes every sample, labelled with the kernel
release, the accelerator and the boot number, in the Go benchmark format that
benchstat reads.

Examples:
   lpmbisect run arch/x86/boot/bzImage
   lpmbisect run --boots 3 --out lookup.txt linux-image-6.12.117+deb12-cloud-amd64-unsigned_*.deb
   lpmbisect run --accel icount --entries 100000 /boot/vmlinuz-$(uname -r)`,
		Flags: append(vmFlags(),
			&cli.IntFlag{Name: "boots", Value: 1, Usage: "number of boots"},
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "results file (default: stdout)"},
		),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return argsError("run", "one KERNEL", c.Args().Slice())
			}
			if c.Int("boots") < 1 {
				return usageError("--boots must be at least 1")
			}
			s, err := newSession(c)
			if err != nil {
				return err
			}
			if out := c.String("out"); out != "" {
				if err := measure.CheckWritable(out); err != nil {
					return usageError("%v", err)
				}
			}
			sides, err := s.prepare([]string{c.Args().First()})
			if err != nil {
				return err
			}
			out, err := openResults(c.String("out"), c.App.Writer)
			if err != nil {
				return err
			}
			_, runErr := s.measure(c.Context, sides, c.Int("boots"), 0, out)
			path, closeErr := out.Close(runErr == nil)
			if c.String("out") != "" {
				if runErr != nil {
					fmt.Fprintf(s.log, "lpmbisect: finished boots kept in %s\n", path)
				} else {
					fmt.Fprintf(s.log, "lpmbisect: results in %s\n", path)
				}
			}
			if runErr != nil {
				return runErr
			}
			return closeErr
		},
	}
}

// openResults opens --out, or stdout when it is empty.
func openResults(path string, stdout io.Writer) (*measure.ResultsFile, error) {
	if path == "" {
		return measure.StreamResults(stdout), nil
	}
	rf, err := measure.CreateResultsFile(path)
	if err != nil {
		return nil, usageError("%v", err)
	}
	return rf, nil
}

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/compare"
	"github.com/lpmbisect/lpmbisect/measure"
)

func compareCommand() *cli.Command {
	return &cli.Command{
		Name:         "compare",
		Usage:        "A/B two kernels: interleaved boots, per-boot statistics, significance",
		OnUsageError: onUsageError,
		ArgsUsage:    "KERNEL-A KERNEL-B",
		Description: `Boots A and B alternately (A B A B …) --boots times each, keeps every sample of
both sides in one results file that plain benchstat reads
(benchstat -col kernel -ignore side,boot,image FILE),
and prints a table per benchmark: each side's centre (median of per-boot
medians) with its 95% confidence interval, the spread within a boot, the
change of B against A and the Mann-Whitney U p-value over boots.

Examples:
   lpmbisect compare vmlinuz-6.1 vmlinuz-6.12
   lpmbisect compare --accel icount --boots 4 old/arch/x86/boot/bzImage new/arch/x86/boot/bzImage
   lpmbisect compare --out ab.txt linux-image-6.1.0-57-*.deb linux-image-6.12.117+deb12-*.deb`,
		Flags: append(vmFlags(),
			&cli.IntFlag{Name: "boots", Value: 6, Usage: "boots per side (≥4 for significance at α=0.05, ≥6 for a 95% interval)"},
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "raw results file (default: <run-dir>/results.txt)"},
			&cli.Float64Flag{Name: "alpha", Value: 0.05, Usage: "significance level"},
			&cli.Uint64Flag{Name: "seed", Usage: "seed of the randomized A/B boot order (default: from the clock; recorded in the results as order-seed)"},
		),
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return argsError("compare", "two kernels, A and B", c.Args().Slice())
			}
			if c.Int("boots") < 1 {
				return usageError("--boots must be at least 1")
			}
			if a := c.Float64("alpha"); !(a > 0 && a < 1) {
				return usageError("--alpha %v must be between 0 and 1", a)
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
			seed := c.Uint64("seed")
			if !c.IsSet("seed") {
				seed = uint64(time.Now().UnixNano())
			}
			_, runErr := s.measure(c.Context, sides, c.Int("boots"), seed, out)
			path, closeErr := out.Close(runErr == nil)
			if runErr != nil {
				fmt.Fprintf(s.log, "lpmbisect: finished boots kept in %s\n", path)
				return runErr
			}
			if closeErr != nil {
				return closeErr
			}
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			results, err := measure.ReadResults(f, path)
			if err != nil {
				return err
			}
			rep, err := compare.Build(results, compare.Options{Alpha: c.Float64("alpha")})
			if err != nil {
				return err
			}
			if err := rep.WriteText(c.App.Writer); err != nil {
				return err
			}
			fmt.Fprintf(s.log, "lpmbisect: raw results in %s (benchstat -col kernel -ignore side,boot,image %s)\n", path, path)
			return nil
		},
	}
}

package main

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/workloads"
)

func listCommand() *cli.Command {
	return &cli.Command{
		Name:         "list",
		Usage:        "list the benchmarks: what each measures, its parameters and minimum kernel",
		OnUsageError: onUsageError,
		ArgsUsage:    "[PRESET|REGEXP]",
		Description: `Lists every benchmark the guest can run (or those a preset or regexp
selects), with the parameters that appear in result names, the kernel
features each needs and the first Linux release that has them. On an older
kernel a benchmark yields an "unsupported" note naming what is missing.

Examples:
   lpmbisect list
   lpmbisect list lpm
   lpmbisect list --entries 100000 'op=lookup'`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "entries", Value: int(workloads.DefaultParams.Entries), Usage: "LPM trie entries shown in names"},
			&cli.IntFlag{Name: "batch-entries", Value: int(workloads.DefaultParams.BatchEntries), Usage: "MapBatch entries shown in names"},
			&cli.IntFlag{Name: "cpus", Value: 0, Usage: "show only ring buffer producer counts up to this many vCPUs (0: all)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usageError("list takes at most one PRESET or REGEXP, got %d arguments", c.NArg())
			}
			pattern := "."
			if c.NArg() == 1 {
				pattern = workloads.ResolveBench(c.Args().First())
			}
			re, err := regexp.Compile(pattern)
			if err != nil {
				return usageError("list %q: %v", c.Args().First(), err)
			}
			p := workloads.DefaultParams
			p.Entries, p.BatchEntries, p.CPUs = uint32(c.Int("entries")), uint32(c.Int("batch-entries")), c.Int("cpus")
			return writeList(c.App.Writer, workloads.Select(workloads.Registry(), re, p), p)
		},
	}
}

// writeList prints the benchmarks, the parameters and the presets.
func writeList(w io.Writer, benches []*workloads.Benchmark, p workloads.Params) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BENCHMARK\tMIN KERNEL\tNEEDS")
	for _, b := range benches {
		var needs []string
		for _, r := range b.Requires {
			needs = append(needs, fmt.Sprintf("%s (%s)", r.Feature, r.MinKernel))
		}
		if b.MinCPUs > 1 {
			needs = append(needs, fmt.Sprintf("%d vCPUs (--cpus)", b.MinCPUs))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", b.FullName(p), b.MinKernel(), strings.Join(needs, ", "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nWHAT EACH MEASURES")
	seen := map[string]bool{}
	for _, b := range benches {
		if seen[b.Doc] {
			continue
		}
		seen[b.Doc] = true
		fmt.Fprintf(w, "  %s\n      %s\n", b.Name, b.Doc)
	}
	fmt.Fprintln(w, "\nPARAMETERS IN NAMES (flags of run and compare)")
	for _, pi := range workloads.ParamInfos {
		fmt.Fprintf(w, "  %-14s --%-14s %s\n", pi.Name, strings.ReplaceAll(pi.Key, "_", "-"), pi.Doc)
	}
	fmt.Fprintln(w, "\nPRESETS (--bench NAME)")
	for _, pr := range workloads.Presets {
		fmt.Fprintf(w, "  %-9s %-24s %s\n", pr.Name, pr.Pattern, pr.Doc)
	}
	_, err := fmt.Fprintf(w, "\nThe default --bench is %s.\n", workloads.DefaultBench)
	return err
}

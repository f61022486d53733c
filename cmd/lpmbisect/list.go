package main

import (
	"regexp"

	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/guest/workloads"
	"github.com/lpmbisect/lpmbisect/present/report"
)

func listCommand(r *invocation) *cli.Command {
	p := workloads.DefaultParams
	entries, batch, cpus := int(p.Entries), int(p.BatchEntries), 0
	opts := []opt{
		{Name: "entries", Ptr: &entries, Usage: "LPM trie entries shown in names"},
		{Name: "batch-entries", Ptr: &batch, Usage: "MapBatch entries shown in names"},
		{Name: "cpus", Ptr: &cpus, Usage: "show only ring buffer producer counts up to this many vCPUs (0: all)"},
	}
	return command("list", "list the benchmarks: what each measures, its parameters and minimum kernel", "[PRESET|REGEXP]", opts, func(c *cli.Context) error {
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
		p.Entries, p.BatchEntries, p.CPUs = uint32(entries), uint32(batch), cpus
		return report.WriteBenchmarks(c.App.Writer, workloads.Select(workloads.Registry(), re, p), p)
	})
}

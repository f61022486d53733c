package main

import (
	"regexp"

	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/guest/workloads"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/present/report"
)

func listCommand(r *invocation) *cli.Command {
	p := workloads.DefaultParams
	entries, batch, cpus := int(p.Entries), int(p.BatchEntries), 0
	var cpuProfiles bool
	opts := []opt{
		{Name: "entries", Ptr: &entries, Usage: "LPM trie entries shown in names"},
		{Name: "batch-entries", Ptr: &batch, Usage: "MapBatch entries shown in names"},
		{Name: "cpus", Ptr: &cpus, Usage: "show only ring buffer producer counts up to this many vCPUs (0: all)"},
		{Name: "cpu-profiles", Ptr: &cpuProfiles, Usage: "list the CPU profiles of --cpu-profile instead: each one's QEMU model, the kernel parameters it adds, and the mitigations Debian's kernels run on it beside the real CPU's"},
	}
	return command("list", "list the benchmarks: what each measures, its parameters and minimum kernel", "[PRESET|REGEXP]", opts, func(c *cli.Context) error {
		if cpuProfiles {
			if c.NArg() > 0 {
				return usageError("list --cpu-profiles takes no arguments, got %d", c.NArg())
			}
			return report.WriteCPUProfiles(c.App.Writer, append([]vmrunner.CPUProfile{{}}, vmrunner.CPUProfiles...))
		}
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

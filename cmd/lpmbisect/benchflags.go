package main

import (
	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/measure"
	"github.com/lpmbisect/lpmbisect/workloads"
)

// benchFlags select benchmarks and their parameters: what the guest runs.
func benchFlags() []cli.Flag {
	d := workloads.DefaultParams
	return []cli.Flag{
		&cli.StringFlag{Name: "bench", Value: workloads.DefaultBench, Usage: "benchmarks: a preset (lookup, controls, lpm, syscall, batch, ringbuf, all; comma-separated) or a regexp over result names (see lpmbisect list)"},
		&cli.IntFlag{Name: "samples", Value: d.Samples, Usage: "samples per benchmark per boot"},
		&cli.IntFlag{Name: "entries", Value: int(d.Entries), Usage: "LPM trie entries (dense keys [0,N))"},
		&cli.IntFlag{Name: "prefix-len", Value: int(d.PrefixLen), Usage: "LPM key prefix length (2^prefix-len must be at least --entries)"},
		&cli.IntFlag{Name: "batch-entries", Value: int(d.BatchEntries), Usage: "elements of the MapBatch maps (the batch-ops series used 1000000: about 4 s per pass of one syscall per element under TCG)"},
		&cli.IntFlag{Name: "rounds", Value: d.Rounds, Usage: "test-run repetitions of 10000 ops per sample (other families scale from it: see lpmbisect list)"},
		&cli.StringFlag{Name: "fault", Hidden: true, Usage: "test-only guest misbehaviour"},
	}
}

// guestPlan builds the guest's run plan from the flags.
func guestPlan(c *cli.Context) (measure.GuestPlan, error) {
	plan := measure.GuestPlan{
		Bench:        c.String("bench"),
		Samples:      c.Int("samples"),
		Entries:      c.Int("entries"),
		PrefixLen:    c.Int("prefix-len"),
		BatchEntries: c.Int("batch-entries"),
		Rounds:       c.Int("rounds"),
		Fault:        c.String("fault"),
	}
	if err := plan.Validate(); err != nil {
		return plan, usageError("%v", err)
	}
	return plan, nil
}

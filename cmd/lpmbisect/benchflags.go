package main

import (
	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/measure"
)

// benchFlags select benchmarks and their parameters: what the guest runs.
func benchFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "bench", Value: "LPMTrie/op=lookup", Usage: "regexp selecting benchmarks by result name"},
		&cli.IntFlag{Name: "samples", Value: 5, Usage: "samples per benchmark per boot"},
		&cli.IntFlag{Name: "entries", Value: 10000, Usage: "LPM trie entries (dense keys [0,N), prefix length 32)"},
		&cli.IntFlag{Name: "rounds", Value: 20, Usage: "test-run repetitions of 10000 ops per sample"},
		&cli.StringFlag{Name: "fault", Hidden: true, Usage: "test-only guest misbehaviour"},
	}
}

// guestPlan builds the guest's run plan from the flags.
func guestPlan(c *cli.Context) (measure.GuestPlan, error) {
	plan := measure.GuestPlan{Bench: c.String("bench"), Samples: c.Int("samples"), Entries: c.Int("entries"), Rounds: c.Int("rounds"), Fault: c.String("fault")}
	if err := plan.Validate(); err != nil {
		return plan, usageError("%v", err)
	}
	return plan, nil
}

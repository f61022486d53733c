package measure

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// GuestPlan is the guest's run plan, passed on the kernel command line as
// lpmbisect.* parameters (the guest reads them from /proc/cmdline).
type GuestPlan struct {
	Bench   string // regexp over result names without "Benchmark"
	Samples int    // samples per benchmark per boot
	Entries int    // LPM trie entries
	Rounds  int    // test-run repetitions (of 10000 ops) per sample
	Fault   string // test-only guest misbehaviour (see cmd/lpmbisect-guest)
}

// Validate checks the plan before any VM starts.
func (g GuestPlan) Validate() error {
	if g.Bench == "" || strings.ContainsAny(g.Bench, " \t\n\"") {
		return fmt.Errorf("--bench %q: must be a non-empty regexp without spaces or quotes", g.Bench)
	}
	if _, err := regexp.Compile(g.Bench); err != nil {
		return fmt.Errorf("--bench %q: %w", g.Bench, err)
	}
	for _, c := range []struct {
		name      string
		v, lo, hi int
	}{
		{"--samples", g.Samples, 1, 1000},
		{"--entries", g.Entries, 1, 1 << 26},
		{"--rounds", g.Rounds, 1, 1 << 20},
	} {
		if c.v < c.lo || c.v > c.hi {
			return fmt.Errorf("%s %d: must be between %d and %d", c.name, c.v, c.lo, c.hi)
		}
	}
	return nil
}

// KernelArgs renders the plan as kernel parameters.
func (g GuestPlan) KernelArgs() []string {
	args := []string{
		"lpmbisect.bench=" + g.Bench,
		"lpmbisect.samples=" + strconv.Itoa(g.Samples),
		"lpmbisect.entries=" + strconv.Itoa(g.Entries),
		"lpmbisect.rounds=" + strconv.Itoa(g.Rounds),
	}
	if g.Fault != "" {
		args = append(args, "lpmbisect.fault="+g.Fault)
	}
	return args
}

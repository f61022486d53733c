package measure

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/lpmbisect/lpmbisect/guest/workloads"
	"github.com/lpmbisect/lpmbisect/wire"
)

// GuestPlan is the guest's run plan as the host's user states it: a
// wire.Plan (same fields, same limits) whose Bench may name presets, and
// whose optional fields may be left zero. Wire turns it into the plan the
// guest gets; everything about encoding and limits is wire's.
//
//   - Bench is a preset name (see workloads.Presets), a comma-separated
//     list of presets, or a regexp over result names without "Benchmark".
//   - PrefixLen, BatchEntries and Port, when zero, take wire.DefaultPlan's
//     values. Samples, Entries and Rounds have no default: zero is out of
//     range.
type GuestPlan wire.Plan

// ErrNoBenchmark is wrapped by a *wire.ParamError from Validate when the
// plan's selection matches no benchmark.
var ErrNoBenchmark = errors.New("selects no benchmark")

// Wire returns the plan the guest gets: presets resolved, zero optional
// fields defaulted.
func (g GuestPlan) Wire() wire.Plan {
	p := wire.Plan(g)
	p.Bench = g.Pattern()
	d := wire.DefaultPlan()
	if p.PrefixLen == 0 {
		p.PrefixLen = d.PrefixLen
	}
	if p.BatchEntries == 0 {
		p.BatchEntries = d.BatchEntries
	}
	if p.Port == "" {
		p.Port = d.Port
	}
	return p
}

// Pattern returns the regexp the guest gets: presets resolved.
func (g GuestPlan) Pattern() string { return workloads.ResolveBench(g.Bench) }

// Validate checks the plan before any VM starts, with the guest's limits
// (wire.Plan.Validate), and checks that it selects at least one benchmark.
// Its errors are *wire.ParamError, which name the parameter at fault.
func (g GuestPlan) Validate() error {
	p := g.Wire()
	if err := p.Validate(); err != nil {
		var pe *wire.ParamError
		if errors.As(err, &pe) && pe.Param == wire.ParamBench {
			return fmt.Errorf("%w (presets: %s)", err, presetNames())
		}
		return err
	}
	if g.Benchmarks() == 0 {
		return &wire.ParamError{Param: wire.ParamBench, Value: g.Bench,
			Err: fmt.Errorf("%w (see lpmbisect list; presets: %s)", ErrNoBenchmark, presetNames())}
	}
	return nil
}

func presetNames() string {
	var names []string
	for _, p := range workloads.Presets {
		names = append(names, p.Name)
	}
	return strings.Join(names, ", ")
}

// KernelArgs renders the plan as kernel parameters (wire.Plan.KernelArgs).
func (g GuestPlan) KernelArgs() []string { return g.Wire().KernelArgs() }

// WithControls returns the plan with the harness controls (noop and
// baseline, workloads preset "controls") added to its selection, so that a
// comparison can tell a changed environment from a changed kernel.
func (g GuestPlan) WithControls() GuestPlan {
	controls := workloads.ResolveBench("controls")
	if pat := g.Pattern(); pat != controls {
		g.Bench = "(" + pat + ")|(" + controls + ")"
	}
	return g
}

// Benchmarks counts the benchmarks the plan selects (whatever the guest's
// vCPUs: benchmarks that need more vCPUs than a guest has count too).
func (g GuestPlan) Benchmarks() int { return len(g.Names()) }

// Names are the full result names (without "Benchmark") of the benchmarks
// the plan selects, as results will carry them.
func (g GuestPlan) Names() []string {
	params := workloads.PlanParams(g.Wire())
	var names []string
	for _, b := range g.Selected() {
		names = append(names, b.FullName(params))
	}
	return names
}

// Selected returns the benchmarks the plan selects (whatever the guest's
// vCPUs); nil for a pattern that does not compile.
func (g GuestPlan) Selected() []*workloads.Benchmark {
	p := g.Wire()
	re, err := regexp.Compile(p.Bench)
	if err != nil {
		return nil
	}
	return workloads.Select(workloads.RegistryWith(p.Workload, p.Verify), re, workloads.PlanParams(p))
}

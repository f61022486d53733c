package measure

import (
	"fmt"
	"strings"

	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Insight says how to explain a comparison of two kernels from the kernels
// themselves (package insight), for every command that shows the insight
// block: compare (package ab), bisect's re-check of the culprit against
// its parent, and nightly's tips. Each side's symbols come from the best
// source available: the vmlinux or debug package given for it, a build
// directory's vmlinux, else the kallsyms the guest read. A side without a
// source says so in one line; it never fails the comparison.
//
// Given to Setup.Start (RunOptions.Insight), it arms the guest's pass in
// the first boot of each side; Runner.InsightDiff then builds the block.
// This is the one place that decides whether the pass runs: not on a
// fleet, whose jobs bring back the timed results only.
type Insight struct {
	// Given are the sources given per side (Vmlinux, DebugPackage); the
	// image and the guest's findings are filled in from the sides.
	Given [2]insight.Input
	// Options select the symbols of the size diff and the functions whose
	// calls are listed.
	Options insight.Options
	// Guest arms the guest's insight pass in the first boot of each side,
	// after its timed samples: /proc/kallsyms, the benchmark programs'
	// sizes and JITed code, and calls counted per operation (of
	// insight.CountTargets).
	Guest bool
	// ProfilePeriod, when not 0, adds the profile pass to the guest's
	// pass, sampling every ProfilePeriod ns of guest clock (instructions
	// under icount; see wire.ProfileDoc).
	ProfilePeriod int
	// MemoryPlugin, when set, adds the memory pass (docs/memory.md): the
	// first boot of each side loads this QEMU plugin (under icount
	// only), and the guest runs each benchmark's operations again with
	// the plugin counting cache and dTLB misses.
	MemoryPlugin string
	// NoCycleModel leaves the memory pass's cycle model out (the branch
	// model, the warm model, the deferred work pass, est-cycles/op;
	// docs/cycles.md); NoDeferred its deferred work pass alone.
	NoCycleModel, NoDeferred bool
}

// forSetup is the insight a run booted by s can have: without the guest's
// pass when s boots on a fleet, whose jobs bring back the timed results
// only (the pass would cost each side's first boot its time for nothing).
func (in *Insight) forSetup(s *Setup) *Insight {
	if in == nil || !in.Guest || s.Remote == nil {
		return in
	}
	c := *in
	c.Guest, c.ProfilePeriod, c.MemoryPlugin = false, 0, ""
	s.Log.Printf("insight from static sources only, and no profile or memory pass: boots on a fleet do not bring back the guest's pass (the profile is local only, and so is the memory pass)")
	return &c
}

// input is what is known of side i before any boot.
func (in *Insight) input(i int, side *Side) insight.Input {
	given := in.Given[i]
	given.Image, given.Payload = side.Kernel.Image, side.BootImage // the PVH boot's ELF, if any: not decompressed again
	if given.Vmlinux == "" && given.DebugPackage == "" {
		given.Vmlinux = kernel.BuildVmlinux(side.Kernel.Image)
	}
	return given
}

// static loads the sides that have a static symbol source, before the
// boots: their callees join the functions the guest counts. A side
// without one is nil.
func (in *Insight) static(sides []*Side) [2]*insight.Side {
	var out [2]*insight.Side
	for i, side := range sides[:min(len(sides), 2)] {
		if given := in.input(i, side); given.Vmlinux != "" || given.DebugPackage != "" {
			if s := insight.Load(given, in.Options); s.Symbols != nil {
				out[i] = s
			}
		}
	}
	return out
}

// arm adds the guest's insight pass to the runner's plan, when asked for:
// the functions to count, and for each side with a static symbol source
// that its guest keep kallsyms, which the host would throw away (Debian's
// packages without their -dbg package have no such source: kallsyms is
// all there is).
func (in *Insight) arm(runner *Runner, static [2]*insight.Side) error {
	if !in.Guest {
		return nil
	}
	args, err := wire.InsightArgs(insight.CountTargets(in.Options, static[:]...))
	if err != nil {
		return fmt.Errorf("insight: %w", err)
	}
	runner.GuestArgs = append(runner.GuestArgs, args...)
	if in.ProfilePeriod > 0 {
		arg, err := wire.ProfileArg(in.ProfilePeriod)
		if err != nil {
			return fmt.Errorf("profile: %w", err)
		}
		runner.GuestArgs = append(runner.GuestArgs, arg)
	}
	if in.MemoryPlugin != "" {
		runner.GuestArgs = append(runner.GuestArgs, wire.MemoryArg)
	}
	for i, side := range runner.Sides[:min(len(runner.Sides), 2)] {
		side.StaticSymbols = static[i] != nil
	}
	return nil
}

// Diff is the insight block of sides[0] against sides[1], each with the
// guest document its first boot sent (Side.Insight; nil for none), as
// Runner.InsightDiff builds it: for sides whose documents were kept apart
// from their run (a bisection's stored re-check).
func (in *Insight) Diff(sides []*Side) *insight.Diff {
	return in.diff(sides, in.static(sides))
}

// diff builds the insight block once the boots are done, adding what
// each side's guest reported; a side's static load is reused.
func (in *Insight) diff(sides []*Side, static [2]*insight.Side) *insight.Diff {
	var loaded [2]*insight.Side
	for i, side := range sides[:min(len(sides), 2)] {
		given := in.input(i, side)
		var problem string
		if side.Insight != nil {
			doc, err := wire.DecodeInsight(side.Insight)
			if err != nil {
				problem = "guest insight: " + err.Error()
			} else {
				given.Programs, given.Counts, given.Profile = doc.Programs, doc.Counts, doc.Profile
				given.Memory = doc.Memory
				if static[i] == nil && doc.Kallsyms != "" {
					given.Kallsyms = []byte(doc.Kallsyms)
				}
				if doc.KallsymsProblem != "" {
					problem = "guest kallsyms: " + doc.KallsymsProblem
				}
			}
		} else if side.InsightProblem != "" {
			problem = "guest insight: " + side.InsightProblem
		}
		given.MemCounts, given.MemoryProblem = side.Memory, side.MemoryProblem
		if s := static[i]; s != nil {
			s.Programs, s.Counts = given.Programs, given.Counts
			s.AddProfile(given.Profile)
			s.AddMemory(given)
			loaded[i] = s
		} else {
			loaded[i] = insight.Load(given, in.Options)
		}
		if problem != "" {
			loaded[i].Problems = append(loaded[i].Problems, problem)
		}
	}
	if loaded[0] == nil || loaded[1] == nil {
		return nil
	}
	return insight.Compare(loaded[0], loaded[1], in.Options)
}

// InsightDiff is the insight block of the runner's first two sides, from
// their static sources and what their guests' passes reported: nil when
// the run was started without RunOptions.Insight.
func (r *Runner) InsightDiff() *insight.Diff {
	if r.insight == nil {
		return nil
	}
	return r.insight.diff(r.Sides, r.static)
}

// AttributeTimed makes the profile rows of d split the verdicts' centres
// (the timed instructions per operation of each side) by share.
func AttributeTimed(d *insight.Diff, rep *compare.Report) {
	if d == nil || rep == nil {
		return
	}
	d.AttributeTimed(func(bench string, side int) (float64, string, bool) {
		for _, r := range rep.Rows {
			if r.Benchmark != bench || !strings.HasSuffix(r.Unit, "/op") {
				continue
			}
			s := [2]compare.Summary{r.A, r.B}[side]
			return s.Center, r.Unit, s.Boots > 0
		}
		return 0, "", false
	})
}

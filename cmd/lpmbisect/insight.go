package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/lpmbisect/lpmbisect/flow/ab"
	"github.com/lpmbisect/lpmbisect/guest/workloads"
	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
)

// insightFlags are the flags of the insight block ("Why it changed").
type insightFlags struct {
	off            bool
	noProfile      bool
	symbols        string
	debugA, debugB string
}

// insightOpts are the flags of the commands that show the insight block.
func insightOpts(r *invocation) []opt {
	f := &r.insight
	return []opt{
		noInsightOpt(r),
		noProfileOpt(r),
		symbolsOpt(r),
		{Name: "debug-a", Ptr: &f.debugA, Usage: "symbols of kernel A: an unstripped vmlinux or its linux-image-<release>-dbg .deb (build IDs checked; default: a build directory's vmlinux, else the guest's kallsyms)"},
		{Name: "debug-b", Ptr: &f.debugB, Usage: "symbols of kernel B, as --debug-a"},
	}
}

// noInsightOpt is --no-insight, also stat's.
func noInsightOpt(r *invocation) opt {
	return opt{Name: "no-insight", Ptr: &r.insight.off, Usage: "leave out the block that says why it changed (symbol sizes, calls of the functions under test, BPF programs, call counts) and the guest's pass that feeds it"}
}

// noProfileOpt is --no-profile, also bisect's and nightly's.
func noProfileOpt(r *invocation) opt {
	return opt{Name: "no-profile", Ptr: &r.insight.noProfile, Usage: "leave out the guest's sampled profile pass (under icount, the instructions per kernel function of each benchmark, diffed A → B) from the insight block; the memory plugin's exact profile comes with the memory pass (--no-memory)"}
}

// symbolsOpt is --symbols, also stat's.
func symbolsOpt(r *invocation) opt {
	return opt{Name: "symbols", Ptr: &r.insight.symbols, Usage: "regexp over symbol names for the size diff (default: the LPM trie and the BPF map core)"}
}

// insightOptions reads --symbols.
func (r *invocation) insightOptions(cacheDir string) (insight.Options, error) {
	o := insight.Options{CacheDir: cacheDir}
	if r.insight.symbols != "" {
		re, err := regexp.Compile(r.insight.symbols)
		if err != nil {
			return o, usageError("--symbols %q: %v (give a regexp over symbol names)", r.insight.symbols, err)
		}
		o.Symbols = re
	}
	return o, nil
}

// insightInput reads the insight flags that need neither a kernel nor a
// setup (--symbols, --debug-a, --debug-b, a named --memory-plugin): nil
// with --no-insight. Commands call it before their setup too, so that a
// mistake in these flags is a usage error before any kernel is looked at,
// the accelerator's probe included.
func (r *invocation) insightInput() (*measure.Insight, error) {
	if r.insight.off {
		return nil, nil
	}
	opts, err := r.insightOptions("")
	if err != nil {
		return nil, err
	}
	in := &measure.Insight{Options: opts, Guest: true} // not on a fleet (measure.Setup.Start)
	for i, f := range []struct{ name, path string }{{"debug-a", r.insight.debugA}, {"debug-b", r.insight.debugB}} {
		if f.path == "" {
			continue
		}
		given, err := insight.SymbolFile(f.path)
		if err != nil {
			return nil, usageError("--%s: %v", f.name, err)
		}
		in.Given[i] = given
	}
	if path := r.Measure.MemoryPlugin; path != "" && !r.Measure.NoMemory {
		if _, err := os.Stat(path); err != nil {
			return nil, usageError("--memory-plugin: %v (scripts/setup builds it under the user's cache directory)", err)
		}
	}
	return in, nil
}

// compareInsight is what ab.Run needs for the insight block of a
// comparison of the benchmarks plan selects, nil with --no-insight: their
// functions of interest join insight's defaults. memory asks for the
// memory pass (compare's alone: a campaign's store keeps each image's
// guest document, not the host's plugin counts), which --no-memory
// leaves out.
func (r *invocation) compareInsight(cacheDir string, plan measure.GuestPlan, memory bool) (*measure.Insight, error) {
	in, err := r.insightInput()
	if in == nil || err != nil {
		return in, err
	}
	in.Options.CacheDir = cacheDir
	in.Options = in.Options.WithFunctions(workloads.Functions(plan.Selected()))
	if !r.insight.noProfile {
		in.ProfilePeriod = insight.DefaultProfilePeriod
	}
	if memory && workloads.Countable(plan.Selected()) {
		in.MemoryPlugin = r.memoryPlugin(cacheDir)
		in.NoCycleModel, in.NoDeferred = r.Measure.NoCycles, r.Measure.NoDeferred
	}
	return in, nil
}

// memoryPlugin is the memory pass's plugin: "" with --no-memory, or when
// the default one was not built (said in the log); a plugin named is
// checked by insightInput.
func (r *invocation) memoryPlugin(cacheDir string) string {
	if r.Measure.NoMemory {
		return ""
	}
	if path := r.Measure.MemoryPlugin; path != "" {
		return path
	}
	found, tried := vmrunner.FindMemoryPlugin(cacheDir)
	if found == "" {
		r.log.Printf("no memory pass: no plugin at %s (scripts/setup builds it; --no-memory says you do not want it)", strings.Join(tried, " or "))
	}
	return found
}

// statInsight reads the insight block saved beside a results file: nil
// with --no-insight or when there is none. With --symbols its size table
// is drawn again over those functions, or, when the block kept no sizes
// to draw it from, says so in one line of the block.
func (r *invocation) statInsight(results string, opts insight.Options) *insight.Diff {
	if r.insight.off {
		return nil
	}
	d, err := ab.SavedInsight(results)
	if err != nil {
		r.log.Printf("warning: %v", err)
	}
	if d == nil {
		return nil
	}
	if opts.Symbols != nil {
		if err := d.Resize(opts.Symbols); err != nil {
			d.Notes = append(d.Notes, fmt.Sprintf("--symbols %s: not applied: %v (a side had no symbols, or an older compare wrote it); the size table is the one compare drew", opts.Symbols, err))
		}
	}
	return d
}

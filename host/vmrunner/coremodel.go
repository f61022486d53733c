package vmrunner

import (
	"fmt"
	"strconv"
)

// CoreModel is what the memory plugin models of one CPU's core, and the
// latencies the cost model (insight's est-cycles/op) weighs its counts
// with: the default model's, or a CPU profile's. Each figure's source is
// in docs/cycles.md ("The core models"); where no public figure exists the
// value is an assumption, said there as such. The plugin's caches are
// LRU, indexed with a power-of-two number of sets, so sizes are rounded
// where a real cache is not (a mesh's L3 slices, a V-Cache die): the
// 10,000-entry tries of the benchmarks fit any of them.
type CoreModel struct {
	// Name is the CPU profile's ("default" for the default model).
	Name string
	// The caches (bytes, ways) and the data TLB (entries, ways, of 4 KiB
	// pages). L2 Size 0: not modelled (the default model, whose last level
	// is the 2 MiB L2 of the core it imitates).
	L1D, L1I, L2, LLC CacheGeometry
	DTLB              CacheGeometry
	// Branch is the branch model (memplugin/bpred.h).
	Branch BranchModel
	// Costs are the cycles the cost model gives each event.
	Costs Costs
}

// CacheGeometry is a cache's size in bytes (a TLB's in entries) and ways.
type CacheGeometry struct{ Size, Ways int }

// BranchModel is the plugin's branch model: a return stack buffer of RSB
// entries (Checked: it knows when it is empty and then predicts the return
// as an indirect branch, as AMD's do; else a circular array that predicts
// whatever an empty slot holds, as Intel's), a TAGE predictor of a bimodal
// table of 2^LogBase entries and Tables tagged tables of 2^LogEntries
// entries with TagBits tags and histories from MinHist to MaxHist
// conditional outcomes, and for indirect branches a table of their last
// targets (2^LogBTB) with an indirect target array of 2^LogITA entries
// indexed by the branch and the path of its last ITAHist indirect targets.
type BranchModel struct {
	RSB                                       int
	Checked                                   bool
	LogBase, Tables, LogEntries, TagBits      int
	MinHist, MaxHist, LogBTB, LogITA, ITAHist int
}

// Costs are the cost model's weights, in cycles (docs/cycles.md): Width
// instructions retire per cycle at best (the base), L2, L3 and Memory are
// the load-to-use latencies beyond the L1's (L1) of a line found there,
// Mispredict is the penalty of a mispredicted branch, Locked the latency of
// a locked read-modify-write, Serial the cost of an instruction that waits
// for all before it (a full window drained: the reorder buffer's entries
// over the width).
type Costs struct {
	Width                      float64
	L1, L2, L3, Memory         float64
	Mispredict, Locked, Serial float64
}

// The branch models of the two vendors' cores: AMD's return stack is
// checked and 32 deep, Intel's circular and 16 deep; both predict
// conditional branches with TAGE-like predictors (AMD since Zen 2; Intel's
// reverse-engineered as a base table and three tagged tables over a path
// history of up to 194 branches). Table sizes are assumptions.
var (
	amdBranch = BranchModel{RSB: 32, Checked: true, LogBase: 13, Tables: 6, LogEntries: 10, TagBits: 11,
		MinHist: 4, MaxHist: 640, LogBTB: 12, LogITA: 11, ITAHist: 4}
	intelBranch = BranchModel{RSB: 16, Checked: false, LogBase: 13, Tables: 3, LogEntries: 11, TagBits: 11,
		MinHist: 34, MaxHist: 194, LogBTB: 12, LogITA: 10, ITAHist: 4}
)

// coreModels are the core of the default model and of every CPU profile.
var coreModels = []CoreModel{
	{
		// The default model: Golden Cove's L1s and a 2 MiB last level
		// (Sapphire Rapids' L2), with Sapphire Rapids' predictor and
		// weights; the cost model weighs its misses beyond the 2 MiB as
		// hits in Sapphire Rapids' L3.
		Name: DefaultCPUProfile, L1D: CacheGeometry{48 << 10, 12}, L1I: CacheGeometry{32 << 10, 8},
		LLC: CacheGeometry{2 << 20, 16}, DTLB: CacheGeometry{64, 4}, Branch: intelBranch,
		Costs: Costs{Width: 6, L1: 5, L2: 16, L3: 125, Memory: 420, Mispredict: 14, Locked: 12, Serial: 85},
	},
	{
		Name: "zen2", L1D: CacheGeometry{32 << 10, 8}, L1I: CacheGeometry{32 << 10, 8}, L2: CacheGeometry{512 << 10, 8},
		LLC: CacheGeometry{16 << 20, 16}, DTLB: CacheGeometry{64, 4},
		Branch: BranchModel{RSB: 32, Checked: true, LogBase: 13, Tables: 6, LogEntries: 10, TagBits: 11,
			MinHist: 4, MaxHist: 640, LogBTB: 12, LogITA: 10, ITAHist: 4},
		Costs: Costs{Width: 4, L1: 4, L2: 13, L3: 34, Memory: 415, Mispredict: 17, Locked: 8, Serial: 56},
	},
	{
		Name: "zen3", L1D: CacheGeometry{32 << 10, 8}, L1I: CacheGeometry{32 << 10, 8}, L2: CacheGeometry{512 << 10, 8},
		LLC: CacheGeometry{32 << 20, 16}, DTLB: CacheGeometry{64, 4}, Branch: amdBranch,
		Costs: Costs{Width: 6, L1: 4, L2: 13, L3: 46, Memory: 420, Mispredict: 13, Locked: 8, Serial: 43},
	},
	{
		Name: "zen4", L1D: CacheGeometry{32 << 10, 8}, L1I: CacheGeometry{32 << 10, 8}, L2: CacheGeometry{1 << 20, 8},
		LLC: CacheGeometry{32 << 20, 16}, DTLB: CacheGeometry{64, 4}, Branch: amdBranch,
		Costs: Costs{Width: 6, L1: 4, L2: 14, L3: 54, Memory: 420, Mispredict: 13, Locked: 8, Serial: 53},
	},
	{
		Name: "skylake-server", L1D: CacheGeometry{32 << 10, 8}, L1I: CacheGeometry{32 << 10, 8}, L2: CacheGeometry{1 << 20, 16},
		LLC: CacheGeometry{32 << 20, 16}, DTLB: CacheGeometry{64, 4}, Branch: intelBranch,
		Costs: Costs{Width: 6, L1: 5, L2: 14, L3: 46, Memory: 300, Mispredict: 14, Locked: 8, Serial: 37},
	},
	{
		Name: "icelake-server", L1D: CacheGeometry{48 << 10, 12}, L1I: CacheGeometry{32 << 10, 8}, L2: CacheGeometry{1280 << 10, 20},
		LLC: CacheGeometry{32 << 20, 16}, DTLB: CacheGeometry{64, 4}, Branch: intelBranch,
		Costs: Costs{Width: 6, L1: 5, L2: 14, L3: 100, Memory: 350, Mispredict: 14, Locked: 8, Serial: 59},
	},
	{
		Name: "sapphirerapids", L1D: CacheGeometry{48 << 10, 12}, L1I: CacheGeometry{32 << 10, 8}, L2: CacheGeometry{2 << 20, 16},
		LLC: CacheGeometry{64 << 20, 16}, DTLB: CacheGeometry{64, 4}, Branch: intelBranch,
		Costs: Costs{Width: 6, L1: 5, L2: 16, L3: 125, Memory: 420, Mispredict: 14, Locked: 12, Serial: 85},
	},
}

// CoreModelOf returns the core of the CPU profile named profile ("" and
// DefaultCPUProfile: the default model's), and false for a name no core has.
func CoreModelOf(profile string) (CoreModel, bool) {
	if profile == "" {
		profile = DefaultCPUProfile
	}
	for _, c := range coreModels {
		if c.Name == profile {
			return c, true
		}
	}
	return CoreModel{}, false
}

// String is the branch model as the plugin's bpred= argument takes it.
func (b BranchModel) String() string {
	kind := "r"
	if b.Checked {
		kind = "c"
	}
	return fmt.Sprintf("%d:%s:%d:%d:%d:%d:%d:%d:%d:%d:%d", b.RSB, kind, b.LogBase, b.Tables, b.LogEntries, b.TagBits,
		b.MinHist, b.MaxHist, b.LogBTB, b.LogITA, b.ITAHist)
}

// PluginArgs are the plugin's arguments for this core (QEMU's -plugin
// takes them comma-separated). With cycles, the cycle model's: the branch
// model, and the model warmed by each benchmark's warm-up (warm=1), so
// that its caches and predictors start the counted operations where the
// hardware's would. The default core without cycles gives none: the
// plugin's own defaults are the default model's caches, cold.
func (c CoreModel) PluginArgs(cycles bool) []string {
	var out []string
	if c.Name != DefaultCPUProfile || cycles {
		out = append(out, "core="+c.Name)
	}
	if c.Name != DefaultCPUProfile {
		out = append(out, "l1d="+c.L1D.arg(), "l1i="+c.L1I.arg(), "llc="+c.LLC.arg(), "dtlb="+c.DTLB.arg())
		if c.L2.Size > 0 {
			out = append(out, "l2="+c.L2.arg())
		}
	}
	if cycles {
		out = append(out, "warm=1", "bpred="+c.Branch.String())
	}
	return out
}

func (g CacheGeometry) arg() string { return strconv.Itoa(g.Size) + ":" + strconv.Itoa(g.Ways) }

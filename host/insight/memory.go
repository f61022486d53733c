package insight

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/wire"
)

// The memory pass (docs/memory.md): in the first boot of each side QEMU
// loads the memory plugin, which models an L1D, L1I, unified LLC and
// dTLB per vCPU, and the guest runs each benchmark's operations again,
// their bpf_loop marked, so that the plugin counts the timed operations
// alone. Under icount the counts are those of a deterministic guest.

// MemoryMetrics are the rows of a memory comparison, in order: a row is
// there when both sides have its count (the cycle model's, from
// MetricL2Miss on, only with it, and the L2's only on a core that has one
// modelled).
var MemoryMetrics = []string{"l1d-miss/op", MetricL2Miss, "llc-miss/op", "dtlb-miss/op", "mem-access/op", "l1i-miss/op",
	MetricBranches, MetricCondMispred, MetricIndMispred, MetricRetMispred, MetricDeferredInsn, MetricEstCycles, "insn/op"}

// memoryMinEffect is the smallest relative change of a memory row that
// counts (the deterministic rule's minimum effect), and MemoryBounds the
// relative spread of two boots of one image that the rule allows for, per
// metric (docs/memory.md, "Two boots of one image"): the boots' host I/O
// lands at other guest instants, so the slab's physical pages differ a
// little: accesses and instructions repeat within 0.03 %, L1D misses
// within 0.5 % at 10000 entries and 3.5 % at 1000 (a trie about the L1D's
// size, where conflicts depend on the pages), while the last level cache
// and the dTLB (4 KiB pages over a slab whose pages fall elsewhere at each
// boot) moved by up to 34 % and 230 % (0.044 and 0.145 misses per
// sequential lookup on 6.1), so their rows say DIFFERENT only beyond 52 %
// and 252 %.
//
// A row whose values differ by less than its metric's floor
// (memoryFloor) events per operation is SAME whatever its relative
// change: rare events (an L1I miss every hundred lookups) move by large
// fractions of themselves between boots. The dTLB's floor is wider: its
// misses fall into one of two modes per boot, by where the slab's pages
// fell (0.044 or 0.145 per sequential lookup on 6.1 at 10000 entries;
// 0.011, 0.079, 0.136 or 0.173 per random lookup on 6.12 at 1000), so
// two boots of one image differ by up to 0.13 misses per operation
// however small the counts, which no relative bound covers near zero.
const memoryMinEffect = 0.02

// memoryFloor is the floor of metric's rows, in events per operation.
func memoryFloor(metric string) float64 {
	if metric == "dtlb-miss/op" {
		return 0.25
	}
	return 0.02
}

// MemoryBounds are the deterministic rule's jitter bounds per metric
// (est-cycles/op's follows from its terms': estimateBound).
var MemoryBounds = map[string]float64{
	"l1d-miss/op":      0.05,
	"llc-miss/op":      0.50,
	"dtlb-miss/op":     2.50,
	"mem-access/op":    0.002,
	"l1i-miss/op":      0.20,
	"insn/op":          0.002,
	MetricL2Miss:       0.10,
	MetricBranches:     0.03,
	MetricCondMispred:  1.00,
	MetricIndMispred:   1.00,
	MetricRetMispred:   0.05,
	MetricDeferredInsn: 0.10,
	MetricEstCycles:    0.02,
}

// UserSpaceBound is the least bound of every row of a benchmark whose
// counted operations include user space (Memory.UserSpace: the kernel
// bench's delete and its refill by syscalls): the guest's scheduler lands
// its context switches, and the kernel its deferred work, in the window
// at random, which moved a delete's L1I misses by 94 %, its L1D misses by
// 19 % and its mispredicted returns by 28 % between two boots of one
// image (docs/cycles.md): such a row is DIFFERENT only when it more than
// doubles or halves.
const UserSpaceBound = 1.0

// deferredWaitNoise is how many instructions two waits of the deferred
// work pass differ by with no work in them (timers waking the idle CPU at
// other instants: up to 400,000 in self-comparisons of Debian 6.1 and
// 6.12); over a segment's operations it is deferred-insn/op's floor, and
// at one cycle an instruction it adds to est-cycles/op's.
const deferredWaitNoise = 600_000

// MemorySummary is one side's memory pass as a whole.
type MemorySummary struct {
	// Model is the plugin's cache model ("l1d 49152 12 l1i …").
	Model string `json:"model,omitempty"`
	// Cost is the guest clock of the pass (instructions under icount);
	// HostWall and HostCPU the host time QEMU spent instrumenting (from
	// the guest's first mark to its last), wall and the vCPU thread's CPU.
	Cost     uint64        `json:"cost"`
	Idle     uint64        `json:"idle,omitempty"`
	HostWall time.Duration `json:"host_wall_ns"`
	HostCPU  time.Duration `json:"host_cpu_ns"`
	Problem  string        `json:"problem,omitempty"`
}

// Memory is one benchmark's counts on one side, per operation.
type Memory struct {
	Benchmark string `json:"benchmark"`
	Ops       uint64 `json:"ops"`
	Unit      string `json:"unit,omitempty"`
	// PerOp holds each of MemoryMetrics per operation that was counted.
	PerOp map[string]float64 `json:"per_op,omitempty"`
	// Cycles is the cost model's estimate (nil without the cycle model),
	// Deferred what the operations left for later (nil without the
	// deferred work pass).
	Cycles   *Cycles   `json:"cycles,omitempty"`
	Deferred *Deferred `json:"deferred,omitempty"`
	// Functions are the data misses by function, most first (from the
	// plugin's instructions with the most misses); empty when not
	// attributed (Attribution says why).
	Functions   []MemoryFunction `json:"functions,omitempty"`
	Attribution string           `json:"attribution,omitempty"`
	Problem     string           `json:"problem,omitempty"`
	// UserSpace says its counted operations include user space (the
	// kernel bench's delete with its refill; wire.BenchMemory.UserSpace).
	UserSpace bool `json:"user_space,omitempty"`
}

// MemoryFunction is the data accesses and misses per operation of the
// instructions of one function among the plugin's top instructions.
type MemoryFunction struct {
	Function string  `json:"function"`
	Accesses float64 `json:"accesses"`
	L1D      float64 `json:"l1d"`
	LLC      float64 `json:"llc"`
	DTLB     float64 `json:"dtlb"`
}

// AddMemory adds what the guest's memory pass ran and the plugin counted
// (in.Memory, in.MemCounts), named with the side's symbols.
func (s *Side) AddMemory(in Input) {
	doc := in.Memory
	if doc == nil {
		return
	}
	sum := &MemorySummary{Cost: doc.Cost, Idle: min(doc.Idle, doc.Cost), Problem: doc.Problem}
	s.MemorySummary = sum
	switch {
	case sum.Problem != "":
		return
	case in.MemCounts == nil:
		sum.Problem = "the plugin counted nothing"
		if in.MemoryProblem != "" {
			sum.Problem += ": " + in.MemoryProblem
		}
		return
	}
	sum.Model, sum.HostWall, sum.HostCPU = in.MemCounts.Model, in.MemCounts.ArmedWall, in.MemCounts.ArmedCPU
	if in.MemoryProblem != "" {
		sum.Problem = in.MemoryProblem
	}
	var name func(uint64) string
	var locate func([]wire.ProfileSymbol) func(uint64) (string, bool)
	attribution := "not attributed: no symbols"
	if s.Symbols != nil {
		if offset, ok := kaslrOffset(s.Symbols, doc.Text); ok {
			name, attribution = addressNamer(s.Symbols, offset, nil), ""
			locate = func(progs []wire.ProfileSymbol) func(uint64) (string, bool) {
				return addressLocator(s.Symbols, offset, progs)
			}
		} else {
			attribution = "not attributed: " + noTextProblem
		}
	}
	var exact []Profile
	defer func() { s.setExactProfiles(exact, doc.Cost) }()
	if in.MemCounts.Version < 2 {
		if s.ProfileSummary == nil {
			s.ProfileSummary = &ProfileSummary{}
		}
		s.ProfileSummary.ExactProblem = fmt.Sprintf("no exact profile: the memory plugin wrote format %d, from before the exact profile (run scripts/setup to build it again); the benchmarks it counted were not sampled either", in.MemCounts.Version)
	}
	for _, b := range doc.Benchmarks {
		m := Memory{Benchmark: b.Benchmark, Ops: b.Ops, Unit: b.Unit, Problem: b.Problem, Attribution: attribution, UserSpace: b.UserSpace}
		seg := in.MemCounts.Segment(b.Segment)
		switch {
		case m.Problem != "":
		case seg == nil:
			m.Problem = fmt.Sprintf("the plugin wrote no segment %d", b.Segment)
		case seg.Windows == 0:
			m.Problem = "no counting window: the benchmark's programs carry no marks (only programs timed around one bpf_loop do: the LPM trie's, the hash maps', the bloom filter's, task storage's; docs/memory.md)"
		case b.Ops == 0:
			m.Problem = "no operations"
		}
		if m.Problem != "" {
			s.Memory = append(s.Memory, m)
			continue
		}
		ops := float64(b.Ops)
		m.PerOp = map[string]float64{
			"l1d-miss/op":   float64(seg.L1D.Misses) / ops,
			"llc-miss/op":   float64(seg.LLC.Misses) / ops,
			"dtlb-miss/op":  float64(seg.DTLB.Misses) / ops,
			"mem-access/op": float64(seg.DTLB.Accesses) / ops,
			"l1i-miss/op":   float64(seg.L1I.Misses) / ops,
			"insn/op":       float64(seg.Insns) / ops,
		}
		var branches float64
		if f := seg.Flow; f != nil {
			branches = float64(f.Call + f.IndirectCall + f.Ret + f.Jmp + f.IndirectJmp + f.Jcc)
		}
		var def events
		m.Deferred, def = deferredWork(b.Deferred, in.MemCounts, name)
		m.Cycles = cycleMetrics(m.PerOp, in.MemCounts.Core, windowEvents(seg), m.Deferred, def, ops, branches)
		if name != nil {
			m.Functions = memoryFunctions(seg.PCs, name, ops)
			if p, ok := exactProfile(b, seg, locate(b.Programs)); ok {
				exact = append(exact, p)
			}
		}
		s.Memory = append(s.Memory, m)
	}
}

// pluginFunction names the function of an address the plugin wrote:
// name's, or notAttributed for its line of every instruction that found
// no room (vmrunner.PCOverflow).
func pluginFunction(name func(uint64) string, pc uint64) string {
	if pc == vmrunner.PCOverflow {
		return notAttributed
	}
	return name(pc)
}

// memoryFunctions sums the plugin's top instructions by function.
func memoryFunctions(pcs []vmrunner.MemPC, name func(uint64) string, ops float64) []MemoryFunction {
	sums := map[string]MemoryFunction{}
	for _, pc := range pcs {
		fn := pluginFunction(name, pc.PC)
		f := sums[fn]
		f.Function = fn
		f.Accesses += float64(pc.Accesses) / ops
		f.L1D += float64(pc.L1D) / ops
		f.LLC += float64(pc.LLC) / ops
		f.DTLB += float64(pc.DTLB) / ops
		sums[fn] = f
	}
	var out []MemoryFunction
	for _, f := range sums {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b MemoryFunction) int {
		return cmp.Or(cmp.Compare(b.L1D+b.LLC+b.DTLB, a.L1D+a.LLC+a.DTLB), cmp.Compare(a.Function, b.Function))
	})
	return out
}

// MemoryDiff compares one benchmark's memory counts A → B.
type MemoryDiff struct {
	Benchmark string       `json:"benchmark"`
	A         *Memory      `json:"a,omitempty"`
	B         *Memory      `json:"b,omitempty"`
	Rows      []MemoryRow  `json:"rows,omitempty"`
	Functions []MemoryFRow `json:"functions,omitempty"`
}

// MemoryRow is one metric per operation, A → B, with the deterministic
// rule's verdict (compare.decideExact at memoryMinEffect and the
// metric's MemoryBounds, SAME below its memoryFloor).
type MemoryRow struct {
	Metric   string          `json:"metric"`
	A        float64         `json:"a"`
	B        float64         `json:"b"`
	DeltaPct float64         `json:"delta_pct"`
	Verdict  compare.Verdict `json:"verdict"`
	// Bound and Floor are the jitter bound and the floor the rule used
	// when they are not the metric's MemoryBounds and memoryFloor
	// (rowRule).
	Bound float64 `json:"bound,omitempty"`
	Floor float64 `json:"floor,omitempty"`
}

// MemoryFRow is one function's L1D misses per operation A → B.
type MemoryFRow struct {
	Function string  `json:"function"`
	L1DA     float64 `json:"l1d_a"`
	L1DB     float64 `json:"l1d_b"`
	LLCA     float64 `json:"llc_a"`
	LLCB     float64 `json:"llc_b"`
	DTLBA    float64 `json:"dtlb_a"`
	DTLBB    float64 `json:"dtlb_b"`
}

// maxMemoryFunctions bounds the function rows of a memory diff.
const maxMemoryFunctions = 8

// compareMemory pairs the memory counts of a and b by benchmark.
func compareMemory(a, b []Memory) []MemoryDiff {
	p := pairUp(a, b, func(m Memory) string { return m.Benchmark })
	var out []MemoryDiff
	for _, k := range p.keys {
		d := MemoryDiff{Benchmark: k}
		if l := p.a[k]; len(l) > 0 {
			d.A = &l[len(l)-1]
		}
		if l := p.b[k]; len(l) > 0 {
			d.B = &l[len(l)-1]
		}
		if d.A != nil && d.B != nil && d.A.PerOp != nil && d.B.PerOp != nil {
			for _, metric := range MemoryMetrics {
				a, okA := d.A.PerOp[metric]
				b, okB := d.B.PerOp[metric]
				if !okA || !okB {
					continue
				}
				bound, floor := rowRule(metric, d.A, d.B)
				r := memoryRow(k, metric, a, b, bound, floor)
				d.Rows = append(d.Rows, MemoryRow{Metric: metric, A: r.A.Center, B: r.B.Center, DeltaPct: r.DeltaPct, Verdict: r.Verdict, Bound: bound, Floor: floor})
			}
			d.Functions = memoryFunctionRows(d.A.Functions, d.B.Functions)
		}
		out = append(out, d)
	}
	return out
}

// memoryRow is one metric's row of benchmark bench, A → B, decided by
// the deterministic rule (compare.ExactRow) at bound and floor, or where
// they are 0 at the metric's MemoryBounds and memoryFloor.
func memoryRow(bench, metric string, a, b, bound, floor float64) compare.Row {
	if bound == 0 {
		bound = MemoryBounds[metric]
	}
	if floor == 0 {
		floor = memoryFloor(metric)
	}
	return compare.ExactRow(bench, metric, memoryPassSource, a, b, memoryMinEffect, bound, floor)
}

// rowRule is the bound and floor of a row of metric that differ from the
// metric's own (0: the metric's): est-cycles/op's bound follows from its
// terms' (estimateBound); the deferred rows' floor is the waits' noise
// over the operations, est-cycles/op's adds it at one cycle an
// instruction to one cycle; under the cycle model's warm caches the last
// level's misses are rare and follow what the kernel touched between the
// windows (0.03 and 0.13 a sequential lookup in two boots of Debian
// 6.12), and so are its data TLB's (0.04 and 0.14 on zen4), so both have
// a floor of 0.2; a benchmark with user space in its operations has
// every bound at least UserSpaceBound.
func rowRule(metric string, a, b *Memory) (bound, floor float64) {
	if metric == MetricEstCycles {
		bound = estimateBound(a.Cycles, b.Cycles)
	}
	var noise float64
	for _, m := range []*Memory{a, b} {
		if m.Deferred != nil && m.Deferred.Ops > 0 {
			noise = max(noise, deferredWaitNoise/float64(m.Deferred.Ops))
		}
	}
	switch {
	case metric == MetricDeferredInsn:
		floor = noise
	case metric == MetricEstCycles:
		floor = 1 + noise
	case (metric == "llc-miss/op" || metric == "dtlb-miss/op") && a.Cycles != nil && b.Cycles != nil:
		floor = max(0.2, memoryFloor(metric))
	}
	if a.UserSpace || b.UserSpace {
		bound = max(bound, MemoryBounds[metric], UserSpaceBound)
	}
	return bound, floor
}

// memoryPassSource names the memory pass as the one "boot" of a memory
// row's side (compare.Boot.ID): its counts come from the first boot of
// each side.
const memoryPassSource = "memory pass"

// memoryNote is the note of every memory row of a compare table.
var memoryNote = fmt.Sprintf("counted once per side by the memory pass (the QEMU plugin's cache model, in the first boot of each side; docs/memory.md); SAME whenever the sides differ by less than %g per operation (%g for dTLB misses)", memoryFloor("l1d-miss/op"), memoryFloor("dtlb-miss/op"))

// MemoryRows are the memory counts of d as rows of a compare table, one
// per benchmark both sides counted and metric (MemoryMetrics without
// insn/op, which the timed samples measure), in d's order of benchmarks.
// Their verdicts are those of the rows in the why-block.
func (d *Diff) MemoryRows() []compare.Row {
	if d == nil {
		return nil
	}
	var out []compare.Row
	for _, m := range d.Memory {
		for _, r := range m.Rows {
			if r.Metric == compare.UnitInstructions {
				continue
			}
			row := memoryRow(m.Benchmark, r.Metric, r.A, r.B, r.Bound, r.Floor)
			row.Notes = []string{memoryNote}
			if note, ok := cycleNotes[r.Metric]; ok {
				row.Notes = append(row.Notes, note)
			}
			out = append(out, row)
		}
	}
	return out
}

func memoryFunctionRows(a, b []MemoryFunction) []MemoryFRow {
	rows := map[string]*MemoryFRow{}
	var names []string
	for side, fs := range [][]MemoryFunction{a, b} {
		for _, f := range fs {
			r := rows[f.Function]
			if r == nil {
				r = &MemoryFRow{Function: f.Function}
				rows[f.Function] = r
				names = append(names, f.Function)
			}
			if side == 0 {
				r.L1DA, r.LLCA, r.DTLBA = f.L1D, f.LLC, f.DTLB
			} else {
				r.L1DB, r.LLCB, r.DTLBB = f.L1D, f.LLC, f.DTLB
			}
		}
	}
	var out []MemoryFRow
	for _, n := range names {
		out = append(out, *rows[n])
	}
	slices.SortFunc(out, func(x, y MemoryFRow) int {
		return cmp.Or(cmp.Compare(max(y.L1DA, y.L1DB), max(x.L1DA, x.L1DB)), cmp.Compare(x.Function, y.Function))
	})
	return out[:min(len(out), maxMemoryFunctions)]
}

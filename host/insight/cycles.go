package insight

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/wire"
)

// The cycle model (docs/cycles.md): with it the memory plugin also
// predicts branches (a return stack buffer, TAGE, an indirect target
// array) with the sizes of the side's core (vmrunner.CoreModel), models
// the core's L2, counts locked and serialising instructions, warms its
// model with each benchmark's warm-up, and with the deferred work pass
// counts what the operations leave for later. est-cycles/op weighs these
// counts with the core's latencies: a model, never a measurement.

// The cycle model's rows.
const (
	MetricL2Miss       = "l2-miss/op"
	MetricBranches     = "branch/op"
	MetricCondMispred  = "cond-mispred/op"
	MetricIndMispred   = "ind-mispred/op"
	MetricRetMispred   = "ret-mispred/op"
	MetricDeferredInsn = "deferred-insn/op"
	MetricEstCycles    = "est-cycles/op"
)

// cycleNotes are the further notes of the cycle model's rows in a
// compare table.
var cycleNotes = map[string]string{
	MetricEstCycles:    "est-cycles/op is a cost model's estimate from the counts (the CPU profile's latencies, docs/cycles.md), not a measurement; its jitter bound is its terms', weighted, its floor one cycle and the deferred work's",
	MetricDeferredInsn: "deferred-insn/op: the kernel's instructions outside the timed windows while the operations' deferred work ran, less a wait alone (docs/cycles.md); SAME below the waits' noise over the operations",
	MetricCondMispred:  "mispredictions of the plugin's branch model with the CPU profile's sizes (docs/cycles.md)",
	MetricIndMispred:   "mispredictions of the plugin's branch model with the CPU profile's sizes (docs/cycles.md)",
	MetricRetMispred:   "mispredictions of the plugin's branch model with the CPU profile's sizes (docs/cycles.md)",
}

// events are the counts the cost model weighs, of one bank of a segment
// (the windows, or the kernel outside them) or per operation.
type events struct {
	insns, l1d, l1i, l2, llc   float64
	hasL2                      bool
	cond, ind, ret             float64
	condMiss, indMiss, retMiss float64
	lock, serial               float64
	branchModel                bool
}

// windowEvents are a segment's counts inside its windows.
func windowEvents(seg *vmrunner.MemSegment) events {
	return newEvents(seg.Insns, seg.L1D, seg.L1I, seg.LLC, seg.L2, seg.Events)
}

// outsideEvents are a wide segment's counts of the kernel outside its
// windows.
func outsideEvents(o *vmrunner.Outside) events {
	return newEvents(o.Insns, o.L1D, o.L1I, o.LLC, o.L2, o.Events)
}

// newEvents are the counts of one bank (l2 nil: no L2 modelled).
func newEvents(insns uint64, l1d, l1i, llc vmrunner.CacheCount, l2 *vmrunner.CacheCount, ev *vmrunner.Events) events {
	e := events{insns: float64(insns), l1d: float64(l1d.Misses), l1i: float64(l1i.Misses), llc: float64(llc.Misses)}
	if l2 != nil {
		e.l2, e.hasL2 = float64(l2.Misses), true
	}
	e.addClasses(ev)
	return e
}

func (e *events) addClasses(ev *vmrunner.Events) {
	if ev == nil {
		return
	}
	e.lock, e.serial = float64(ev.Lock), float64(ev.Serial)
	if ev.Branches {
		e.branchModel = true
		e.cond, e.ind, e.ret = float64(ev.Cond), float64(ev.Ind), float64(ev.Ret)
		e.condMiss, e.indMiss, e.retMiss = float64(ev.CondMiss), float64(ev.IndMiss), float64(ev.RetMiss)
	}
}

// minus is e less b, each count, and per is e over n operations.
func (e events) minus(b events) events {
	e.insns -= b.insns
	e.l1d, e.l1i, e.l2, e.llc = e.l1d-b.l1d, e.l1i-b.l1i, e.l2-b.l2, e.llc-b.llc
	e.cond, e.ind, e.ret = e.cond-b.cond, e.ind-b.ind, e.ret-b.ret
	e.condMiss, e.indMiss, e.retMiss = e.condMiss-b.condMiss, e.indMiss-b.indMiss, e.retMiss-b.retMiss
	e.lock, e.serial = e.lock-b.lock, e.serial-b.serial
	return e
}

func (e events) per(n float64) events {
	e.insns /= n
	e.l1d, e.l1i, e.l2, e.llc = e.l1d/n, e.l1i/n, e.l2/n, e.llc/n
	e.cond, e.ind, e.ret = e.cond/n, e.ind/n, e.ret/n
	e.condMiss, e.indMiss, e.retMiss = e.condMiss/n, e.indMiss/n, e.retMiss/n
	e.lock, e.serial = e.lock/n, e.serial/n
	return e
}

// CycleTerm is one term of the cost model: its cycles per operation and
// what it weighs; bound is the row whose jitter bound its count has
// (MemoryBounds), from which the estimate's own bound follows.
type CycleTerm struct {
	Term   string  `json:"term"`
	Cycles float64 `json:"cycles"`
	bound  string
}

// Cycles is the cost model's estimate of one benchmark's cycles per
// operation on its side's core (a model, not a measurement): Terms in
// the window, Deferred the same terms of the work left for later (0
// without the deferred work pass), Total both, and KCachegrind the
// simplest anchor's formula on the same counts (Ir + 10 Bm + 10 L1m +
// 100 LLm, of KDE's KCachegrind), for comparison.
type Cycles struct {
	Core        string      `json:"core"`
	Terms       []CycleTerm `json:"terms"`
	Window      float64     `json:"window"`
	Deferred    float64     `json:"deferred,omitempty"`
	Total       float64     `json:"total"`
	KCachegrind float64     `json:"kcachegrind"`
}

// estimate weighs per-operation counts e with a core's costs: the base of
// e's instructions at the core's width, each miss by the latency of the
// level that served it beyond the L1's (a line that missed the L1 and hit
// the L2 costs the L2's latency less the L1's, and so on), each
// misprediction the penalty, each locked and serialising instruction its
// cost. Without a modelled L2 (the default model, whose last level is a
// 2 MiB L2) its misses are weighed as hits in a server's L3, which holds
// the tries of the benchmarks. Data TLB misses weigh nothing: the
// plugin's 4 KiB pages count pages touched, while the kernel's direct map,
// where slab objects live, uses 1 GiB pages.
func estimate(c vmrunner.Costs, e events) []CycleTerm {
	l1miss := e.l1d + e.l1i
	terms := []CycleTerm{{"instructions", e.insns / c.Width, "insn/op"}}
	if e.hasL2 {
		terms = append(terms,
			CycleTerm{"L1 misses served by the L2", (l1miss - e.l2) * (c.L2 - c.L1), "l1d-miss/op"},
			CycleTerm{"L2 misses served by the L3", (e.l2 - e.llc) * (c.L3 - c.L1), MetricL2Miss},
			CycleTerm{"L3 misses served by memory", e.llc * (c.Memory - c.L1), "llc-miss/op"})
	} else {
		terms = append(terms,
			CycleTerm{"L1 misses served by the L2", (l1miss - e.llc) * (c.L2 - c.L1), "l1d-miss/op"},
			CycleTerm{"L2 misses, weighed as L3 hits", e.llc * (c.L3 - c.L1), "llc-miss/op"})
	}
	return append(terms,
		CycleTerm{"mispredicted returns", e.retMiss * c.Mispredict, MetricRetMispred},
		CycleTerm{"other mispredicted branches", (e.condMiss + e.indMiss) * c.Mispredict, MetricCondMispred},
		CycleTerm{"locked instructions", e.lock * c.Locked, "insn/op"},
		CycleTerm{"serialising instructions", e.serial * c.Serial, "insn/op"})
}

// estimateBound is the jitter bound of an estimate: its terms' bounds
// weighted by their shares of it (the deferred work's by deferred-insn/op's),
// the larger of the two sides'.
func estimateBound(a, b *Cycles) float64 {
	var out float64
	for _, c := range []*Cycles{a, b} {
		if c == nil || c.Total <= 0 {
			continue
		}
		w := math.Abs(c.Deferred) * MemoryBounds[MetricDeferredInsn]
		for _, t := range c.Terms {
			w += math.Abs(t.Cycles) * MemoryBounds[t.bound]
		}
		out = max(out, w/c.Total)
	}
	return out
}

func sumTerms(t []CycleTerm) float64 {
	var s float64
	for _, x := range t {
		s += x.Cycles
	}
	return s
}

// kcachegrind is KCachegrind's cycle estimate on per-operation counts e:
// Ir + 10 Bm + 10 L1m + 20 Ge + 100 L2m + 100 LLm (libcore/globalconfig.cpp),
// with Ge (global bus events) 0 and the last level for both of its outer
// levels.
func kcachegrind(e events) float64 {
	return e.insns + 10*(e.condMiss+e.indMiss) + 10*(e.l1d+e.l1i) + 100*e.llc
}

// Deferred is what one benchmark's operations left for later, per
// operation (the deferred work pass, wire.DeferredDoc): the kernel's
// execution outside the windows of a wide segment over the operations and
// a wait, less that of the wait alone. Functions are its instructions per
// operation by function, most first.
type Deferred struct {
	Ops       uint64             `json:"ops"`
	Insns     float64            `json:"insns"`
	L1D       float64            `json:"l1d"`
	L2        float64            `json:"l2,omitempty"`
	LLC       float64            `json:"llc"`
	Mispred   float64            `json:"mispred"`
	Lock      float64            `json:"lock"`
	Serial    float64            `json:"serial"`
	Wait      uint64             `json:"wait"`
	Functions []DeferredFunction `json:"functions,omitempty"`
	Problem   string             `json:"problem,omitempty"`
}

// DeferredFunction is one function's deferred instructions per operation.
type DeferredFunction struct {
	Function string  `json:"function"`
	Insns    float64 `json:"insns"`
}

// maxDeferredFunctions bounds the functions of a Deferred.
const maxDeferredFunctions = 12

// deferredWork reads a benchmark's deferred work pass from the plugin's
// segments; nil when the pass did not run, with Problem set when it ran
// and cannot say. e holds the counts per operation (the zero events when
// there is a problem).
func deferredWork(d *wire.DeferredDoc, m *vmrunner.MemCounts, name func(uint64) string) (*Deferred, events) {
	if d == nil {
		return nil, events{}
	}
	out := &Deferred{Ops: d.Ops, Wait: d.Wait, Problem: d.Problem}
	w, b := m.Segment(d.Segment), m.Segment(d.Baseline)
	switch {
	case out.Problem != "":
	case w == nil || b == nil || w.Outside == nil || b.Outside == nil:
		out.Problem = fmt.Sprintf("the plugin wrote no wide segments %d and %d", d.Baseline, d.Segment)
	case d.Ops == 0:
		out.Problem = "no operations"
	}
	if out.Problem != "" {
		return out, events{}
	}
	n := float64(d.Ops)
	e := outsideEvents(w.Outside).minus(outsideEvents(b.Outside)).per(n)
	out.Insns, out.L1D, out.L2, out.LLC = e.insns, e.l1d, e.l2, e.llc
	out.Mispred, out.Lock, out.Serial = e.condMiss+e.indMiss+e.retMiss, e.lock, e.serial
	if name != nil {
		out.Functions = deferredFunctions(w.DExecs, b.DExecs, name, n)
	}
	return out, e
}

// deferredFunctions sums the executions outside the windows by function,
// the operations' segment's less the baseline's, per operation.
func deferredFunctions(w, b []vmrunner.PCCount, name func(uint64) string, ops float64) []DeferredFunction {
	sums := map[string]float64{}
	for sign, execs := range [][]vmrunner.PCCount{b, w} {
		for _, x := range execs {
			fn := pluginFunction(name, x.PC)
			sums[fn] += float64(2*sign-1) * float64(x.Count) / ops
		}
	}
	var out []DeferredFunction
	for fn, n := range sums {
		out = append(out, DeferredFunction{Function: fn, Insns: n})
	}
	slices.SortFunc(out, func(x, y DeferredFunction) int {
		return cmp.Or(cmp.Compare(y.Insns, x.Insns), cmp.Compare(x.Function, y.Function))
	})
	return out[:min(len(out), maxDeferredFunctions)]
}

// cycleMetrics adds the cycle model's rows to perOp: the L2's misses, the
// branches and mispredictions by kind, the deferred instructions and the
// estimate, each when the counts are there; and returns the estimate (nil
// without a branch model or a known core).
func cycleMetrics(perOp map[string]float64, core string, win events, deferred *Deferred, def events, ops float64, branches float64) *Cycles {
	e := win.per(ops)
	if win.hasL2 {
		perOp[MetricL2Miss] = e.l2
	}
	if !win.branchModel {
		return nil
	}
	perOp[MetricBranches] = branches / ops
	perOp[MetricCondMispred] = e.condMiss
	perOp[MetricIndMispred] = e.indMiss
	perOp[MetricRetMispred] = e.retMiss
	if deferred != nil && deferred.Problem == "" {
		perOp[MetricDeferredInsn] = deferred.Insns
	}
	model, ok := vmrunner.CoreModelOf(core)
	if !ok {
		return nil
	}
	c := &Cycles{Core: model.Name, Terms: estimate(model.Costs, e), KCachegrind: kcachegrind(e)}
	c.Window = sumTerms(c.Terms)
	if deferred != nil && deferred.Problem == "" {
		c.Deferred = sumTerms(estimate(model.Costs, def))
	}
	c.Total = c.Window + c.Deferred
	perOp[MetricEstCycles] = c.Total
	return c
}

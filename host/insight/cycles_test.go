package insight

import (
	"math"
	"slices"
	"testing"

	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/wire"
)

// cycleSide is one side's memory pass with the cycle model on a zen2
// core: 1000 lookups whose returns all mispredict (retMiss of 1000 ret)
// and, in wide segments 2 (the wait alone) and 3 (the operations and the
// wait), deferred work of 300 instructions an operation.
func cycleSide(retMiss uint64) *Side {
	s := &Side{}
	ev := &vmrunner.Events{Branches: true, Cond: 5000, CondMiss: 200, Ret: 1000, RetMiss: retMiss, Lock: 10, Serial: 1}
	out := func(insns uint64) *vmrunner.Outside {
		return &vmrunner.Outside{Insns: insns, L1D: vmrunner.CacheCount{Accesses: insns / 4, Misses: insns / 100}, L2: &vmrunner.CacheCount{Misses: insns / 1000},
			Events: &vmrunner.Events{Branches: true, CondMiss: insns / 200, Lock: insns / 500}}
	}
	s.AddMemory(Input{
		Memory: &wire.MemoryDoc{Cost: 1000, Benchmarks: []wire.BenchMemory{{Benchmark: "LPMTrie/op=lookup", Segment: 1, Ops: 1000,
			Deferred: &wire.DeferredDoc{Segment: 3, Baseline: 2, Ops: 1000, Wait: 5_000_000}}}},
		MemCounts: &vmrunner.MemCounts{Model: "l1d 32768 8 core zen2", Core: "zen2", Complete: true, Segments: []vmrunner.MemSegment{
			{Number: 1, Windows: 5, Insns: 800_000, L1D: vmrunner.CacheCount{Accesses: 150_000, Misses: 6000}, L1I: vmrunner.CacheCount{Misses: 100},
				L2: &vmrunner.CacheCount{Accesses: 6100, Misses: 2000}, LLC: vmrunner.CacheCount{Accesses: 2000, Misses: 100},
				DTLB: vmrunner.CacheCount{Accesses: 150_000, Misses: 3000}, Events: ev,
				Flow: &vmrunner.FlowCounts{Call: 1000, Ret: 1000, Jcc: 5000}},
			{Number: 2, Outside: out(200_000)},
			{Number: 3, Outside: out(500_000)},
		}},
	})
	return s
}

func TestCycleModelRows(t *testing.T) {
	a, b := cycleSide(1000), cycleSide(0)
	m := a.Memory[0]
	if m.Deferred == nil || m.Deferred.Problem != "" || m.Deferred.Insns != 300 || m.Deferred.L1D != 3 {
		t.Fatalf("deferred = %+v; want 300 instructions and 3 L1D misses an operation", m.Deferred)
	}
	zen2, _ := vmrunner.CoreModelOf("zen2")
	c := zen2.Costs
	// by hand: 800 insns at width 4; 6.1 L1 misses a lookup, 2 of them
	// past the L2 and 0.1 past the L3; 0.2 + 1 mispredictions; 0.01
	// locked, 0.001 serialising
	want := 800/c.Width + (6.1-2)*(c.L2-c.L1) + (2-0.1)*(c.L3-c.L1) + 0.1*(c.Memory-c.L1) + (1+0.2)*c.Mispredict + 0.01*c.Locked + 0.001*c.Serial
	if m.Cycles == nil || math.Abs(m.Cycles.Window-want) > 1e-6 {
		t.Fatalf("cycles = %+v; want %.3f in the window", m.Cycles, want)
	}
	wantDef := 300/c.Width + (3-0.3)*(c.L2-c.L1) + 0.3*(c.L3-c.L1) + 1.5*c.Mispredict + 0.6*c.Locked
	if math.Abs(m.Cycles.Deferred-wantDef) > 1e-6 || math.Abs(m.PerOp[MetricEstCycles]-want-wantDef) > 1e-6 {
		t.Errorf("cycles = %+v, est-cycles/op %.3f; want %.3f deferred, %.3f in all", m.Cycles, m.PerOp[MetricEstCycles], wantDef, want+wantDef)
	}
	if kcg := 800 + 10*0.2 + 10*6.1 + 100*0.1; math.Abs(m.Cycles.KCachegrind-kcg) > 1e-6 {
		t.Errorf("KCachegrind's estimate %.3f; want %.3f", m.Cycles.KCachegrind, kcg)
	}
	d := compareMemory(a.Memory, b.Memory)
	var metrics []string
	for _, r := range d[0].Rows {
		metrics = append(metrics, r.Metric)
		if r.Metric == MetricRetMispred && (r.A != 1 || r.B != 0 || r.Verdict != compare.Different) {
			t.Errorf("row %+v; want 1 → 0 returns mispredicted, DIFFERENT", r)
		}
		if r.Metric == MetricDeferredInsn && (r.A != 300 || r.Verdict != compare.Same) {
			t.Errorf("row %+v; want 300 → 300, SAME", r)
		}
	}
	want2 := []string{"l1d-miss/op", MetricL2Miss, "llc-miss/op", "dtlb-miss/op", "mem-access/op", "l1i-miss/op", MetricBranches,
		MetricCondMispred, MetricIndMispred, MetricRetMispred, MetricDeferredInsn, MetricEstCycles, "insn/op"}
	if !slices.Equal(metrics, want2) {
		t.Errorf("rows %v; want %v", metrics, want2)
	}
}

func TestDeferredProblems(t *testing.T) {
	m := &vmrunner.MemCounts{Segments: []vmrunner.MemSegment{{Number: 1}, {Number: 2}}}
	for name, d := range map[string]*wire.DeferredDoc{
		"no wide segments": {Segment: 2, Baseline: 1, Ops: 10},
		"no such segment":  {Segment: 9, Baseline: 1, Ops: 10},
		"the guest's":      {Segment: 2, Baseline: 1, Ops: 10, Problem: "the operations failed"},
	} {
		if got, _ := deferredWork(d, m, nil); got == nil || got.Problem == "" {
			t.Errorf("%s: deferredWork() = %+v; want a problem", name, got)
		}
	}
	if got, _ := deferredWork(nil, m, nil); got != nil {
		t.Errorf("deferredWork(nil) = %+v; want nil (no pass)", got)
	}
}

// A row's rule: the deferred rows' floor is the waits' noise over the
// operations, est-cycles/op's one cycle more, the last level's 0.2 misses
// under the warm model, and a benchmark with user space in its
// operations has every bound at least UserSpaceBound.
func TestRowRule(t *testing.T) {
	a, b := cycleSide(1000).Memory[0], cycleSide(1000).Memory[0]
	if _, floor := rowRule(MetricDeferredInsn, &a, &b); floor != deferredWaitNoise/1000.0 {
		t.Errorf("deferred-insn/op floor %g; want the waits' noise over 1000 ops, %g", floor, deferredWaitNoise/1000.0)
	}
	if bound, floor := rowRule(MetricEstCycles, &a, &b); floor != 1+deferredWaitNoise/1000.0 || bound != estimateBound(a.Cycles, b.Cycles) || bound <= 0 {
		t.Errorf("est-cycles/op bound %g, floor %g; want its terms' bound and one cycle over the waits' noise", bound, floor)
	}
	if _, floor := rowRule("llc-miss/op", &a, &b); floor != 0.2 {
		t.Errorf("llc-miss/op floor %g under the warm model; want 0.2", floor)
	}
	if bound, floor := rowRule("l1d-miss/op", &a, &b); bound != 0 || floor != 0 {
		t.Errorf("l1d-miss/op rule %g, %g; want the metric's own (0, 0)", bound, floor)
	}
	a.UserSpace = true
	if bound, _ := rowRule("l1d-miss/op", &a, &b); bound != UserSpaceBound {
		t.Errorf("l1d-miss/op bound of a benchmark with user space %g; want %g", bound, UserSpaceBound)
	}
}

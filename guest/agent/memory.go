package agent

import (
	"fmt"

	"github.com/lpmbisect/lpmbisect/guest/workloads"
	"github.com/lpmbisect/lpmbisect/wire"
)

// The memory pass (wire.MemoryDoc) runs each benchmark's operations again
// while the host's QEMU plugin models caches and a data TLB. The guest
// only marks: memArm once (the plugin instruments from then on), then per
// benchmark one untimed run of its operations (the caches warm, as in
// the timed samples, whose warm-up precedes them), memBegin, one sample's
// worth of operations whose programs mark their bpf_loop
// (Params.MemoryMarks), memEnd; memDisarm at the end. The plugin counts
// only inside the marked loops of an open segment, so the counts are
// those of the timed operations alone, and writes them to a file on the
// host; the guest says which segment was which benchmark's.
//
// Under KVM the same counts would come from the PMU (cache and dTLB
// events); that is not built (untestable here), so the pass says it is
// not offered, as it does under TCG without icount, whose host does not
// load the plugin.

// memoryPass runs the memory pass on the benchmarks; never nil, a problem
// says why there are no counts. exact names the benchmarks the plugin
// profiles exactly: those whose operations run in BPF_PROG_TEST_RUN
// (workloads.PathTestRun), whose programs carry the window marks.
func memoryPass(benches []*workloads.Benchmark, p workloads.Params, plan wire.Plan) (doc *wire.MemoryDoc, exact map[string]bool) {
	start := rdtsc()
	doc = &wire.MemoryDoc{}
	switch {
	case plan.Accel != wire.AccelIcount:
		doc.Problem = fmt.Sprintf("not offered under %s: the counts come from QEMU's TCG plugin under icount (the PMU's under KVM is not supported)", accelName(plan.Accel))
		return doc, nil
	case !haveMemMarks:
		doc.Problem = "not offered on this architecture: the guest's marks are x86 instructions"
		return doc, nil
	}
	doc.Text, _ = kernelText("/proc/kallsyms") // 0: the counts stay unattributed
	p.MemoryMarks = true
	memArm()
	defer memDisarm()
	exact = map[string]bool{}
	segment := 0
	for _, b := range benches {
		if b.Instance == nil || !workloads.Supported(b) {
			continue
		}
		bm, marked := memoryBenchmark(b, p, &segment)
		if bm == nil {
			continue
		}
		if marked && bm.Problem == "" && doc.Text != 0 {
			exact[bm.Benchmark] = true
		}
		logf("memory: %s: segment %d, %d ops %s", bm.Benchmark, bm.Segment, bm.Ops, bm.Problem)
		doc.Benchmarks = append(doc.Benchmarks, *bm)
	}
	doc.Cost = rdtsc() - start
	return doc, exact
}

// memoryBenchmark counts one benchmark's operations in the next segment;
// nil for one that has none. marked says its programs mark their windows.
func memoryBenchmark(b *workloads.Benchmark, p workloads.Params, segment *int) (bm *wire.BenchMemory, marked bool) {
	name := b.FullName(p)
	in, err := b.Instance(p, logf)
	if err != nil {
		return &wire.BenchMemory{Benchmark: name, Problem: err.Error()}, false
	}
	defer in.Close()
	if in.Operate == nil {
		return nil, false
	}
	bm = &wire.BenchMemory{Benchmark: name, Unit: in.Unit, Programs: programSymbols(in.Programs, nil)}
	if _, err := in.Operate(); err != nil { // warm caches, translated code
		bm.Problem = fmt.Sprintf("the operations failed: %v", err)
		return bm, false
	}
	memBegin()
	ops, opErr := in.Operate()
	memEnd()
	*segment++
	bm.Segment, bm.Ops = *segment, ops
	if opErr != nil {
		bm.Problem = fmt.Sprintf("the operations failed: %v", opErr)
	}
	return bm, in.Path == workloads.PathTestRun
}

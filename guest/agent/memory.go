package agent

import (
	"fmt"
	"os"
	"strings"
	"time"

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
// With the deferred work pass (plan.Deferred), each benchmark whose
// operations the plugin counted then runs them a third time in a wide
// segment (memBeginWide), which also counts the kernel outside the
// windows, followed by a wait for the work they left for later
// (deferredWait); a wide segment of the same wait alone, just before,
// is its baseline. The kernel's execution outside the windows of the one,
// less the other's, is the operations' deferred work: RCU callbacks,
// kfree_rcu batches, workqueue items and softirqs, and the test-run
// syscall around each loop.
//
// Under KVM the same counts would come from the PMU (cache and dTLB
// events); that is not built (untestable here), so the pass says it is
// not offered, as it does under TCG without icount, whose host does not
// load the plugin.

// memoryPass runs the memory pass on the benchmarks; never nil, a problem
// says why there are no counts. exact names the benchmarks the plugin
// profiles exactly: those whose operations run in BPF_PROG_TEST_RUN
// (workloads.PathTestRun), whose programs carry the window marks.
//
// After each benchmark it tells the host (an info note on the channel),
// whose progress deadline would otherwise run out while the plugin models
// a long pass.
func memoryPass(benches []*workloads.Benchmark, p workloads.Params, plan wire.Plan, info func(string)) (doc *wire.MemoryDoc, exact map[string]bool) {
	start, idle := rdtsc(), idleNS()
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
	harness := &markedHarness{}
	p.Harness = harness
	if plan.Deferred {
		defer quietBackground()()
	}
	memArm()
	defer memDisarm()
	exact = map[string]bool{}
	segment := 0
	for _, b := range benches {
		if b.Instance == nil || !workloads.Supported(b) {
			continue
		}
		harness.timed = false
		bm, marked := memoryBenchmark(b, p, &segment, plan.Deferred)
		if bm != nil {
			bm.UserSpace = harness.timed
		}
		if bm == nil {
			continue
		}
		if marked && bm.Problem == "" && doc.Text != 0 {
			exact[bm.Benchmark] = true
		}
		logf("memory: %s: segment %d, %d ops %s", bm.Benchmark, bm.Segment, bm.Ops, bm.Problem)
		info(fmt.Sprintf("memory pass: %s counted", bm.Benchmark))
		doc.Benchmarks = append(doc.Benchmarks, *bm)
	}
	doc.Cost, doc.Idle = rdtsc()-start, idleNS()-idle
	return doc, exact
}

// memoryBenchmark counts one benchmark's operations in the next segment,
// and with deferred its deferred work in the two after; nil for one that
// has none. marked says its programs mark their windows.
func memoryBenchmark(b *workloads.Benchmark, p workloads.Params, segment *int, deferred bool) (bm *wire.BenchMemory, marked bool) {
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
	if deferred {
		// the warm-up's deferred work done: the counted operations start
		// from the same state in every boot (the slab's freed nodes
		// returned), not from wherever the kfree_rcu batches were
		drainDeferred()
	}
	memBegin()
	ops, opErr := in.Operate()
	memEnd()
	*segment++
	bm.Segment, bm.Ops = *segment, ops
	if opErr != nil {
		bm.Problem = fmt.Sprintf("the operations failed: %v", opErr)
	}
	marked = in.Path == workloads.PathTestRun
	if deferred && marked && opErr == nil {
		bm.Deferred = deferredSegments(in, segment)
	}
	return bm, marked
}

// deferredWait is how long the deferred work pass waits for what a
// benchmark's operations left for later: longer than the longest batching
// delay of the kernels' deferred frees (kfree_rcu's KFREE_DRAIN_JIFFIES,
// 5 s since Linux 6.0, after which its batch waits for a grace period and
// is freed by a workqueue item), then short sleeps in which the grace
// periods and the work queued behind them run. (A single CPU needs no
// membarrier or rcu_barrier to let a grace period end: an idle CPU is a
// quiescent state.) Under icount an idle guest's clock jumps to its next
// timer, so the wait costs the instructions of the work that runs in it
// and of the timers that wake the idle CPU, not seconds of host time.
var deferredWait = []time.Duration{5500 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond, 100 * time.Millisecond}

// backgroundWork are the kernel's periodic background tasks that an idle
// guest still runs, each with the setting that quiets it for the
// deferred work pass: khugepaged's scans (every 10 s by default, each
// collapse clearing and copying 2 MiB: it landed in one of two waits of
// 6 s and gave a lookup 94 deferred instructions), proactive compaction,
// and the per-CPU statistics' folding (every second). Their work is the
// system's, not the operations', and falls into one wait or the other at
// random.
var backgroundWork = []struct{ path, quiet string }{
	{"/sys/kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs", "86400000"},
	{"/sys/kernel/mm/transparent_hugepage/khugepaged/alloc_sleep_millisecs", "86400000"},
	{"/proc/sys/vm/compaction_proactiveness", "0"},
	{"/proc/sys/vm/stat_interval", "3600"},
}

// quietBackground quiets backgroundWork (what this kernel has of it) and
// returns the function that restores the settings.
func quietBackground() (restore func()) {
	var undo []func()
	for _, w := range backgroundWork {
		old, err := os.ReadFile(w.path)
		if err != nil {
			continue
		}
		if err := os.WriteFile(w.path, []byte(w.quiet), 0o644); err != nil {
			logf("memory: deferred: cannot quiet %s: %v", w.path, err)
			continue
		}
		undo = append(undo, func() { os.WriteFile(w.path, []byte(strings.TrimSpace(string(old))), 0o644) })
	}
	return func() {
		for _, u := range undo {
			u()
		}
	}
}

// markedHarness marks a benchmark's user-space work for the plugin: its
// harness's between pause and resume marks, which a wide segment does not
// count, and the user-space part of its operations inside a counting
// window, as a program's timed loop.
// timed records that it marked user space as counted.
type markedHarness struct{ timed bool }

func (*markedHarness) Untimed(work func() error) error {
	memPause()
	defer memResume()
	return work()
}

func (h *markedHarness) Timed(work func() error) error {
	h.timed = true
	memWindowStart()
	defer memWindowStop()
	return work()
}

// drainDeferred waits deferredWait and returns the guest clock it took.
func drainDeferred() uint64 {
	start := rdtsc()
	for _, d := range deferredWait {
		time.Sleep(d)
	}
	return rdtsc() - start
}

// deferredSegments counts the deferred work of in's operations: after a
// wait for what the counted operations before left, a wide segment of
// the wait alone (the baseline), then one of the operations and the
// wait.
func deferredSegments(in *workloads.Instance, segment *int) *wire.DeferredDoc {
	d := &wire.DeferredDoc{}
	drainDeferred()
	memBeginWide()
	d.Wait = drainDeferred()
	memEnd()
	*segment++
	d.Baseline = *segment
	memBeginWide()
	ops, err := in.Operate()
	drainDeferred()
	memEnd()
	*segment++
	d.Segment, d.Ops = *segment, ops
	if err != nil {
		d.Problem = fmt.Sprintf("the operations failed: %v", err)
	}
	logf("memory: deferred: segments %d (baseline) and %d, %d ops, a wait of %d ns %s", d.Baseline, d.Segment, d.Ops, d.Wait, d.Problem)
	return d
}

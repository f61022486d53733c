package wire

// The memory pass is part of the insight pass, like the profile pass: in
// the boot that runs the insight pass (lpmbisect.insight=1) the host loads
// its QEMU TCG plugin (host/vmrunner/memplugin), which models caches and
// a data TLB, and the guest runs each benchmark's operations again with
// the plugin counting. The host arms it with
//
//	lpmbisect.memory=1
//
// written on every boot of a run beside lpmbisect.insight (as
// lpmbisect.memory=0 but in the boot that loads the plugin), so that the
// command lines of the timed boots and of the counting boot keep one
// length. The counts travel through a file the plugin writes on the
// host, not through the guest: the guest reports only which segment of
// the plugin's file belongs to which benchmark and how many operations it
// spans (MemoryDoc).
//
// lpmbisect.memory=2 in the boot that loads the plugin adds the deferred
// work pass (Plan.Deferred): per benchmark, a wide segment
// (MemBeginWide) over its operations and the wait for what they left for
// later, and one over the same wait alone (DeferredDoc).

// ParamMemory is Plan.Memory, written when the plan arms the pass.
const ParamMemory Param = "lpmbisect.memory"

// Marks the guest gives the plugin: an x86 `mov $imm32, %reg` whose
// immediate is memMarkBase|code. The BPF JIT emits one for a BPF `r = imm`
// of a positive 32-bit constant, which is how a program brackets its
// timed bpf_loop (MemWindowStart, MemWindowStop); the guest's user space
// opens and closes a benchmark's segment (MemBegin, MemEnd) and switches
// the plugin's instrumentation on and off (MemArm, MemDisarm).
const (
	memMarkBase    = 0x4c504d00 // "LPM"
	MemWindowStart = memMarkBase | 1
	MemWindowStop  = memMarkBase | 2
	MemArm         = memMarkBase | 3
	MemBegin       = memMarkBase | 4
	MemEnd         = memMarkBase | 5
	MemDisarm      = memMarkBase | 6
	// MemBeginWide opens a segment that also counts the kernel outside
	// the windows (the deferred work pass; closed by MemEnd); MemPause and
	// MemResume bracket the harness's own work inside it (a trie refilled
	// between timed runs), which is not what the operations left for
	// later.
	MemBeginWide = memMarkBase | 7
	MemPause     = memMarkBase | 8
	MemResume    = memMarkBase | 9
)

// MemoryDoc is what the guest says of the memory pass on one kernel.
type MemoryDoc struct {
	// Cost is the guest clock the whole pass took (ns; instructions under
	// icount), set-up and operations included; Idle the part of it the
	// guest's CPU was idle (the deferred work pass's waits: under icount
	// the clock jumps over them, no instruction runs).
	Cost uint64 `json:"cost"`
	Idle uint64 `json:"idle,omitempty"`
	// Text is the run-time address of _text (ProfileDoc.Text): the host
	// names the plugin's instruction addresses with it; 0 when hidden.
	Text uint64 `json:"text,omitempty"`
	// Benchmarks are the benchmarks whose operations ran counted, in the
	// order of their segments.
	Benchmarks []BenchMemory `json:"benchmarks,omitempty"`
	// Problem says why there are no counts at all ("" when there are).
	Problem string `json:"problem,omitempty"`
}

// DeferredDoc is one benchmark's deferred work pass: the plugin's wide
// segment Segment spans Ops operations and the wait for the work they
// left for later (RCU callbacks, kfree_rcu batches, workqueue items,
// softirqs), segment Baseline the same wait with no operations; the
// kernel's execution outside the windows of the one, less the other's,
// is what the operations left for later. Wait is the guest clock of one
// wait (ns: instructions and idle time under icount).
type DeferredDoc struct {
	Segment  int    `json:"segment"`
	Baseline int    `json:"baseline"`
	Ops      uint64 `json:"ops"`
	Wait     uint64 `json:"wait,omitempty"`
	Problem  string `json:"problem,omitempty"`
}

// BenchMemory is one benchmark's counted operations.
type BenchMemory struct {
	Benchmark string `json:"benchmark"`
	// Segment is the number of the plugin's segment (from 1) that counted
	// the operations; 0 when none did (Problem says why).
	Segment int `json:"segment"`
	// Ops are the operations inside the segment's counting windows; Unit
	// names one when it is not one of the benchmark's own operations.
	Ops  uint64 `json:"ops"`
	Unit string `json:"unit,omitempty"`
	// Programs are the JITed images of the benchmark's programs, named
	// as the profile names them (bpf_prog_NAME), so that the host names
	// the plugin's addresses inside them (the exact profile).
	Programs []ProfileSymbol `json:"programs,omitempty"`
	Problem  string          `json:"problem,omitempty"`
	// Deferred is its deferred work pass (Plan.Deferred; nil without).
	Deferred *DeferredDoc `json:"deferred,omitempty"`
	// UserSpace says its counted operations include user space inside
	// the plugin's windows (the kernel bench's delete and its refill).
	UserSpace bool `json:"user_space,omitempty"`
}

// MemoryArg arms the memory pass (lpmbisect.memory=0), to add to
// InsightArgs': the pass runs in the boot whose arguments LoadPlugin
// switched to lpmbisect.memory=1, the one that loads the plugin. In a
// boot armed but without the plugin (after QEMU died in the boot that
// loaded it) the guest runs no memory pass and samples every profile.
var MemoryArg = ParamMemory.Arg("0")

// LoadPlugin returns the arguments of an armed plan for the boot that
// loads the plugin: the same arguments, same length, with
// lpmbisect.memory=1 (Plan.Memory), which also tells the guest that the
// plugin profiles the benchmarks it counts exactly, so that it samples
// only the others; with deferred, lpmbisect.memory=2, which adds the
// deferred work pass (Plan.Deferred).
func LoadPlugin(args []string, deferred bool) []string {
	armed := memoryArg(deferred)
	out := make([]string, len(args))
	for i, a := range args {
		if a == MemoryArg {
			a = armed
		}
		out[i] = a
	}
	return out
}

// memoryArg is the argument of a boot that runs the memory pass with the
// plugin loaded: lpmbisect.memory=1 (Plan.Memory), or with deferred
// lpmbisect.memory=2 (Plan.Deferred).
func memoryArg(deferred bool) string {
	if deferred {
		return ParamMemory.Arg("2")
	}
	return ParamMemory.Arg("1")
}

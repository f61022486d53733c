// Package bpf builds the BPF objects that lpmbisect's benchmarks load into the
// guest kernel. Everything here is pure and deterministic: it returns
// cilium/ebpf specs (maps and programs written with the asm package, no clang)
// and never touches the kernel, so the same inputs give the same bytes on
// every machine. Loading and running the specs is the job of package
// workloads.
//
// The programs:
//
//   - LPMBench (lpmtrie.go) mirrors the kernel's selftest bench
//     (tools/testing/selftests/bpf/benchs/bench_lpm_trie_map.c, Linux 6.18):
//     an XDP program, driven by BPF_PROG_TEST_RUN, reads bpf_ktime_get_ns
//     around one bpf_loop call and adds the elapsed time and the number of
//     iterations to a stats map that user space reads and resets between
//     samples. Timing inside the kernel keeps the syscall, the test-run
//     harness and any refilling of the trie out of the per-operation number.
//     Requires Linux 5.17 (bpf_loop).
//   - LPMUnrolled (unrolled.go) does the same for lookups and updates
//     without bpf_loop, as a straight line of operations, for kernels from
//     4.12 (XDP test runs).
//   - TrieFreeSpec (free.go) times the freeing of a whole trie with
//     fentry/fexit on bpf_map_free_deferred, as the kernel bench does.
//     Requires Linux 5.5 and kernel BTF.
//   - SyscallLookups (syscall.go) is a kprobe program doing a fixed number of
//     lookups each time gettid() enters the kernel: the first way LPM tries
//     were measured upstream (2017).
//   - RingbufProducer (ringbuf.go) writes records to a BPF ring buffer with
//     reserve/submit or output. Requires Linux 5.8.
//   - HashBench (hashmap.go), BloomBench (bloom.go) and TaskStorageBench
//     (taskstorage.go) share LPMBench's bpf_loop harness (loop.go) for hash
//     maps, bloom filters and task local storage, after the kernel's
//     bpf-hashmap-*, bloom-* and local-storage-* benches.
package bpf

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// StatsMapName is the name of the one-element array holding a Stats, shared
// by the timed programs.
const StatsMapName = "bench_stats"

// Stats is the value of the single element of the stats map. Programs add to
// it with atomic adds; user space zeroes the accumulators between samples
// (keeping Cursor) and reads them after a run.
type Stats struct {
	// Nanoseconds is the bpf_ktime_get_ns time spent in the timed region,
	// summed over runs. Under QEMU -icount shift=0 this counts guest
	// instructions.
	Nanoseconds uint64
	// Iterations is the number of operations that Nanoseconds covers.
	Iterations uint64
	// Runs is the number of program runs (or, for TrieFreeSpec, of timed
	// frees).
	Runs uint64
	// Failures counts operations that did not do what the benchmark
	// expects: a lookup that missed, an update, insert or delete that
	// returned an error, a ring buffer reservation that failed. The LPM
	// programs stop at the first failure: the trie is not what the
	// benchmark thinks it is, and the sample must be discarded.
	Failures uint64
	// FailKey is the key value of the last failed operation.
	FailKey uint64
	// FailCode is the return value of the last failed helper call, as a
	// two's-complement errno (lookups that miss record -ENOENT).
	FailCode uint64
	// LoopError is the last negative return value of bpf_loop, or 0.
	LoopError uint64
	// Cursor is the next key of a sequential walk, or (insert, delete) the
	// number of keys inserted or deleted since the trie was last reset.
	Cursor uint64
	// Start is the bpf_ktime_get_ns of the free being timed (TrieFreeSpec).
	Start uint64
}

// Byte offsets of the Stats fields, used by the programs.
const (
	offNanoseconds = 8 * iota
	offIterations
	offRuns
	offFailures
	offFailKey
	offFailCode
	offLoopError
	offCursor
	offStart
	statsSize
)

// statsSpec returns the spec of the one-element array that holds a Stats.
func statsSpec() *ebpf.MapSpec {
	return &ebpf.MapSpec{
		Name:       StatsMapName,
		Type:       ebpf.Array,
		KeySize:    4,
		ValueSize:  statsSize,
		MaxEntries: 1,
	}
}

// ErrBadStats is returned by Stats.Check for stats that cannot be timed.
var ErrBadStats = errors.New("benchmark stats rejected")

// Check reports whether the stats of a sample are usable: no operation
// failed, bpf_loop did not fail, and at least one operation ran.
func (s Stats) Check() error {
	switch {
	case s.Failures > 0:
		return fmt.Errorf("%w: %d operations failed (last key %d, error %d): the map does not hold the keys the benchmark expects", ErrBadStats, s.Failures, s.FailKey, int64(s.FailCode))
	case s.LoopError != 0:
		return fmt.Errorf("%w: bpf_loop returned %d", ErrBadStats, int64(s.LoopError))
	case s.Iterations == 0:
		return fmt.Errorf("%w: no operations ran", ErrBadStats)
	}
	return nil
}

// XDP return codes used by the XDP benchmark programs.
const (
	// RetDone (XDP_PASS) ends a run that did its work.
	RetDone = 2
	// RetNeedsReset (XDP_DROP) ends a run that found nothing to do: the
	// trie of an insert benchmark is full, or that of a delete benchmark
	// empty, and user space must reset it.
	RetNeedsReset = 1
)

var (
	btfInt  = &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	btfLong = &btf.Int{Name: "long", Size: 8, Encoding: btf.Signed}
	btfU64  = &btf.Int{Name: "u64", Size: 8}
	btfPtr  = &btf.Pointer{Target: &btf.Void{}}
)

// globalFunc is the BTF of a program's main function, int name(void *ctx).
func globalFunc(name string) *btf.Func {
	return &btf.Func{
		Name:    name,
		Linkage: btf.GlobalFunc,
		Type:    &btf.FuncProto{Return: btfInt, Params: []btf.FuncParam{{Name: "ctx", Type: btfPtr}}},
	}
}

// loopCallbackFunc is the BTF of a bpf_loop callback,
// static long name(u64 index, void *ctx): bpf_loop rejects non-static
// callbacks.
func loopCallbackFunc(name string) *btf.Func {
	return &btf.Func{
		Name:    name,
		Linkage: btf.StaticFunc,
		Type: &btf.FuncProto{
			Return: btfLong,
			Params: []btf.FuncParam{{Name: "index", Type: btfU64}, {Name: "ctx", Type: btfPtr}},
		},
	}
}

// atomicAdd emits `lock *(u64 *)(dst + off) += src`.
func atomicAdd(dst asm.Register, off int16, src asm.Register) asm.Instruction {
	return asm.AddAtomic.Mem(dst, src, asm.DWord, off)
}

// stopClock ends a timed run that started with the start time in r6: it
// adds the elapsed nanoseconds and one run to the stats at r7. It clobbers
// r0 (the elapsed time) and r1; the caller accounts the iterations.
func stopClock() asm.Instructions {
	return asm.Instructions{
		asm.FnKtimeGetNs.Call(),
		asm.Sub.Reg(asm.R0, asm.R6),
		atomicAdd(asm.R7, offNanoseconds, asm.R0),
		asm.Mov.Imm(asm.R1, 1),
		atomicAdd(asm.R7, offRuns, asm.R1),
	}
}

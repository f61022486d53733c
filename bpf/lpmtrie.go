// Package bpf builds the BPF objects that lpmbisect's benchmarks load into the
// guest kernel. Everything here is pure and deterministic: it returns
// cilium/ebpf specs (maps and programs written with the asm package, no clang)
// and never touches the kernel, so the same inputs give the same bytes on
// every machine. Loading and running the specs is the job of package
// workloads.
//
// The LPM trie benchmark mirrors the kernel's selftest bench
// (tools/testing/selftests/bpf/benchs/bench_lpm_trie_map.c, Linux 6.18): an
// XDP program, driven by BPF_PROG_TEST_RUN, reads bpf_ktime_get_ns around one
// bpf_loop call of LoopIterations iterations, and adds the elapsed time and
// the number of iterations to a stats map that user space reads and resets
// between samples. Timing inside the kernel keeps the syscall and the
// test-run harness out of the per-operation number.
package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"
)

// Names of the objects in the CollectionSpec returned by LPMLookupSpec.
const (
	TrieMapName       = "lpm_trie"
	StatsMapName      = "bench_stats"
	LPMLookupProgName = "lpm_lookup"
)

// LoopIterations is the number of bpf_loop iterations per program run, the
// kernel bench's NR_LOOPS.
const LoopIterations = 10000

// maxLoopIterations is the largest nr_loops bpf_loop accepts (1 << 23,
// BPF_MAX_LOOPS in kernel/bpf/bpf_iter.c).
const maxLoopIterations = 1 << 23

// PrefixLen is the prefix length of every key the benchmark inserts and looks
// up: full 32-bit keys, as in the kernel bench's default --prefix_len=32.
const PrefixLen = 32

// LPMKey is the key of an LPM trie with 4 bytes of data, laid out as the
// kernel's struct bpf_lpm_trie_key_u8 with a 4-byte data array. Data is
// compared most significant bit first, so it holds the key big-endian.
type LPMKey struct {
	Prefixlen uint32
	Data      [4]byte
}

// KeyFor returns the LPM key for the 32-bit value v with the given prefix
// length: the data holds v big-endian, so numerically close values share
// long prefixes, as IPv4 addresses do.
func KeyFor(prefixlen, v uint32) LPMKey {
	k := LPMKey{Prefixlen: prefixlen}
	binary.BigEndian.PutUint32(k.Data[:], v)
	return k
}

// Value returns the 32-bit value stored in the key's data.
func (k LPMKey) Value() uint32 { return binary.BigEndian.Uint32(k.Data[:]) }

// KeyOrder is how the benchmark program picks the key of each lookup.
type KeyOrder int

const (
	// RandomKeys draws each key as bpf_get_prandom_u32() % entries.
	RandomKeys KeyOrder = iota
	// SequentialKeys walks the keys in order, (cursor + index) % entries,
	// where the cursor lives in the stats map so that successive runs
	// continue where the previous one stopped.
	SequentialKeys
)

// String returns the name used in benchmark names: "random" or "sequential".
func (o KeyOrder) String() string {
	switch o {
	case RandomKeys:
		return "random"
	case SequentialKeys:
		return "sequential"
	}
	return fmt.Sprintf("KeyOrder(%d)", int(o))
}

// Stats is the value of the single element of the stats map. The program
// adds to it with atomic adds; user space zeroes the accumulators between
// samples (keeping Cursor) and reads them after a run.
type Stats struct {
	// Nanoseconds is the bpf_ktime_get_ns time spent in bpf_loop, summed
	// over runs. Under QEMU -icount shift=0 this counts guest instructions.
	Nanoseconds uint64
	// Iterations is the number of loop iterations (one lookup each) that
	// Nanoseconds covers.
	Iterations uint64
	// Runs is the number of program runs.
	Runs uint64
	// Misses counts lookups that found no entry. The callback stops the
	// loop at the first miss: a miss means the trie is not what the
	// benchmark thinks it is, and the sample must be discarded.
	Misses uint64
	// MissKey is the key value of the last miss (host order).
	MissKey uint64
	// LoopError is the last negative return value of bpf_loop, as a
	// two's-complement errno, or 0.
	LoopError uint64
	// Cursor is the next key of a sequential walk.
	Cursor uint64
}

// Byte offsets of the Stats fields, used by the program.
const (
	offNanoseconds = 8 * iota
	offIterations
	offRuns
	offMisses
	offMissKey
	offLoopError
	offCursor
	statsSize
)

// LPMLookup describes one LPM trie lookup benchmark program.
type LPMLookup struct {
	// Entries is the number of keys in the trie: the dense keys
	// [0, Entries) at prefix length 32. It must be at least 1 and at most
	// math.MaxInt32 (it is an immediate operand of BPF_MOD).
	Entries uint32
	// Keys is the order in which keys are looked up.
	Keys KeyOrder
	// Loops is the number of bpf_loop iterations per program run; 0 means
	// LoopIterations.
	Loops uint32
}

func (l LPMLookup) loops() uint32 {
	if l.Loops == 0 {
		return LoopIterations
	}
	return l.Loops
}

func (l LPMLookup) validate() error {
	if l.Entries < 1 || l.Entries > math.MaxInt32 {
		return fmt.Errorf("entries %d out of range [1, %d]", l.Entries, math.MaxInt32)
	}
	if l.Keys != RandomKeys && l.Keys != SequentialKeys {
		return fmt.Errorf("unknown key order %v", l.Keys)
	}
	if n := l.loops(); n > maxLoopIterations {
		return fmt.Errorf("loops %d above bpf_loop's limit %d", n, maxLoopIterations)
	}
	return nil
}

// TrieSpec returns the spec of an LPM trie that holds entries keys of type
// LPMKey with 4-byte values. MaxEntries is entries+1: before Linux 6.13 an
// in-place update of a full trie failed with ENOSPC, so the trie is never
// created exactly full.
//
// Requires Linux 4.11 (BPF_MAP_TYPE_LPM_TRIE); BPF_F_NO_PREALLOC is mandatory
// for LPM tries.
func TrieSpec(entries uint32) *ebpf.MapSpec {
	return &ebpf.MapSpec{
		Name:       TrieMapName,
		Type:       ebpf.LPMTrie,
		KeySize:    uint32(binary.Size(LPMKey{})),
		ValueSize:  4,
		MaxEntries: entries + 1,
		Flags:      unix.BPF_F_NO_PREALLOC,
	}
}

// StatsSpec returns the spec of the one-element array that holds a Stats.
func StatsSpec() *ebpf.MapSpec {
	return &ebpf.MapSpec{
		Name:       StatsMapName,
		Type:       ebpf.Array,
		KeySize:    4,
		ValueSize:  statsSize,
		MaxEntries: 1,
	}
}

// Spec returns the collection for the benchmark: the maps TrieMapName
// (empty; the caller fills it with KeyFor(PrefixLen, i) for i in
// [0, Entries)) and StatsMapName, and the XDP program LPMLookupProgName that
// references both by name.
//
// Each run of the program reads bpf_ktime_get_ns, calls
// bpf_loop(Loops, callback, &ctx, 0), reads the time again and atomically adds
// the elapsed time, the iteration count and 1 (runs) to the stats. Each
// callback iteration builds a key, converts its data to big-endian and calls
// bpf_map_lookup_elem on the trie; on a miss it records the key in the stats
// and stops the loop. The program returns XDP_PASS.
//
// Requires Linux 5.17 (bpf_loop); running it with BPF_PROG_TEST_RUN needs
// at least 14 bytes of packet data.
func (l LPMLookup) Spec() (*ebpf.CollectionSpec, error) {
	if err := l.validate(); err != nil {
		return nil, fmt.Errorf("LPM lookup program: %w", err)
	}
	prog := &ebpf.ProgramSpec{
		Name:         LPMLookupProgName,
		Type:         ebpf.XDP,
		License:      "Dual MIT/GPL",
		Instructions: append(loopMain(l.loops(), l.Keys == SequentialKeys, l.Entries), l.lookupCallback()...),
	}
	return &ebpf.CollectionSpec{
		Maps: map[string]*ebpf.MapSpec{
			TrieMapName:  TrieSpec(l.Entries),
			StatsMapName: StatsSpec(),
		},
		Programs: map[string]*ebpf.ProgramSpec{LPMLookupProgName: prog},
	}, nil
}

// ErrBadStats is returned by Stats.Check for stats that cannot be timed.
var ErrBadStats = errors.New("benchmark stats rejected")

// Check reports whether the stats of a sample are usable: no lookup missed,
// bpf_loop did not fail, and at least one iteration ran.
func (s Stats) Check() error {
	switch {
	case s.Misses > 0:
		return fmt.Errorf("%w: %d lookups missed (last key %d): the trie does not hold the keys the benchmark expects", ErrBadStats, s.Misses, s.MissKey)
	case s.LoopError != 0:
		return fmt.Errorf("%w: bpf_loop returned %d", ErrBadStats, int64(s.LoopError))
	case s.Iterations == 0:
		return fmt.Errorf("%w: no iterations ran", ErrBadStats)
	}
	return nil
}

// callbackSymbol labels the first instruction of the bpf_loop callback.
const callbackSymbol = "loop_cb"

// Stack layout of the main function: the bpf_loop context.
const ctxCursor = -8 // u64 cursor, read by the sequential callback

// Stack layout of the callback: the LPM key.
const (
	keyPrefixlen = -8 // u32
	keyData      = -4 // [4]byte, big-endian
)

var (
	btfInt  = &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}
	btfLong = &btf.Int{Name: "long", Size: 8, Encoding: btf.Signed}
	btfU64  = &btf.Int{Name: "u64", Size: 8}
	btfPtr  = &btf.Pointer{Target: &btf.Void{}}
)

// loopMain returns the program's main function: time one bpf_loop call and
// account for it in the stats. The callback must follow, labelled
// callbackSymbol. If sequential, the cursor is passed to the callback and
// advanced by the number of iterations, modulo entries.
func loopMain(loops uint32, sequential bool, entries uint32) asm.Instructions {
	mainFn := &btf.Func{
		Name:    LPMLookupProgName,
		Linkage: btf.GlobalFunc,
		Type: &btf.FuncProto{
			Return: btfInt,
			Params: []btf.FuncParam{{Name: "ctx", Type: btfPtr}},
		},
	}
	insns := asm.Instructions{
		// r7 = &stats (callee-saved across helper calls).
		btf.WithFuncMetadata(asm.LoadMapValue(asm.R7, 0, 0).WithReference(StatsMapName), mainFn),
		// ctx.cursor = stats.cursor (always initialised: the verifier
		// rejects reads of uninitialised stack in the callback).
		asm.LoadMem(asm.R1, asm.R7, offCursor, asm.DWord),
		asm.StoreMem(asm.RFP, ctxCursor, asm.R1, asm.DWord),
		// r6 = start time.
		asm.FnKtimeGetNs.Call(),
		asm.Mov.Reg(asm.R6, asm.R0),
		// r0 = bpf_loop(loops, callback, &ctx, 0)
		asm.Mov.Imm(asm.R1, int32(loops)),
		asm.Instruction{OpCode: asm.LoadImmOp(asm.DWord), Dst: asm.R2, Src: asm.PseudoFunc, Constant: -1}.WithReference(callbackSymbol),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, ctxCursor),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnLoop.Call(),
		asm.Mov.Reg(asm.R8, asm.R0),
		// r0 = elapsed time.
		asm.FnKtimeGetNs.Call(),
		asm.Sub.Reg(asm.R0, asm.R6),
		atomicAdd(asm.R7, offNanoseconds, asm.R0),
		asm.Mov.Imm(asm.R1, 1),
		atomicAdd(asm.R7, offRuns, asm.R1),
		asm.JSLT.Imm(asm.R8, 0, "loop_failed"),
		atomicAdd(asm.R7, offIterations, asm.R8),
	}
	if sequential {
		insns = append(insns,
			// stats.cursor = (stats.cursor + iterations) % entries
			asm.LoadMem(asm.R1, asm.R7, offCursor, asm.DWord),
			asm.Add.Reg(asm.R1, asm.R8),
			asm.Mod.Imm(asm.R1, int32(entries)),
			asm.StoreMem(asm.R7, offCursor, asm.R1, asm.DWord),
		)
	}
	return append(insns,
		asm.Mov.Imm(asm.R0, 2), // XDP_PASS
		asm.Return(),
		asm.StoreMem(asm.R7, offLoopError, asm.R8, asm.DWord).WithSymbol("loop_failed"),
		asm.Mov.Imm(asm.R0, 2),
		asm.Return(),
	)
}

// lookupCallback returns the bpf_loop callback: long cb(u64 index, void *ctx).
// It returns 0 to continue and 1 to stop the loop.
func (l LPMLookup) lookupCallback() asm.Instructions {
	cbFn := &btf.Func{
		Name:    "lpm_lookup_cb",
		Linkage: btf.StaticFunc, // bpf_loop rejects non-static callbacks
		Type: &btf.FuncProto{
			Return: btfLong,
			Params: []btf.FuncParam{{Name: "index", Type: btfU64}, {Name: "ctx", Type: btfPtr}},
		},
	}
	var insns asm.Instructions
	switch l.Keys {
	case RandomKeys:
		insns = asm.Instructions{
			asm.FnGetPrandomU32.Call(),
			asm.Mod.Imm32(asm.R0, int32(l.Entries)),
		}
	case SequentialKeys:
		insns = asm.Instructions{
			asm.LoadMem(asm.R0, asm.R2, 0, asm.DWord), // ctx->cursor
			asm.Add.Reg(asm.R0, asm.R1),
			asm.Mod.Imm(asm.R0, int32(l.Entries)),
		}
	}
	insns[0] = btf.WithFuncMetadata(insns[0], cbFn).WithSymbol(callbackSymbol)
	return append(insns,
		asm.Mov.Reg(asm.R6, asm.R0), // key value, kept for the miss path
		asm.HostTo(asm.BE, asm.R0, asm.Word),
		asm.StoreMem(asm.RFP, keyData, asm.R0, asm.Word),
		asm.StoreImm(asm.RFP, keyPrefixlen, PrefixLen, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference(TrieMapName),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, keyPrefixlen),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "lookup_missed"),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
		// A miss: record it and stop the loop.
		asm.LoadMapValue(asm.R1, 0, 0).WithReference(StatsMapName).WithSymbol("lookup_missed"),
		asm.Mov.Imm(asm.R2, 1),
		atomicAdd(asm.R1, offMisses, asm.R2),
		asm.StoreMem(asm.R1, offMissKey, asm.R6, asm.DWord),
		asm.Mov.Imm(asm.R0, 1),
		asm.Return(),
	)
}

// atomicAdd emits `lock *(u64 *)(dst + off) += src`, the BPF_XADD that
// asm.StoreXAdd emits, at an offset.
func atomicAdd(dst asm.Register, off int16, src asm.Register) asm.Instruction {
	return asm.AddAtomic.Mem(dst, src, asm.DWord, off)
}

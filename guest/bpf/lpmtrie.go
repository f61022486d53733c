package bpf

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// TrieMapName is the name of the LPM trie in the benchmark collections.
const TrieMapName = "lpm_trie"

// LoopIterations is the number of bpf_loop iterations per program run, the
// kernel bench's NR_LOOPS.
const LoopIterations = 10000

// maxLoopIterations is the largest nr_loops bpf_loop accepts (1 << 23,
// BPF_MAX_LOOPS in kernel/bpf/bpf_iter.c).
const maxLoopIterations = 1 << 23

// PrefixLen is the default prefix length of the keys the benchmarks insert
// and look up: full 32-bit keys, as in the kernel bench's default
// --prefix_len=32.
const PrefixLen = 32

// LPMKey is the key of an LPM trie with 4 bytes of data, laid out as the
// kernel's struct bpf_lpm_trie_key_u8 with a 4-byte data array. Data is
// compared most significant bit first.
type LPMKey struct {
	Prefixlen uint32
	Data      [4]byte
}

// KeyFor returns the LPM key of the v-th prefix of length prefixlen (1 to
// 32): the data holds v in its top prefixlen bits, big-endian, so
// numerically close values share long prefixes, as IPv4 addresses do, and
// the keys [0, 2^prefixlen) are distinct prefixes. KeyFor(32, v) holds v.
func KeyFor(prefixlen, v uint32) LPMKey {
	k := LPMKey{Prefixlen: prefixlen}
	if prefixlen > 0 && prefixlen < 32 {
		v <<= 32 - prefixlen
	}
	binary.BigEndian.PutUint32(k.Data[:], v)
	return k
}

// Value returns the 32-bit value stored in the key's data (the prefix
// number shifted to the top of the word when Prefixlen < 32).
func (k LPMKey) Value() uint32 { return binary.BigEndian.Uint32(k.Data[:]) }

// KeyLayout is how a key's number is stored in its data.
type KeyLayout int

const (
	// BigEndianKeys stores the number big-endian in the top prefix bits
	// (KeyFor): numerically close keys share long prefixes, as IPv4
	// addresses do.
	BigEndianKeys KeyLayout = iota
	// HostOrderKeys stores the number as a u32 in the host's byte order,
	// as the kernel bench does (its keys are bpf_get_prandom_u32() %
	// entries, at prefix length 32): on x86 the low byte comes first, so
	// the trie branches on the number's low bits first.
	HostOrderKeys
)

// Key returns the key of number v at prefix length prefixlen in this
// layout (HostOrderKeys: prefix length 32 only).
func (l KeyLayout) Key(prefixlen, v uint32) LPMKey {
	if l == HostOrderKeys {
		k := LPMKey{Prefixlen: prefixlen}
		binary.NativeEndian.PutUint32(k.Data[:], v)
		return k
	}
	return KeyFor(prefixlen, v)
}

// KeyOrder is how a benchmark program picks the key of each operation.
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

// LPMOp is the operation a benchmark times, once per loop iteration.
type LPMOp int

const (
	// OpNoop is an empty loop callback: the harness overhead (bpf_loop,
	// the callback call, the timing).
	OpNoop LPMOp = iota
	// OpBaseline builds the key and nothing else, so the cost of key
	// generation (bpf_get_prandom_u32() % entries for random keys) is
	// known and can be subtracted.
	OpBaseline
	// OpLookup is bpf_map_lookup_elem on a full trie; a miss is a failure.
	OpLookup
	// OpUpdate is bpf_map_update_elem(BPF_EXIST) of an existing key in a
	// full trie; an error is a failure. (Before Linux 6.13 LPM tries
	// ignored BPF_EXIST.)
	OpUpdate
	// OpInsert is bpf_map_update_elem(BPF_NOEXIST) into a trie that user
	// space empties (untimed) each time it is full.
	OpInsert
	// OpDelete is bpf_map_delete_elem on a trie that user space refills
	// (untimed) each time it is empty.
	OpDelete
)

var opNames = [...]string{"noop", "baseline", "lookup", "update", "insert", "delete"}

// String returns the name used in benchmark names, e.g. "lookup".
func (o LPMOp) String() string {
	if o >= 0 && int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("LPMOp(%d)", int(o))
}

// UsesTrie reports whether the operation touches the trie.
func (o LPMOp) UsesTrie() bool { return o >= OpLookup }

// StartsFull reports whether the trie must hold all keys before the
// benchmark runs (lookup, update, delete); insert starts empty.
func (o LPMOp) StartsFull() bool { return o == OpLookup || o == OpUpdate || o == OpDelete }

// consumesKeys reports whether each run uses up keys (insert fills the
// trie, delete empties it), so that user space must reset the trie.
func (o LPMOp) consumesKeys() bool { return o == OpInsert || o == OpDelete }

// LPMBench describes one LPM trie benchmark program timed around bpf_loop.
type LPMBench struct {
	Op LPMOp
	// Keys is the order in which keys are used. Insert and delete walk
	// the keys sequentially (a random delete would hit deleted keys).
	Keys KeyOrder
	// Entries is the number of keys in the full trie: the dense prefixes
	// [0, Entries). It must be at least 1 and at most math.MaxInt32 (it
	// is an immediate operand of BPF_MOD) and 2^PrefixLen.
	Entries uint32
	// PrefixLen is the prefix length of every key; 0 means PrefixLen.
	PrefixLen uint32
	// Loops is the number of bpf_loop iterations per program run; 0
	// means LoopIterations.
	Loops uint32
	// Marks, when set, bracket the timed bpf_loop for the memory plugin.
	Marks WindowMarks
	// Layout is how keys are stored (HostOrderKeys needs PrefixLen 32).
	Layout KeyLayout
}

// ProgName is the name of the XDP program in the spec, e.g. "lpm_lookup",
// or "lpm_lookup_host" with keys in host byte order.
func (l LPMBench) ProgName() string {
	if l.Layout == HostOrderKeys {
		return "lpm_" + l.Op.String() + "_host"
	}
	return "lpm_" + l.Op.String()
}

func (l LPMBench) loops() uint32 {
	if l.Loops == 0 {
		return LoopIterations
	}
	return l.Loops
}

func (l LPMBench) prefixLen() uint32 {
	if l.PrefixLen == 0 {
		return PrefixLen
	}
	return l.PrefixLen
}

// checkTrieParams checks entries and prefixLen as every LPM benchmark
// needs them: at least one key, keys usable as BPF immediates, and enough
// distinct prefixes of length prefixLen (2^prefixLen ≥ entries).
func checkTrieParams(entries, prefixLen uint32) error {
	if entries < 1 || entries > math.MaxInt32 {
		return fmt.Errorf("entries %d out of range [1, %d]", entries, math.MaxInt32)
	}
	if prefixLen < 1 || prefixLen > 32 {
		return fmt.Errorf("prefix length %d out of range [1, 32]", prefixLen)
	}
	if prefixLen < 32 && entries > 1<<prefixLen {
		return fmt.Errorf("prefix length %d has only %d distinct prefixes, fewer than %d entries (raise the prefix length)", prefixLen, 1<<prefixLen, entries)
	}
	return nil
}

func (l LPMBench) validate() error {
	if err := checkTrieParams(l.Entries, l.prefixLen()); err != nil {
		return err
	}
	if l.Op < OpNoop || l.Op > OpDelete {
		return fmt.Errorf("unknown operation %v", l.Op)
	}
	if l.Keys != RandomKeys && l.Keys != SequentialKeys {
		return fmt.Errorf("unknown key order %v", l.Keys)
	}
	if l.Layout == HostOrderKeys && l.prefixLen() != 32 {
		return fmt.Errorf("keys in host byte order need prefix length 32, not %d (the kernel bench's keys are whole u32s)", l.prefixLen())
	}
	if l.Op.consumesKeys() && l.Keys != SequentialKeys {
		return fmt.Errorf("%v needs sequential keys", l.Op)
	}
	if n := l.loops(); n < 1 || n > maxLoopIterations {
		return fmt.Errorf("loops %d out of bpf_loop's range [1, %d]", n, maxLoopIterations)
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

// Spec returns the collection for the benchmark: the XDP program
// ProgName(), the stats map StatsMapName and, for operations that use it,
// the trie TrieMapName (empty; the caller fills it with
// KeyFor(PrefixLen, i) for i in [0, Entries) when Op.StartsFull()).
//
// Each run of the program reads bpf_ktime_get_ns, calls
// bpf_loop(n, callback, &ctx, 0), reads the time again and atomically adds
// the elapsed time, the iteration count and 1 (runs) to the stats. n is
// Loops, except for insert and delete, where it is at most the number of
// keys left (Entries - Cursor): a run that finds none left does nothing and
// returns RetNeedsReset, and user space resets the trie and the cursor
// outside the timed region. Each callback iteration builds a key (random or
// sequential, shifted into the top PrefixLen bits, big-endian) and does the
// operation; a failed operation is recorded in the stats and stops the
// loop. A run that did its work returns RetDone.
//
// Requires Linux 5.17 (bpf_loop); running it with BPF_PROG_TEST_RUN needs
// at least 14 bytes of packet data.
func (l LPMBench) Spec() (*ebpf.CollectionSpec, error) {
	if err := l.validate(); err != nil {
		return nil, fmt.Errorf("LPM %v program: %w", l.Op, err)
	}
	prog := &ebpf.ProgramSpec{
		Name:         l.ProgName(),
		Type:         ebpf.XDP,
		License:      "Dual MIT/GPL",
		Instructions: append(l.loopMain(), l.callback()...),
	}
	maps := map[string]*ebpf.MapSpec{StatsMapName: statsSpec()}
	if l.Op.UsesTrie() {
		maps[TrieMapName] = TrieSpec(l.Entries)
	}
	return &ebpf.CollectionSpec{
		Maps:     maps,
		Programs: map[string]*ebpf.ProgramSpec{prog.Name: prog},
	}, nil
}

// callbackSymbol labels the first instruction of the bpf_loop callback.
const callbackSymbol = "loop_cb"

// Stack layout of the main function: the bpf_loop context.
const ctxCursor = -8 // u64 cursor, read by the sequential callback

// Stack layout of the callback: the LPM key and the value to store.
const (
	keyPrefixlen = -8  // u32
	keyData      = -4  // [4]byte, big-endian
	valueSlot    = -12 // u32
)

// loopMain returns the program's main function: time one bpf_loop call and
// account for it in the stats (timedLoop). The callback follows, labelled
// callbackSymbol.
func (l LPMBench) loopMain() asm.Instructions {
	t := timedLoop{name: l.ProgName(), loops: l.loops(), entries: l.Entries, marks: l.Marks}
	switch {
	case l.Op.consumesKeys():
		t.cursor = cursorConsume
	case l.Op != OpNoop && l.Keys == SequentialKeys:
		t.cursor = cursorWrap
	}
	return t.main()
}

// callback returns the bpf_loop callback: long cb(u64 index, void *ctx).
// It returns 0 to continue and 1 to stop the loop.
func (l LPMBench) callback() asm.Instructions {
	name := "lpm_" + l.Op.String() + "_cb"
	if l.Op == OpNoop {
		return emptyCallback(name)
	}
	insns := keyIndex(loopCallbackFunc(name), l.Keys, l.Entries)
	insns = append(insns, asm.Mov.Reg(asm.R6, asm.R0)) // key value, kept for failures
	insns = append(insns, storeKey(asm.R0, l.prefixLen(), l.Layout)...)
	ok := asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}
	switch l.Op {
	case OpBaseline:
		return append(insns, ok...)
	case OpLookup:
		insns = append(insns, lookupKey()...)
		insns = append(insns,
			asm.JNE.Imm(asm.R0, 0, "op_ok"),
			asm.Mov.Imm(asm.R0, -int32(unix.ENOENT)),
			asm.Ja.Label("op_failed"),
		)
	case OpUpdate, OpInsert:
		flags := int32(unix.BPF_EXIST)
		if l.Op == OpInsert {
			flags = unix.BPF_NOEXIST
		}
		insns = append(insns, updateKey(asm.R6, flags)...)
		insns = append(insns, asm.JNE.Imm(asm.R0, 0, "op_failed"), asm.Ja.Label("op_ok"))
	case OpDelete:
		insns = append(insns,
			asm.LoadMapPtr(asm.R1, 0).WithReference(TrieMapName),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, keyPrefixlen),
			asm.FnMapDeleteElem.Call(),
			asm.JNE.Imm(asm.R0, 0, "op_failed"),
			asm.Ja.Label("op_ok"),
		)
	}
	ok[0] = ok[0].WithSymbol("op_ok")
	insns = append(insns, ok...)
	// A failure: record it and stop the loop. r0 holds the error.
	return append(insns, recordFailure("op_failed", asm.R6, 1)...)
}

// storeKey emits the LPM key for the prefix number in src at
// fp+keyPrefixlen: src is shifted into the top prefixLen bits and stored
// big-endian, or stored as it is in the host's order (HostOrderKeys,
// prefix length 32). It clobbers src.
func storeKey(src asm.Register, prefixLen uint32, layout KeyLayout) asm.Instructions {
	var insns asm.Instructions
	if prefixLen < 32 {
		insns = append(insns, asm.LSh.Imm32(src, int32(32-prefixLen)))
	}
	if layout != HostOrderKeys {
		insns = append(insns, asm.HostTo(asm.BE, src, asm.Word))
	}
	return append(insns,
		asm.StoreMem(asm.RFP, keyData, src, asm.Word),
		asm.StoreImm(asm.RFP, keyPrefixlen, int64(prefixLen), asm.Word),
	)
}

// lookupKey emits r0 = bpf_map_lookup_elem(&trie, fp+keyPrefixlen).
func lookupKey() asm.Instructions {
	return asm.Instructions{
		asm.LoadMapPtr(asm.R1, 0).WithReference(TrieMapName),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, keyPrefixlen),
		asm.FnMapLookupElem.Call(),
	}
}

// updateKey emits r0 = bpf_map_update_elem(&trie, fp+keyPrefixlen, &value,
// flags) where value is the u32 in the register value.
func updateKey(value asm.Register, flags int32) asm.Instructions {
	return asm.Instructions{
		asm.StoreMem(asm.RFP, valueSlot, value, asm.Word),
		asm.LoadMapPtr(asm.R1, 0).WithReference(TrieMapName),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, keyPrefixlen),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, valueSlot),
		asm.Mov.Imm(asm.R4, flags),
		asm.FnMapUpdateElem.Call(),
	}
}

// recordFailure emits, at label, the failure path: stats.failures += 1,
// stats.fail_key = key, stats.fail_code = r0, then return ret. It clobbers
// r1-r3.
func recordFailure(label string, key asm.Register, ret int32) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R3, asm.R0).WithSymbol(label),
		asm.LoadMapValue(asm.R1, 0, 0).WithReference(StatsMapName),
		asm.Mov.Imm(asm.R2, 1),
		atomicAdd(asm.R1, offFailures, asm.R2),
		asm.StoreMem(asm.R1, offFailKey, key, asm.DWord),
		asm.StoreMem(asm.R1, offFailCode, asm.R3, asm.DWord),
		asm.Mov.Imm(asm.R0, ret),
		asm.Return(),
	}
}

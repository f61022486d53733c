package bpf

import (
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// HashMapName is the name of the hash map in HashBench's collection.
const HashMapName = "bench_hash"

// HashKind is the type of hash map a HashBench measures.
type HashKind int

const (
	// Hash is BPF_MAP_TYPE_HASH, preallocated. Requires Linux 3.19.
	Hash HashKind = iota
	// LRUHash is BPF_MAP_TYPE_LRU_HASH. Requires Linux 4.10.
	LRUHash
	// PerCPUHash is BPF_MAP_TYPE_PERCPU_HASH. Requires Linux 4.6.
	PerCPUHash
	// LRUPerCPUHash is BPF_MAP_TYPE_LRU_PERCPU_HASH. Requires Linux 4.10.
	LRUPerCPUHash
)

var hashKinds = [...]struct {
	name string
	typ  ebpf.MapType
}{
	Hash:          {"hash", ebpf.Hash},
	LRUHash:       {"lru_hash", ebpf.LRUHash},
	PerCPUHash:    {"percpu_hash", ebpf.PerCPUHash},
	LRUPerCPUHash: {"lru_percpu_hash", ebpf.LRUCPUHash},
}

// HashKinds lists the kinds, in the order benchmarks are registered.
var HashKinds = []HashKind{Hash, LRUHash, PerCPUHash, LRUPerCPUHash}

// String returns the name used in benchmark names, e.g. "lru_hash".
func (k HashKind) String() string {
	if k >= 0 && int(k) < len(hashKinds) {
		return hashKinds[k].name
	}
	return fmt.Sprintf("HashKind(%d)", int(k))
}

// MapType returns the kernel's map type of the kind.
func (k HashKind) MapType() ebpf.MapType { return hashKinds[k].typ }

// PerCPU reports whether the map holds one value per CPU.
func (k HashKind) PerCPU() bool { return k == PerCPUHash || k == LRUPerCPUHash }

// LRU reports whether the map evicts (see HashBench.Spare).
func (k HashKind) LRU() bool { return k == LRUHash || k == LRUPerCPUHash }

// HashOp is the operation a HashBench times, once per loop iteration.
type HashOp int

const (
	// HashBaseline builds the key and nothing else: the cost of key
	// generation, to subtract from lookup and update.
	HashBaseline HashOp = iota
	// HashLookup is bpf_map_lookup_elem of a key of a full map; a miss
	// is a failure (the kernel bench's bpf-hashmap-lookup).
	HashLookup
	// HashUpdate is bpf_map_update_elem(BPF_ANY) of a key of a full map:
	// every update replaces an element of a map with no free slot, so a
	// preallocated map takes the new element from its spare per-CPU
	// elements and an LRU map from its free lists (the kernel bench's
	// bpf-hashmap-full-update); an error is a failure.
	HashUpdate
)

var hashOpNames = [...]string{"baseline", "lookup", "update"}

// String returns the name used in benchmark names, e.g. "lookup".
func (o HashOp) String() string {
	if o >= 0 && int(o) < len(hashOpNames) {
		return hashOpNames[o]
	}
	return fmt.Sprintf("HashOp(%d)", int(o))
}

// maxHashKeySize bounds HashBench.KeySize: the key lives on the 512-byte
// stack of the callback, beside the value.
const maxHashKeySize = 256

// hashValueSize is the value size of the benchmark hash maps (a u64, as in
// the kernel's full-update bench).
const hashValueSize = 8

// HashBench describes one hash map benchmark program timed around
// bpf_loop (see timedLoop), after the kernel's bpf-hashmap-lookup and
// bpf-hashmap-full-update benches: the map holds the keys HashKey(KeySize,
// i) for i in [0, Entries), and each iteration builds the key of one of them
// (KeyOrder) and does Op on it.
type HashBench struct {
	Kind HashKind
	Op   HashOp
	Keys KeyOrder
	// KeySize is the key size in bytes: a multiple of 4 in [4,
	// maxHashKeySize]. The key number is in its first 4 bytes (host
	// order), the rest is zero, as in the kernel bench.
	KeySize uint32
	// Entries is the number of keys, and with Spare the map's
	// max_entries: without Spare the map is full.
	Entries uint32
	// Spare is room beyond Entries. LRU maps need it to hold Entries
	// keys at all: they evict before they are full, when a CPU refills
	// its local free list (128 elements at a time) and the global one has
	// fewer left.
	Spare uint32
	// ZeroSeed creates the map with BPF_F_ZERO_SEED (Linux 5.0): the same
	// bucket layout in every boot.
	ZeroSeed bool
	// Loops is the number of bpf_loop iterations per run; 0 means
	// LoopIterations.
	Loops uint32
	// Marks, when set, bracket the timed bpf_loop for the memory plugin.
	Marks WindowMarks
}

// ProgName is the name of the XDP program in the spec, e.g. "hash_lookup".
func (h HashBench) ProgName() string { return "hash_" + h.Op.String() }

func (h HashBench) validate() error {
	if h.Kind < Hash || h.Kind > LRUPerCPUHash {
		return fmt.Errorf("unknown hash map kind %v", h.Kind)
	}
	if h.Op < HashBaseline || h.Op > HashUpdate {
		return fmt.Errorf("unknown operation %v", h.Op)
	}
	if h.Keys != RandomKeys && h.Keys != SequentialKeys {
		return fmt.Errorf("unknown key order %v", h.Keys)
	}
	if h.KeySize < 4 || h.KeySize > maxHashKeySize || h.KeySize%4 != 0 {
		return fmt.Errorf("key size %d: want a multiple of 4 in [4, %d]", h.KeySize, maxHashKeySize)
	}
	if err := checkEntries(h.Entries); err != nil {
		return err
	}
	if h.Spare > 1<<24 || h.Entries+h.Spare < h.Entries {
		return fmt.Errorf("spare %d out of range [0, %d]", h.Spare, 1<<24)
	}
	return checkLoops(h.Loops)
}

// checkEntries checks a number of keys that programs use as an immediate.
func checkEntries(n uint32) error {
	if n < 1 || n > 1<<31-1 {
		return fmt.Errorf("entries %d out of range [1, %d]", n, 1<<31-1)
	}
	return nil
}

// checkLoops checks a number of bpf_loop iterations (0: LoopIterations).
func checkLoops(n uint32) error {
	if n > maxLoopIterations {
		return fmt.Errorf("loops %d out of bpf_loop's range [1, %d]", n, maxLoopIterations)
	}
	return nil
}

func loopsOr(n uint32) uint32 {
	if n == 0 {
		return LoopIterations
	}
	return n
}

// HashKey returns key number v of keySize bytes: v in the first 4 bytes in
// host order (little-endian on the machines lpmbisect runs on), the rest
// zero.
func HashKey(keySize, v uint32) []byte {
	k := make([]byte, keySize)
	binary.NativeEndian.PutUint32(k, v)
	return k
}

// MapSpec returns the spec of the hash map: preallocated, KeySize-byte
// keys, hashValueSize-byte values, Entries+Spare elements.
func (h HashBench) MapSpec() *ebpf.MapSpec {
	s := &ebpf.MapSpec{Name: HashMapName, Type: h.Kind.MapType(), KeySize: h.KeySize, ValueSize: hashValueSize, MaxEntries: h.Entries + h.Spare}
	if h.ZeroSeed {
		s.Flags |= unix.BPF_F_ZERO_SEED
	}
	return s
}

// Spec returns the collection: the XDP program ProgName(), the stats map
// and, but for the baseline, the hash map HashMapName (empty: the caller
// fills it with HashKey(KeySize, i) for i in [0, Entries)).
//
// Requires Linux 5.17 (bpf_loop); BPF_F_ZERO_SEED needs 5.0.
func (h HashBench) Spec() (*ebpf.CollectionSpec, error) {
	if err := h.validate(); err != nil {
		return nil, fmt.Errorf("hash map %v program: %w", h.Op, err)
	}
	t := timedLoop{name: h.ProgName(), loops: loopsOr(h.Loops), entries: h.Entries, marks: h.Marks}
	if h.Keys == SequentialKeys {
		t.cursor = cursorWrap
	}
	insns := append(t.main(), h.callback()...)
	prog := &ebpf.ProgramSpec{Name: h.ProgName(), Type: ebpf.XDP, License: "Dual MIT/GPL", Instructions: insns}
	maps := map[string]*ebpf.MapSpec{StatsMapName: statsSpec()}
	if h.Op != HashBaseline {
		maps[HashMapName] = h.MapSpec()
	}
	return &ebpf.CollectionSpec{Maps: maps, Programs: map[string]*ebpf.ProgramSpec{prog.Name: prog}}, nil
}

// callback returns the bpf_loop callback: the key at fp-KeySize, the value
// (for updates) in the 8 bytes below it, aligned.
func (h HashBench) callback() asm.Instructions {
	insns := keyIndex(loopCallbackFunc("hash_"+h.Op.String()+"_cb"), h.Keys, h.Entries)
	insns = append(insns, asm.Mov.Reg(asm.R6, asm.R0)) // key number, kept for failures
	keyOff := -int16(h.KeySize)
	insns = append(insns, storeWideKey(asm.R0, keyOff, h.KeySize)...)
	switch h.Op {
	case HashBaseline:
		return append(insns, asm.Mov.Imm(asm.R0, 0), asm.Return())
	case HashLookup:
		insns = append(insns,
			asm.LoadMapPtr(asm.R1, 0).WithReference(HashMapName),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, int32(keyOff)),
			asm.FnMapLookupElem.Call(),
			asm.JNE.Imm(asm.R0, 0, "op_ok"),
			asm.Mov.Imm(asm.R0, -int32(unix.ENOENT)),
			asm.Ja.Label("op_failed"),
		)
	case HashUpdate:
		valueOff := -int16((h.KeySize+7)/8*8) - 8 // 8-byte aligned: the verifier wants aligned stack access
		insns = append(insns,
			asm.StoreMem(asm.RFP, valueOff, asm.R6, asm.DWord),
			asm.LoadMapPtr(asm.R1, 0).WithReference(HashMapName),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, int32(keyOff)),
			asm.Mov.Reg(asm.R3, asm.RFP),
			asm.Add.Imm(asm.R3, int32(valueOff)),
			asm.Mov.Imm(asm.R4, unix.BPF_ANY),
			asm.FnMapUpdateElem.Call(),
			asm.JNE.Imm(asm.R0, 0, "op_failed"),
		)
	}
	insns = append(insns, asm.Mov.Imm(asm.R0, 0).WithSymbol("op_ok"), asm.Return())
	return append(insns, recordFailure("op_failed", asm.R6, 1)...)
}

// storeWideKey emits a key of size bytes at fp+off: the u32 in src in its
// first 4 bytes, zeroes after (written every iteration: the verifier wants
// the whole key initialised, and the callback's stack is fresh per call).
// It clobbers r3.
func storeWideKey(src asm.Register, off int16, size uint32) asm.Instructions {
	insns := asm.Instructions{asm.StoreMem(asm.RFP, off, src, asm.Word)}
	at := off + 4
	end := off + int16(size)
	if at < end && (at%8) != 0 {
		insns = append(insns, asm.StoreImm(asm.RFP, at, 0, asm.Word))
		at += 4
	}
	if at+8 <= end {
		insns = append(insns, asm.Mov.Imm(asm.R3, 0)) // cilium/ebpf has no 8-byte store of an immediate
	}
	for ; at+8 <= end; at += 8 {
		insns = append(insns, asm.StoreMem(asm.RFP, at, asm.R3, asm.DWord))
	}
	if at < end {
		insns = append(insns, asm.StoreImm(asm.RFP, at, 0, asm.Word))
	}
	return insns
}

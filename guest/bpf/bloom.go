package bpf

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// BloomMapName is the name of the bloom filter in BloomBench's collection;
// its hash map, where it has one, is HashMapName.
const BloomMapName = "bench_bloom"

// BloomValueSize is the size of the bloom filter's values and of the hash
// map's keys in BloomBench: a u64 key number.
const BloomValueSize = 8

// maxBloomHashes bounds BloomBench.Hashes (the kernel's limit is 15).
const maxBloomHashes = 15

// BloomOp is the operation a BloomBench times, once per loop iteration.
type BloomOp int

const (
	// BloomLookup is bpf_map_peek_elem of a value in the filter: it must
	// answer "maybe present" (0), since a bloom filter has no false
	// negatives (the kernel bench's bloom-lookup).
	BloomLookup BloomOp = iota
	// BloomUpdate is bpf_map_push_elem of a value (bloom-update); the
	// filter never fills up.
	BloomUpdate
	// HashWithBloom looks a key up in a hash map of Entries keys after
	// asking the filter, which holds the same keys, whether it may be
	// there; the keys walk [0, 2×Entries), so half are absent and most of
	// those stop at the filter (hashmap-with-bloom).
	HashWithBloom
	// HashWithoutBloom is HashWithBloom's lookups without the filter
	// (hashmap-without-bloom).
	HashWithoutBloom
)

var bloomOpNames = [...]string{"lookup", "update", "hashmap_with_bloom", "hashmap_without_bloom"}

// String returns the name used in benchmark names.
func (o BloomOp) String() string {
	if o >= 0 && int(o) < len(bloomOpNames) {
		return bloomOpNames[o]
	}
	return fmt.Sprintf("BloomOp(%d)", int(o))
}

// UsesFilter reports whether the program has a bloom filter.
func (o BloomOp) UsesFilter() bool { return o != HashWithoutBloom }

// UsesHash reports whether the program has a hash map.
func (o BloomOp) UsesHash() bool { return o == HashWithBloom || o == HashWithoutBloom }

// BloomBench describes one bloom filter benchmark program timed around
// bpf_loop (see timedLoop), after the kernel's bloom filter benches: the
// filter (and the hash map) hold the u64 values [0, Entries), and each
// iteration takes the next value of a walk in order.
type BloomBench struct {
	Op BloomOp
	// Hashes is the filter's number of hash functions (map_extra), 1 to
	// maxBloomHashes.
	Hashes uint32
	// Entries is the number of values the filter (and the hash map)
	// hold, and their max_entries.
	Entries uint32
	// ZeroSeed creates the maps with BPF_F_ZERO_SEED.
	ZeroSeed bool
	// Loops is the number of bpf_loop iterations per run; 0 means
	// LoopIterations.
	Loops uint32
	// Marks, when set, bracket the timed bpf_loop for the memory plugin.
	Marks WindowMarks
}

// ProgName is the name of the XDP program in the spec, e.g. "bloom_lookup".
func (b BloomBench) ProgName() string {
	if b.Op.UsesHash() {
		return b.Op.String()
	}
	return "bloom_" + b.Op.String()
}

func (b BloomBench) validate() error {
	if b.Op < BloomLookup || b.Op > HashWithoutBloom {
		return fmt.Errorf("unknown operation %v", b.Op)
	}
	if b.Op.UsesFilter() && (b.Hashes < 1 || b.Hashes > maxBloomHashes) {
		return fmt.Errorf("%d hash functions out of range [1, %d]", b.Hashes, maxBloomHashes)
	}
	if err := checkEntries(b.Entries); err != nil {
		return err
	}
	if b.Op.UsesHash() && b.Entries > 1<<30 {
		return fmt.Errorf("entries %d: the walk over twice as many keys must fit an immediate", b.Entries)
	}
	return checkLoops(b.Loops)
}

// walked is the number of distinct key numbers the walk visits.
func (b BloomBench) walked() uint32 {
	if b.Op.UsesHash() {
		return 2 * b.Entries
	}
	return b.Entries
}

// FilterSpec returns the spec of the bloom filter (Requires Linux 5.16).
func (b BloomBench) FilterSpec() *ebpf.MapSpec {
	s := &ebpf.MapSpec{Name: BloomMapName, Type: ebpf.BloomFilter, ValueSize: BloomValueSize, MaxEntries: b.Entries, MapExtra: uint64(b.Hashes)}
	if b.ZeroSeed {
		s.Flags |= unix.BPF_F_ZERO_SEED
	}
	return s
}

// HashSpec returns the spec of the hash map of HashWithBloom and
// HashWithoutBloom: u64 keys and values, preallocated.
func (b BloomBench) HashSpec() *ebpf.MapSpec {
	s := &ebpf.MapSpec{Name: HashMapName, Type: ebpf.Hash, KeySize: BloomValueSize, ValueSize: hashValueSize, MaxEntries: b.Entries}
	if b.ZeroSeed {
		s.Flags |= unix.BPF_F_ZERO_SEED
	}
	return s
}

// Spec returns the collection: the XDP program ProgName(), the stats map,
// and the filter and hash map the operation uses (empty: the caller puts
// the values [0, Entries) in each). A wrong answer is a failure: the
// filter saying "absent" of a value it holds, the hash map finding a key
// it does not hold or missing one it does; its code is -ENOENT for a
// missed key and -EEXIST for a found absent one.
//
// Requires Linux 5.17 (bpf_loop) and 5.16 (bloom filter); BPF_F_ZERO_SEED
// needs 5.0.
func (b BloomBench) Spec() (*ebpf.CollectionSpec, error) {
	if err := b.validate(); err != nil {
		return nil, fmt.Errorf("bloom filter %v program: %w", b.Op, err)
	}
	t := timedLoop{name: b.ProgName(), loops: loopsOr(b.Loops), entries: b.walked(), cursor: cursorWrap, marks: b.Marks}
	insns := append(t.main(), b.callback()...)
	prog := &ebpf.ProgramSpec{Name: b.ProgName(), Type: ebpf.XDP, License: "Dual MIT/GPL", Instructions: insns}
	maps := map[string]*ebpf.MapSpec{StatsMapName: statsSpec()}
	if b.Op.UsesFilter() {
		maps[BloomMapName] = b.FilterSpec()
	}
	if b.Op.UsesHash() {
		maps[HashMapName] = b.HashSpec()
	}
	return &ebpf.CollectionSpec{Maps: maps, Programs: map[string]*ebpf.ProgramSpec{prog.Name: prog}}, nil
}

// bloomValue is the stack slot of the value (key) of each iteration.
const bloomValue = -8

// callback returns the bpf_loop callback.
func (b BloomBench) callback() asm.Instructions {
	insns := keyIndex(loopCallbackFunc(b.ProgName()+"_cb"), SequentialKeys, b.walked())
	insns = append(insns,
		asm.Mov.Reg(asm.R6, asm.R0), // key number, kept for failures and checks
		asm.StoreMem(asm.RFP, bloomValue, asm.R0, asm.DWord),
	)
	valuePtr := asm.Instructions{asm.Mov.Reg(asm.R2, asm.RFP), asm.Add.Imm(asm.R2, bloomValue)}
	switch b.Op {
	case BloomLookup:
		insns = append(insns, asm.LoadMapPtr(asm.R1, 0).WithReference(BloomMapName))
		insns = append(insns, valuePtr...)
		insns = append(insns, asm.FnMapPeekElem.Call(), asm.JNE.Imm32(asm.R0, 0, "op_failed"))
	case BloomUpdate:
		insns = append(insns, asm.LoadMapPtr(asm.R1, 0).WithReference(BloomMapName))
		insns = append(insns, valuePtr...)
		insns = append(insns, asm.Mov.Imm(asm.R3, unix.BPF_ANY), asm.FnMapPushElem.Call(), asm.JNE.Imm32(asm.R0, 0, "op_failed"))
	case HashWithBloom:
		insns = append(insns, asm.LoadMapPtr(asm.R1, 0).WithReference(BloomMapName))
		insns = append(insns, valuePtr...)
		insns = append(insns,
			asm.FnMapPeekElem.Call(),
			asm.JEq.Imm32(asm.R0, 0, "lookup"),
			// 32-bit: the map op is an int function, called directly
			// since the verifier's rewrite, and 6.1 leaves the upper half
			// of r0 zero.
			asm.JNE.Imm32(asm.R0, -int32(unix.ENOENT), "op_failed"),
			// Definitely absent: right unless the key was put in.
			asm.JLT.Imm(asm.R6, int32(b.Entries), "op_failed"),
			asm.Ja.Label("op_ok"),
		)
		fallthrough
	case HashWithoutBloom:
		lookup := asm.Instructions{asm.LoadMapPtr(asm.R1, 0).WithReference(HashMapName)}
		if b.Op == HashWithBloom {
			lookup[0] = lookup[0].WithSymbol("lookup")
		}
		insns = append(insns, lookup...)
		insns = append(insns, valuePtr...)
		insns = append(insns,
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "missed"),
			// Found: right if the key was put in.
			asm.JLT.Imm(asm.R6, int32(b.Entries), "op_ok"),
			asm.Mov.Imm(asm.R0, -int32(unix.EEXIST)),
			asm.Ja.Label("op_failed"),
			// Not found: right if the key was not put in.
			asm.JGE.Imm(asm.R6, int32(b.Entries), "op_ok").WithSymbol("missed"),
			asm.Mov.Imm(asm.R0, -int32(unix.ENOENT)),
			asm.Ja.Label("op_failed"),
		)
	}
	insns = append(insns, asm.Mov.Imm(asm.R0, 0).WithSymbol("op_ok"), asm.Return())
	return append(insns, recordFailure("op_failed", asm.R6, 1)...)
}

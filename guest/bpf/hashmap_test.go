package bpf

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
)

func TestHashBenchSpecRejects(t *testing.T) {
	for _, h := range []HashBench{
		{KeySize: 3, Entries: 10},
		{KeySize: 6, Entries: 10},
		{KeySize: maxHashKeySize + 4, Entries: 10},
		{KeySize: 4, Entries: 0},
		{KeySize: 4, Entries: 10, Loops: maxLoopIterations + 1},
		{Kind: LRUPerCPUHash + 1, KeySize: 4, Entries: 10},
	} {
		if _, err := h.Spec(); err == nil {
			t.Errorf("%+v.Spec() = nil error; want an error", h)
		}
	}
}

func TestStoreWideKey(t *testing.T) {
	for _, size := range []uint32{4, 8, 12, 16, 20, 64, 256} {
		insns := storeWideKey(0, -int16(size), size)
		covered := 0
		for _, ins := range insns {
			if ins.OpCode.Class().IsALU() {
				continue
			}
			covered += ins.OpCode.Size().Sizeof()
			if off := int(ins.Offset); off%ins.OpCode.Size().Sizeof() != 0 {
				t.Errorf("key size %d: store at fp%d of %d bytes is misaligned", size, off, ins.OpCode.Size().Sizeof())
			}
		}
		if covered != int(size) {
			t.Errorf("key size %d: stores cover %d bytes; want %d", size, covered, size)
		}
	}
}

// fillHash inserts HashKey(keySize, i) → i for i in [0, n).
func fillHash(t *testing.T, m *ebpf.Map, kind HashKind, keySize, n uint32) {
	t.Helper()
	for i := range n {
		var err error
		if kind.PerCPU() {
			vals := make([]uint64, ebpf.MustPossibleCPU())
			err = m.Update(HashKey(keySize, i), vals, ebpf.UpdateAny)
		} else {
			err = m.Update(HashKey(keySize, i), uint64(i), ebpf.UpdateAny)
		}
		if err != nil {
			t.Fatalf("Update(%d) = %v", i, err)
		}
	}
}

func TestHashBenchInKernel(t *testing.T) {
	skipWithoutBPF(t)
	for _, kind := range HashKinds {
		for _, op := range []HashOp{HashBaseline, HashLookup, HashUpdate} {
			for _, keySize := range []uint32{4, 64} {
				h := HashBench{Kind: kind, Op: op, Keys: SequentialKeys, KeySize: keySize, Entries: 300, ZeroSeed: true, Loops: 1000}
				if kind.LRU() {
					// As workloads sizes them: a full LRU map evicts keys
					// filled from another CPU's free list, which the
					// scheduler decides (it failed on a 2-CPU host).
					h.Spare = 256 * uint32(ebpf.MustPossibleCPU())
				}
				t.Run(strings.Join([]string{kind.String(), op.String(), fmt.Sprint(keySize)}, "/"), func(t *testing.T) {
					spec, err := h.Spec()
					if err != nil {
						t.Fatal(err)
					}
					coll := loadFilled(t, spec, 0, 32, 0)
					if m := coll.Maps[HashMapName]; m != nil {
						fillHash(t, m, kind, keySize, h.Entries)
					}
					s, ret := runXDP(t, coll.Programs[h.ProgName()], coll.Maps[StatsMapName], 3)
					if err := s.Check(); err != nil || ret != RetDone || s.Iterations != 3000 || s.Cursor != 3000%300 {
						t.Errorf("after 3 runs: %d, %+v, Check() = %v; want RetDone, 3000 iterations, cursor %d", ret, s, err, 3000%300)
					}
				})
			}
		}
	}
	// A missing key fails the lookup.
	h := HashBench{Kind: Hash, Op: HashLookup, Keys: RandomKeys, KeySize: 8, Entries: 100, Loops: 1000}
	spec, _ := h.Spec()
	coll := loadFilled(t, spec, 0, 32, 0)
	fillHash(t, coll.Maps[HashMapName], Hash, 8, 99)
	s, _ := runXDP(t, coll.Programs[h.ProgName()], coll.Maps[StatsMapName], 1)
	if s.Failures != 1 || s.FailKey != 99 {
		t.Errorf("lookups with key 99 missing: %+v; want 1 failure at key 99", s)
	}
}

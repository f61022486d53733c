package bpf

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
)

func TestBloomBenchSpecRejects(t *testing.T) {
	for _, b := range []BloomBench{
		{Op: BloomLookup, Hashes: 0, Entries: 10},
		{Op: BloomLookup, Hashes: maxBloomHashes + 1, Entries: 10},
		{Op: HashWithBloom, Hashes: 3, Entries: 0},
		{Op: HashWithoutBloom + 1, Hashes: 3, Entries: 10},
	} {
		if _, err := b.Spec(); err == nil {
			t.Errorf("%+v.Spec() = nil error; want an error", b)
		}
	}
	if _, err := (BloomBench{Op: HashWithoutBloom, Entries: 10}).Spec(); err != nil {
		t.Errorf("HashWithoutBloom without hashes: %v; want no error (it has no filter)", err)
	}
}

// fillBloom puts the values [0, n) in the collection's filter and hash map.
func fillBloom(t *testing.T, coll *ebpf.Collection, n uint32) {
	t.Helper()
	for i := range uint64(n) {
		if m := coll.Maps[BloomMapName]; m != nil {
			if err := m.Update(nil, i, ebpf.UpdateAny); err != nil {
				t.Fatalf("push %d: %v", i, err)
			}
		}
		if m := coll.Maps[HashMapName]; m != nil {
			if err := m.Update(i, i, ebpf.UpdateAny); err != nil {
				t.Fatalf("update %d: %v", i, err)
			}
		}
	}
}

func TestBloomBenchInKernel(t *testing.T) {
	skipWithoutBPF(t)
	if err := features.HaveMapType(ebpf.BloomFilter); err != nil {
		t.Skipf("no bloom filter here: %v", err)
	}
	for _, op := range []BloomOp{BloomLookup, BloomUpdate, HashWithBloom, HashWithoutBloom} {
		t.Run(op.String(), func(t *testing.T) {
			b := BloomBench{Op: op, Hashes: 3, Entries: 500, ZeroSeed: true, Loops: 1000}
			spec, err := b.Spec()
			if err != nil {
				t.Fatal(err)
			}
			coll := loadFilled(t, spec, 0, 32, 0)
			fillBloom(t, coll, b.Entries)
			s, ret := runXDP(t, coll.Programs[b.ProgName()], coll.Maps[StatsMapName], 3)
			if err := s.Check(); err != nil || ret != RetDone || s.Iterations != 3000 || s.Cursor != uint64(3000%b.walked()) {
				t.Errorf("after 3 runs: %d, %+v, Check() = %v; want RetDone, 3000 iterations, cursor %d", ret, s, err, 3000%b.walked())
			}
		})
	}
	// A hash map missing a key the walk expects fails the run.
	b := BloomBench{Op: HashWithoutBloom, Entries: 100, Loops: 100}
	spec, _ := b.Spec()
	coll := loadFilled(t, spec, 0, 32, 0)
	fillBloom(t, coll, 99)
	s, _ := runXDP(t, coll.Programs[b.ProgName()], coll.Maps[StatsMapName], 1)
	if s.Failures != 1 || s.FailKey != 99 || int64(s.FailCode) != -2 {
		t.Errorf("lookups with key 99 missing: %+v; want 1 failure at key 99, code -ENOENT", s)
	}
}

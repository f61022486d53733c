package workloads

import (
	"fmt"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"

	"github.com/lpmbisect/lpmbisect/guest/bpf"
	"github.com/lpmbisect/lpmbisect/wire"
)

// ReqBloomFilter: BPF_MAP_TYPE_BLOOM_FILTER, Linux 5.16.
var ReqBloomFilter = Requirement{
	Feature:   "BPF_MAP_TYPE_BLOOM_FILTER",
	MinKernel: "5.16",
	Probe:     bpfProbe(func() error { return features.HaveMapType(ebpf.BloomFilter) }),
}

// bloomHashes are the hash function counts of the bloom filter lookups:
// the kernel bench's default (3) and its ends of interest.
var bloomHashes = []uint32{1, 3, 5}

// bloomDefaultHashes is the hash function count of the other bloom
// benchmarks.
const bloomDefaultHashes = 3

// bloomFunctions are the functions of interest of each operation: the
// verifier turns the peek and push helpers into direct calls of the map's
// operations, and hash map lookups into __htab_map_lookup_elem.
var bloomFunctions = map[bpf.BloomOp][]string{
	bpf.BloomLookup:      {"bloom_map_peek_elem"},
	bpf.BloomUpdate:      {"bloom_map_push_elem"},
	bpf.HashWithBloom:    {"bloom_map_peek_elem", "__htab_map_lookup_elem"},
	bpf.HashWithoutBloom: {"__htab_map_lookup_elem"},
}

const bloomDoc = "values are the u64 key numbers, walked in order; in-kernel ktime around one bpf_loop of 10000 iterations per XDP test run; BPF_F_ZERO_SEED under icount (hash-seed line)"

func bloomBenchmarks() []*Benchmark {
	bench := func(b bpf.BloomBench, name, doc string) *Benchmark {
		reqs := []Requirement{ReqBPFLoop}
		if b.Op.UsesFilter() {
			reqs = append([]Requirement{ReqBloomFilter}, reqs...)
		}
		if b.Op.UsesHash() {
			reqs = append([]Requirement{ReqHashMap}, reqs...)
		}
		return &Benchmark{Name: name, Doc: doc + " " + bloomDoc, Params: []string{"entries"}, Requires: reqs,
			Functions: bloomFunctions[b.Op], Run: bloomRun(b), Instance: bloomInstance(b), Spec: bloomSpec(b), Programs: []string{b.ProgName()}}
	}
	var out []*Benchmark
	for _, h := range bloomHashes {
		out = append(out, bench(bpf.BloomBench{Op: bpf.BloomLookup, Hashes: h}, fmt.Sprintf("BloomFilter/op=lookup/hashes=%d", h),
			fmt.Sprintf("bpf_map_peek_elem of values the filter holds (entries of them, %d hash functions); a \"not present\" fails the run (bloom-lookup).", h)))
	}
	out = append(out,
		bench(bpf.BloomBench{Op: bpf.BloomUpdate, Hashes: bloomDefaultHashes}, fmt.Sprintf("BloomFilter/op=update/hashes=%d", bloomDefaultHashes),
			fmt.Sprintf("bpf_map_push_elem of values [0,entries) into a filter sized for entries, %d hash functions (bloom-update).", bloomDefaultHashes)),
		bench(bpf.BloomBench{Op: bpf.HashWithBloom, Hashes: bloomDefaultHashes}, "BloomFilter/op=hashmap_with_bloom",
			fmt.Sprintf("lookups in a hash map of entries u64 keys, each after bpf_map_peek_elem on a filter of the same keys (%d hash functions), which stops most lookups of absent keys; keys walk [0,2×entries), half absent; a wrong answer fails the run (hashmap-with-bloom).", bloomDefaultHashes)),
		bench(bpf.BloomBench{Op: bpf.HashWithoutBloom}, "BloomFilter/op=hashmap_without_bloom",
			"the same lookups without the filter: compare with hashmap_with_bloom (hashmap-without-bloom)."),
	)
	return out
}

func bloomRun(b bpf.BloomBench) func(*Run) error {
	return runPrepared(func(r *Run) (*progBench, func(), error) { return bloomPrepare(r, b) })
}

// bloomPrepare loads a BloomFilter benchmark's program with its maps
// holding [0, entries): what its samples and the insight pass start from.
func bloomPrepare(r *Run, b bpf.BloomBench) (*progBench, func(), error) {
	b = bloomUnder(b, r.Params)
	spec, err := b.Spec()
	if err != nil {
		return nil, nil, err
	}
	coll, err := loadCollection(r, "bloom filter "+b.Op.String()+" program", spec)
	if err != nil {
		return nil, nil, zeroSeedErr(b.ZeroSeed, err)
	}
	start := time.Now()
	how, err := fillBloom(coll, b.Entries)
	if err != nil {
		coll.Close()
		return nil, nil, err
	}
	r.Info(fmt.Sprintf("filled %d entries with %s in %v", b.Entries, how, time.Since(start).Round(time.Millisecond)))
	return &progBench{prog: coll.Programs[b.ProgName()], stats: coll.Maps[bpf.StatsMapName]}, coll.Close, nil
}

// bloomUnder completes a BloomFilter benchmark's program for p: its
// entries and the hash seed.
func bloomUnder(b bpf.BloomBench, p Params) bpf.BloomBench {
	b.Entries, b.Marks = p.Entries, p.windowMarks()
	b.ZeroSeed = HashSeed(p.Clock) == wire.HashSeedZero
	return b
}

// bloomSpec builds the collection of a BloomFilter benchmark under p.
func bloomSpec(b bpf.BloomBench) func(Params) (*ebpf.CollectionSpec, error) {
	return func(p Params) (*ebpf.CollectionSpec, error) { return bloomUnder(b, p).Spec() }
}

// fillBloom puts the values [0, n) in the collection's bloom filter (one
// push per value: the filter has no batch operations) and hash map.
func fillBloom(coll *ebpf.Collection, n uint32) (string, error) {
	how := "no map"
	if m := coll.Maps[bpf.BloomMapName]; m != nil {
		for i := range uint64(n) {
			if err := m.Update(nil, i, ebpf.UpdateAny); err != nil {
				return "", fmt.Errorf("fill bloom filter: push %d: %w", i, err)
			}
		}
		how = "per-value pushes"
	}
	if m := coll.Maps[bpf.HashMapName]; m != nil {
		// The same keys as the filter's values: i in 8 bytes.
		hashHow, err := fillHash(m, bpf.Hash, bpf.BloomValueSize, n)
		if err != nil {
			return "", err
		}
		how += ", the hash map by " + hashHow
	}
	return how, nil
}

// bloomInstance is bloomPrepare for the insight pass (testRunInstance).
func bloomInstance(b bpf.BloomBench) func(Params, func(string, ...any)) (*Instance, error) {
	return testRunInstance(b.ProgName(), func(r *Run) (*progBench, func(), error) { return bloomPrepare(r, b) })
}

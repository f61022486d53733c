package workloads

import (
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"

	"github.com/lpmbisect/lpmbisect/guest/bpf"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Requirements of the hash map kinds besides BPF_MAP_TYPE_HASH (ReqHashMap).
var (
	// ReqLRUHash: BPF_MAP_TYPE_LRU_HASH, Linux 4.10.
	ReqLRUHash = Requirement{Feature: "BPF_MAP_TYPE_LRU_HASH", MinKernel: "4.10",
		Probe: bpfProbe(func() error { return features.HaveMapType(ebpf.LRUHash) })}
	// ReqPerCPUHash: BPF_MAP_TYPE_PERCPU_HASH, Linux 4.6.
	ReqPerCPUHash = Requirement{Feature: "BPF_MAP_TYPE_PERCPU_HASH", MinKernel: "4.6",
		Probe: bpfProbe(func() error { return features.HaveMapType(ebpf.PerCPUHash) })}
	// ReqLRUPerCPUHash: BPF_MAP_TYPE_LRU_PERCPU_HASH, Linux 4.10.
	ReqLRUPerCPUHash = Requirement{Feature: "BPF_MAP_TYPE_LRU_PERCPU_HASH", MinKernel: "4.10",
		Probe: bpfProbe(func() error { return features.HaveMapType(ebpf.LRUCPUHash) })}
)

var hashKindReqs = map[bpf.HashKind]Requirement{
	bpf.Hash:          ReqHashMap,
	bpf.LRUHash:       ReqLRUHash,
	bpf.PerCPUHash:    ReqPerCPUHash,
	bpf.LRUPerCPUHash: ReqLRUPerCPUHash,
}

// hashKeySizes are the key sizes of the HashMap benchmarks: the kernel
// bench's default (4) and a key as long as a flow tuple with room (64),
// where hashing the key dominates.
var hashKeySizes = []uint32{4, 64}

// lruSparePerCPU is the room an LRU map gets per possible CPU beyond its
// entries (bpf.HashBench.Spare): twice the kernel's LOCAL_FREE_TARGET
// (128), measured to be enough for a fill of 1000 keys on 2 CPUs to evict
// none, where a map of exactly 1000 lost keys.
const lruSparePerCPU = 256

// hashFunctions are the kernel functions of interest of each HashMap
// benchmark: what a program's lookups and updates really call. Lookups of
// the hash and LRU maps never call the helper: the verifier inlines
// htab_map_gen_lookup, whose code calls __htab_map_lookup_elem; the
// per-CPU maps' lookups were inlined the same way only later (6.10), so
// their helper is listed too.
var hashFunctions = map[bpf.HashKind]map[bpf.HashOp][]string{
	bpf.Hash:          {bpf.HashLookup: {"__htab_map_lookup_elem"}, bpf.HashUpdate: {"htab_map_update_elem", "alloc_htab_elem"}},
	bpf.LRUHash:       {bpf.HashLookup: {"__htab_map_lookup_elem"}, bpf.HashUpdate: {"htab_lru_map_update_elem", "prealloc_lru_pop"}},
	bpf.PerCPUHash:    {bpf.HashLookup: {"htab_percpu_map_lookup_elem", "__htab_map_lookup_elem"}, bpf.HashUpdate: {"htab_percpu_map_update_elem", "__htab_percpu_map_update_elem"}},
	bpf.LRUPerCPUHash: {bpf.HashLookup: {"htab_lru_percpu_map_lookup_elem", "__htab_map_lookup_elem"}, bpf.HashUpdate: {"htab_lru_percpu_map_update_elem", "__htab_lru_percpu_map_update_elem"}},
}

// hashDoc is what every HashMap benchmark's doc says about the harness.
const hashDoc = "keys walked in order, key number in the first 4 bytes; in-kernel ktime around one bpf_loop of 10000 iterations per XDP test run; BPF_F_ZERO_SEED under icount (hash-seed line)"

func hashMapBenchmarks() []*Benchmark {
	var out []*Benchmark
	for _, size := range hashKeySizes {
		h := bpf.HashBench{Op: bpf.HashBaseline, Keys: bpf.SequentialKeys, KeySize: size}
		out = append(out, &Benchmark{
			Name:     fmt.Sprintf("HashMap/op=baseline/key_size=%d", size),
			Doc:      fmt.Sprintf("key generation only (a %d-byte key built on the stack): subtract it from lookup and update; no map. %s", size, hashDoc),
			Params:   []string{"entries"},
			Requires: []Requirement{ReqBPFLoop},
			Run:      hashRun(h),
			Spec:     hashSpec(h),
			Programs: []string{h.ProgName()},
		})
	}
	opDocs := map[bpf.HashOp]string{
		bpf.HashLookup: "bpf_map_lookup_elem on a full %s map of entries %d-byte keys and 8-byte values; a miss fails the run (bpf-hashmap-lookup). ",
		bpf.HashUpdate: "bpf_map_update_elem(BPF_ANY) of existing keys in a full %s map of entries %d-byte keys: each update replaces an element with a free one (bpf-hashmap-full-update; LRU maps get 256 spare elements per CPU, as they evict before they are full); an error fails the run. ",
	}
	for _, kind := range bpf.HashKinds {
		for _, op := range []bpf.HashOp{bpf.HashLookup, bpf.HashUpdate} {
			for _, size := range hashKeySizes {
				h := bpf.HashBench{Kind: kind, Op: op, Keys: bpf.SequentialKeys, KeySize: size}
				out = append(out, &Benchmark{
					Name:      fmt.Sprintf("HashMap/map=%s/op=%s/key_size=%d", kind, op, size),
					Doc:       fmt.Sprintf(opDocs[op], kind, size) + hashDoc,
					Params:    []string{"entries"},
					Requires:  []Requirement{hashKindReqs[kind], ReqBPFLoop},
					Functions: hashFunctions[kind][op],
					Run:       hashRun(h),
					Instance:  hashInstance(h),
					Spec:      hashSpec(h),
					Programs:  []string{h.ProgName()},
				})
			}
		}
	}
	return out
}

func hashRun(h bpf.HashBench) func(*Run) error {
	return runPrepared(func(r *Run) (*progBench, func(), error) { return hashPrepare(r, h) })
}

// hashPrepare loads a HashMap benchmark's program with its map full:
// what its samples and the insight pass (hashInstance) start from.
func hashPrepare(r *Run, h bpf.HashBench) (*progBench, func(), error) {
	h, err := hashUnder(h, r.Params)
	if err != nil {
		return nil, nil, err
	}
	spec, err := h.Spec()
	if err != nil {
		return nil, nil, err
	}
	coll, err := loadCollection(r, fmt.Sprintf("%s %v program", h.Kind, h.Op), spec)
	if err != nil {
		return nil, nil, zeroSeedErr(h.ZeroSeed, err)
	}
	if m := coll.Maps[bpf.HashMapName]; m != nil {
		start := time.Now()
		how, err := fillHash(m, h.Kind, h.KeySize, h.Entries)
		if err != nil {
			coll.Close()
			return nil, nil, err
		}
		r.Info(fmt.Sprintf("filled %d entries with %s in %v", h.Entries, how, time.Since(start).Round(time.Millisecond)))
	}
	return &progBench{prog: coll.Programs[h.ProgName()], stats: coll.Maps[bpf.StatsMapName]}, coll.Close, nil
}

// hashUnder completes a HashMap benchmark's program for p: its entries,
// an LRU map's spare room, the hash seed.
func hashUnder(h bpf.HashBench, p Params) (bpf.HashBench, error) {
	h.Entries, h.Marks = p.Entries, p.windowMarks()
	if h.Kind.LRU() {
		cpus, err := ebpf.PossibleCPU()
		if err != nil {
			return h, fmt.Errorf("size LRU map: %w", err)
		}
		h.Spare = lruSparePerCPU * uint32(cpus)
	}
	h.ZeroSeed = HashSeed(p.Clock) == wire.HashSeedZero
	return h, nil
}

// hashSpec builds the collection of a HashMap benchmark under p.
func hashSpec(h bpf.HashBench) func(Params) (*ebpf.CollectionSpec, error) {
	return func(p Params) (*ebpf.CollectionSpec, error) {
		h, err := hashUnder(h, p)
		if err != nil {
			return nil, err
		}
		return h.Spec()
	}
}

// hashInstance is hashPrepare for the insight pass; Operate runs one
// sample's worth of test runs (PathTestRun).
func hashInstance(h bpf.HashBench) func(Params, func(string, ...any)) (*Instance, error) {
	return testRunInstance(h.ProgName(), func(r *Run) (*progBench, func(), error) { return hashPrepare(r, h) })
}

// testRunInstance is the insight instance of a benchmark that prepare
// loads and sets up as for its samples; Operate takes one sample's worth
// of test runs (PathTestRun).
func testRunInstance(progName string, prepare func(*Run) (*progBench, func(), error)) func(Params, func(string, ...any)) (*Instance, error) {
	return func(p Params, logf func(string, ...any)) (*Instance, error) {
		b, closeAll, err := prepare(&Run{Params: p, Logf: logf, Info: func(string) {}})
		if err != nil {
			return nil, err
		}
		return &Instance{Programs: map[string]*ebpf.Program{progName: b.prog}, Path: PathTestRun, Close: closeAll,
			Operate: func() (uint64, error) {
				s, err := b.sample(p.Rounds)
				return s.Ops, err
			}}, nil
	}
}

// fillHash inserts the keys bpf.HashKey(keySize, i) with value i for i in
// [0, n) into a hash map of the kind (a per-CPU map gets i on every CPU).
// It uses BPF_MAP_UPDATE_BATCH where the kernel has it (Linux 5.6) and
// the map is not per-CPU, and falls back to one update per element. It
// returns how it filled the map.
func fillHash(m *ebpf.Map, kind bpf.HashKind, keySize, n uint32) (string, error) {
	var berr error
	if !kind.PerCPU() {
		// A slice of fixed-size arrays, one per key, as BatchUpdate wants.
		keys := reflect.MakeSlice(reflect.SliceOf(reflect.ArrayOf(int(keySize), reflect.TypeFor[byte]())), int(n), int(n))
		values := make([]uint64, n)
		for i := range n {
			reflect.Copy(keys.Index(int(i)), reflect.ValueOf(bpf.HashKey(keySize, i)))
			values[i] = uint64(i)
		}
		count, err := m.BatchUpdate(keys.Interface(), values, nil)
		if err == nil && count == int(n) {
			return "batch update", nil
		}
		berr = err
		if berr == nil {
			berr = fmt.Errorf("inserted %d of %d", count, n)
		}
	} else {
		berr = errors.New("per-CPU values are written one element at a time")
	}
	var cpuValues []uint64
	if kind.PerCPU() {
		cpus, err := ebpf.PossibleCPU()
		if err != nil {
			return "", fmt.Errorf("fill %v map: %w", kind, err)
		}
		cpuValues = make([]uint64, cpus)
	}
	for i := range n {
		var err error
		if kind.PerCPU() {
			for c := range cpuValues {
				cpuValues[c] = uint64(i)
			}
			err = m.Update(bpf.HashKey(keySize, i), cpuValues, ebpf.UpdateAny)
		} else {
			err = m.Update(bpf.HashKey(keySize, i), uint64(i), ebpf.UpdateAny)
		}
		if err != nil {
			return "", fmt.Errorf("fill %v map: update key %d: %w", kind, i, err)
		}
	}
	return fmt.Sprintf("per-element updates (%v)", berr), nil
}

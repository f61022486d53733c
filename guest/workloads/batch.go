package workloads

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"

	"github.com/lpmbisect/lpmbisect/guest/bpf"
	"github.com/lpmbisect/lpmbisect/wire"
)

// enotsupp is the kernel's internal ENOTSUPP (524), which the batch
// syscalls return for map types without batch support.
const enotsupp = unix.Errno(524)

// unsupportedIf turns the errors old kernels give for missing map
// operations into ebpf.ErrNotSupported.
func unsupportedIf(err error) error {
	if err == nil || errors.Is(err, ebpf.ErrNotSupported) {
		return err
	}
	if errors.Is(err, enotsupp) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) {
		return fmt.Errorf("%w: %w", ebpf.ErrNotSupported, err)
	}
	return err
}

// Requirements of the MapBatch benchmarks.
var (
	// ReqBatchOps: BPF_MAP_*_BATCH on hash maps, Linux 5.6.
	ReqBatchOps = Requirement{
		Feature:   "map batch operations",
		MinKernel: "5.6",
		Probe: bpfProbe(func() error {
			m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 1})
			if err != nil {
				return err
			}
			defer m.Close()
			_, err = m.BatchUpdate([]uint32{1}, []uint64{1}, nil)
			return unsupportedIf(err)
		}),
	}
	// ReqLPMBatchOps: batch operations on LPM tries, Linux 5.13.
	ReqLPMBatchOps = Requirement{
		Feature:   "batch operations on LPM tries",
		MinKernel: "5.13",
		Probe: bpfProbe(func() error {
			m, err := ebpf.NewMap(bpf.TrieSpec(1))
			if err != nil {
				return err
			}
			defer m.Close()
			_, err = m.BatchUpdate([]bpf.LPMKey{bpf.KeyFor(32, 1)}, []uint32{1}, nil)
			return unsupportedIf(err)
		}),
	}
	// ReqHashMap: BPF_MAP_TYPE_HASH, Linux 3.19.
	ReqHashMap = Requirement{
		Feature:   "BPF_MAP_TYPE_HASH",
		MinKernel: "3.19",
		Probe:     bpfProbe(func() error { return features.HaveMapType(ebpf.Hash) }),
	}
	// ReqHashLookupAndDelete: BPF_MAP_LOOKUP_AND_DELETE_ELEM on hash
	// maps, Linux 5.14.
	ReqHashLookupAndDelete = Requirement{
		Feature:   "BPF_MAP_LOOKUP_AND_DELETE_ELEM on hash maps",
		MinKernel: "5.14",
		Probe: bpfProbe(func() error {
			m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 1})
			if err != nil {
				return err
			}
			defer m.Close()
			if err := m.Update(uint32(1), uint64(1), ebpf.UpdateAny); err != nil {
				return err
			}
			var v uint64
			return unsupportedIf(m.LookupAndDelete(uint32(1), &v))
		}),
	}
)

// Batch map operations.
const (
	batchLookup          = "lookup"
	batchLookupAndDelete = "lookup_and_delete"
	batchUpdate          = "update"
	batchDelete          = "delete"
)

// batchSizes are the batch sizes of the MapBatch benchmarks: 0 is "none"
// (one syscall per element), -1 is "all" (one batch of every element).
var batchSizes = []int{0, 10, 1000, -1}

func batchSizeName(b int) string {
	switch b {
	case 0:
		return "none"
	case -1:
		return "all"
	}
	return strconv.Itoa(b)
}

var batchOpDocs = map[string]string{
	batchLookup:          "read every element of a full map (BPF_MAP_LOOKUP_BATCH; none: BPF_MAP_LOOKUP_ELEM per key)",
	batchLookupAndDelete: "read and remove every element (BPF_MAP_LOOKUP_AND_DELETE_BATCH; none: BPF_MAP_LOOKUP_AND_DELETE_ELEM per key, hash maps 5.14)",
	batchUpdate:          "insert every element into an empty map (BPF_MAP_UPDATE_BATCH; none: BPF_MAP_UPDATE_ELEM per key)",
	batchDelete:          "remove every element of a full map (BPF_MAP_DELETE_BATCH; none: BPF_MAP_DELETE_ELEM per key)",
}

func batchBenchmarks() []*Benchmark {
	var out []*Benchmark
	for _, kind := range []string{"hash", "lpm_trie"} {
		ops := []string{batchLookup, batchLookupAndDelete, batchUpdate, batchDelete}
		if kind == "lpm_trie" {
			ops = []string{batchLookup, batchUpdate, batchDelete} // LPM tries have no lookup-and-delete
		}
		for _, op := range ops {
			for _, size := range batchSizes {
				var reqs []Requirement
				mapDoc := "a hash map (u32 keys, u64 values, preallocated; seeded as the hash-seed line says)"
				if kind == "lpm_trie" {
					reqs = append(reqs, ReqLPMTrie)
					mapDoc = "an LPM trie of /32 keys"
				}
				switch {
				case size != 0 && kind == "lpm_trie":
					reqs = append(reqs, ReqBatchOps, ReqLPMBatchOps)
				case size != 0:
					reqs = append(reqs, ReqBatchOps)
				case op == batchLookupAndDelete:
					reqs = append(reqs, ReqHashLookupAndDelete)
				}
				if len(reqs) == 0 {
					reqs = append(reqs, ReqHashMap)
				}
				out = append(out, &Benchmark{
					Name: fmt.Sprintf("MapBatch/map=%s/op=%s/batch=%s", kind, op, batchSizeName(size)),
					Doc: fmt.Sprintf("%s of %s of entries elements, %s per syscall; ns/op is per element (user-space clock, one pass per sample; resetting the map between passes is not timed)",
						batchOpDocs[op], mapDoc, map[bool]string{true: "one element", false: "batch " + batchSizeName(size)}[size == 0]),
					Params:   []string{"batch_entries"},
					Requires: reqs,
					Run:      batchRun(kind, op, size),
				})
				if kind == "lpm_trie" {
					out[len(out)-1].Instance = batchTrieInstance(op, size)
				}
			}
		}
	}
	return out
}

// batchMap is a map of n elements with its keys and values and output
// buffers, for one kind of map.
type batchMap[K, V any] struct {
	m          *ebpf.Map
	keys, kout []K
	vals, vout []V
	full       bool
}

func newBatchMap[K, V any](spec *ebpf.MapSpec, keys []K, vals []V) (*batchMap[K, V], error) {
	m, err := ebpf.NewMap(spec)
	if err != nil {
		return nil, fmt.Errorf("create %v map of %d entries: %w", spec.Type, spec.MaxEntries, err)
	}
	return &batchMap[K, V]{m: m, keys: keys, vals: vals, kout: make([]K, len(keys)), vout: make([]V, len(keys))}, nil
}

// fill inserts every element, untimed (batch if possible).
func (b *batchMap[K, V]) fill() error {
	if n, err := b.m.BatchUpdate(b.keys, b.vals, nil); err != nil || n != len(b.keys) {
		for i := range b.keys {
			if err := b.m.Update(&b.keys[i], &b.vals[i], ebpf.UpdateAny); err != nil {
				return fmt.Errorf("fill map: update element %d: %w", i, err)
			}
		}
	}
	b.full = true
	return nil
}

// empty removes every element, untimed.
func (b *batchMap[K, V]) empty() error {
	if n, err := b.m.BatchDelete(b.keys, nil); err != nil || n != len(b.keys) {
		for i := range b.keys {
			if err := b.m.Delete(&b.keys[i]); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
				return fmt.Errorf("empty map: delete element %d: %w", i, err)
			}
		}
	}
	b.full = false
	return nil
}

// pass does op on every element with batches of size (0: per element, -1:
// all) and returns the number of elements it handled.
func (b *batchMap[K, V]) pass(op string, size int) (int, error) {
	n := len(b.keys)
	if size < 0 || size > n {
		size = n
	}
	done := 0
	switch {
	case size == 0 && op == batchLookup:
		for i := range b.keys {
			if err := b.m.Lookup(&b.keys[i], &b.vout[i]); err != nil {
				return done, fmt.Errorf("lookup element %d: %w", i, err)
			}
			done++
		}
	case size == 0 && op == batchLookupAndDelete:
		for i := range b.keys {
			if err := b.m.LookupAndDelete(&b.keys[i], &b.vout[i]); err != nil {
				return done, fmt.Errorf("lookup and delete element %d: %w", i, unsupportedIf(err))
			}
			done++
		}
	case size == 0 && op == batchUpdate:
		for i := range b.keys {
			if err := b.m.Update(&b.keys[i], &b.vals[i], ebpf.UpdateAny); err != nil {
				return done, fmt.Errorf("update element %d: %w", i, err)
			}
			done++
		}
	case size == 0 && op == batchDelete:
		for i := range b.keys {
			if err := b.m.Delete(&b.keys[i]); err != nil {
				return done, fmt.Errorf("delete element %d: %w", i, err)
			}
			done++
		}
	case op == batchLookup || op == batchLookupAndDelete:
		var cursor ebpf.MapBatchCursor
		for {
			var c int
			var err error
			if op == batchLookup {
				c, err = b.m.BatchLookup(&cursor, b.kout[:size], b.vout[:size], nil)
			} else {
				c, err = b.m.BatchLookupAndDelete(&cursor, b.kout[:size], b.vout[:size], nil)
			}
			done += c
			if errors.Is(err, ebpf.ErrKeyNotExist) {
				break
			}
			if err != nil {
				return done, fmt.Errorf("batch %s: %w", op, unsupportedIf(err))
			}
		}
	case op == batchUpdate || op == batchDelete:
		for i := 0; i < n; i += size {
			j := min(i+size, n)
			var c int
			var err error
			if op == batchUpdate {
				c, err = b.m.BatchUpdate(b.keys[i:j], b.vals[i:j], nil)
			} else {
				c, err = b.m.BatchDelete(b.keys[i:j], nil)
			}
			done += c
			if err != nil {
				return done, fmt.Errorf("batch %s: %w", op, unsupportedIf(err))
			}
		}
	}
	switch op {
	case batchLookup:
	case batchUpdate:
		b.full = true
	default:
		b.full = false
	}
	return done, nil
}

// prepare puts the map in the state op needs: full, or empty for update.
func (b *batchMap[K, V]) prepare(op string) error {
	wantFull := op != batchUpdate
	if wantFull && !b.full {
		return b.fill()
	} else if !wantFull && b.full {
		return b.empty()
	}
	return nil
}

// sample prepares the map for op, then times one pass.
func (b *batchMap[K, V]) sample(op string, size int) (Sample, error) {
	if err := b.prepare(op); err != nil {
		return Sample{}, err
	}
	start := time.Now()
	done, err := b.pass(op, size)
	elapsed := time.Since(start)
	if err != nil {
		return Sample{}, err
	}
	if done != len(b.keys) {
		return Sample{}, fmt.Errorf("%s handled %d of %d elements", op, done, len(b.keys))
	}
	return Sample{Ops: uint64(done), Elapsed: uint64(elapsed.Nanoseconds())}, nil
}

// HashSeed says how the hash maps and bloom filters of the MapBatch,
// HashMap and BloomFilter benchmarks are seeded on clock c
// (wire.KeyHashSeed): wire.HashSeedZero under an instruction clock,
// wire.HashSeedRandom, the kernel's default, under a wall clock.
//
// With random seeds each boot hashes the same keys into another bucket
// layout, a real difference in the work an operation does that no clock
// hides: measured under icount on Debian 6.1 (4 boots, 100,000 elements),
// the boot medians of batch lookups differed by up to 0.37 % with random
// seeds and by 0.005 % with seed 0, while the samples within a boot
// spread by 0.2 % either way. Under a wall clock the boots' other noise
// is larger, and the kernel's default keeps the benchmark an average over
// layouts, as real maps see them.
func HashSeed(c Clock) string {
	if c == InstructionClock {
		return wire.HashSeedZero
	}
	return wire.HashSeedRandom
}

// zeroSeedErr turns the EINVAL of a map created with a fixed hash seed
// (zero) into "not supported" on a kernel without BPF_F_ZERO_SEED
// (Linux 5.0); any other error is returned as it is.
func zeroSeedErr(zero bool, err error) error {
	if zero && errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("%w: a fixed hash seed needs BPF_F_ZERO_SEED (Linux 5.0): %w", ebpf.ErrNotSupported, err)
	}
	return err
}

// batchHashSpec is the spec of a MapBatch hash map of n elements, seeded
// as HashSeed(c) says.
func batchHashSpec(n uint32, c Clock) *ebpf.MapSpec {
	spec := &ebpf.MapSpec{Name: "batch_hash", Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: n}
	if HashSeed(c) == wire.HashSeedZero {
		spec.Flags |= unix.BPF_F_ZERO_SEED
	}
	return spec
}

func batchRun(kind, op string, size int) func(*Run) error {
	return func(r *Run) error {
		n := r.Params.BatchEntries
		take := func() (Sample, error) { return Sample{}, nil }
		switch kind {
		case "hash":
			keys, vals := make([]uint32, n), make([]uint64, n)
			for i := range n {
				keys[i], vals[i] = i, uint64(i)
			}
			b, err := newBatchMap(batchHashSpec(n, r.Params.Clock), keys, vals)
			if err != nil {
				return zeroSeedErr(HashSeed(r.Params.Clock) == wire.HashSeedZero, err)
			}
			defer b.m.Close()
			take = func() (Sample, error) { return b.sample(op, size) }
		case "lpm_trie":
			b, err := newBatchTrie(n)
			if err != nil {
				return err
			}
			defer b.m.Close()
			take = func() (Sample, error) { return b.sample(op, size) }
		}
		return reportSamples(r, take)
	}
}

// newBatchTrie is the LPM trie of the MapBatch benchmarks: n /32 keys,
// empty.
func newBatchTrie(n uint32) (*batchMap[bpf.LPMKey, uint32], error) {
	vals := make([]uint32, n)
	for i := range n {
		vals[i] = i
	}
	return newBatchMap(bpf.TrieSpec(n), trieKeys(n, bpf.PrefixLen, bpf.BigEndianKeys), vals)
}

// batchTrieInstance sets up an LPM trie MapBatch benchmark for the insight
// pass: the trie in the state op needs, before counting starts; Operate
// is one pass, one sample's worth. The operations are bpf(2) map
// commands: PathSyscall. (The hash map benchmarks have no instance: their
// operations never reach the LPM trie.)
func batchTrieInstance(op string, size int) func(Params, func(string, ...any)) (*Instance, error) {
	return func(p Params, _ func(string, ...any)) (*Instance, error) {
		b, err := newBatchTrie(p.BatchEntries)
		if err != nil {
			return nil, err
		}
		if err := b.prepare(op); err != nil {
			b.m.Close()
			return nil, err
		}
		return &Instance{Path: PathSyscall, Close: func() { b.m.Close() },
			Operate: func() (uint64, error) {
				done, err := b.pass(op, size)
				return uint64(done), err
			}}, nil
	}
}

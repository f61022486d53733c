package workloads

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"

	"github.com/lpmbisect/lpmbisect/bpf"
)

// Requirements shared by the BPF benchmarks.
var (
	// ReqLPMTrie: BPF_MAP_TYPE_LPM_TRIE, Linux 4.11.
	ReqLPMTrie = Requirement{
		Feature:   "BPF_MAP_TYPE_LPM_TRIE",
		MinKernel: "4.11",
		Probe:     bpfProbe(func() error { return features.HaveMapType(ebpf.LPMTrie) }),
	}
	// ReqBPFLoop: the bpf_loop helper from an XDP program, Linux 5.17.
	// It implies BPF_PROG_TEST_RUN for XDP (4.12).
	ReqBPFLoop = Requirement{
		Feature:   "bpf_loop",
		MinKernel: "5.17",
		Probe:     bpfProbe(func() error { return features.HaveProgramHelper(ebpf.XDP, asm.FnLoop) }),
	}
)

// RemoveMemlock lifts RLIMIT_MEMLOCK, which limits BPF memory before Linux
// 5.11 (later kernels charge the memory cgroup instead). It needs
// CAP_SYS_RESOURCE to raise the hard limit.
//
// This is what cilium/ebpf's rlimit.RemoveMemlock does on old kernels, but
// that package must not be linked into the guest: its init function creates
// a BPF map, which looks for BPF tokens in /proc/self/mountinfo and caches
// the failure for the life of the process. PID 1 runs package init before it
// has mounted /proc, so every later map creation would fail.
var RemoveMemlock = sync.OnceValue(func() error {
	inf := &unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, inf); err != nil {
		return fmt.Errorf("remove memlock rlimit: %w", err)
	}
	return nil
})

// bpfProbe wraps a feature probe so that the memlock rlimit is lifted first.
// Failing to lift it is not fatal: 5.11 and later do not need it, and on
// older kernels the probe itself then fails with a hint.
func bpfProbe(probe func() error) func() error {
	return func() error {
		RemoveMemlock()
		return probe()
	}
}

func lpmTrieBenchmarks() []*Benchmark {
	return []*Benchmark{
		{
			Name: "LPMTrie/op=lookup/keys=random",
			Doc: "bpf_map_lookup_elem on an LPM trie holding the dense keys [0, entries) at /32, " +
				"keys drawn as bpf_get_prandom_u32() % entries; the per-op time includes the key " +
				"generation and the bpf_loop callback (the kernel bench's lpm-trie-lookup --random)",
			Params:   []string{"entries"},
			Requires: []Requirement{ReqLPMTrie, ReqBPFLoop},
			Run:      lpmLookup(bpf.RandomKeys),
		},
		{
			Name: "LPMTrie/op=lookup/keys=sequential",
			Doc: "bpf_map_lookup_elem on an LPM trie holding the dense keys [0, entries) at /32, " +
				"keys walked in order across runs; the per-op time includes the key generation " +
				"and the bpf_loop callback (the kernel bench's lpm-trie-lookup)",
			Params:   []string{"entries"},
			Requires: []Requirement{ReqLPMTrie, ReqBPFLoop},
			Run:      lpmLookup(bpf.SequentialKeys),
		},
	}
}

// lpmLookup returns the run function of an LPM trie lookup benchmark: load
// the program and maps, fill the trie, run once to warm up, then report
// Params.Samples samples of Params.Rounds program runs each.
func lpmLookup(keys bpf.KeyOrder) func(*Run) error {
	return func(r *Run) error {
		spec, err := bpf.LPMLookup{Entries: r.Params.Entries, Keys: keys}.Spec()
		if err != nil {
			return err
		}
		coll, err := ebpf.NewCollection(spec)
		if err != nil {
			var verr *ebpf.VerifierError
			if errors.As(err, &verr) {
				r.Logf("verifier log:\n%+v", verr)
			}
			return fmt.Errorf("load LPM lookup program: %w", err)
		}
		defer coll.Close()

		start := time.Now()
		how, err := FillTrie(coll.Maps[bpf.TrieMapName], r.Params.Entries)
		if err != nil {
			return err
		}
		r.Info(fmt.Sprintf("filled %d entries with %s in %v", r.Params.Entries, how, time.Since(start).Round(time.Millisecond)))

		b := &progBench{prog: coll.Programs[bpf.LPMLookupProgName], stats: coll.Maps[bpf.StatsMapName]}
		if _, err := b.sample(r.Params.Rounds); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		for i := 1; i <= r.Params.Samples; i++ {
			s, err := b.sample(r.Params.Rounds)
			if err != nil {
				return fmt.Errorf("sample %d: %w", i, err)
			}
			if err := r.Sample(s); err != nil {
				return err
			}
		}
		return nil
	}
}

// FillTrie inserts the keys bpf.KeyFor(bpf.PrefixLen, i) with value i for i
// in [0, n) into an LPM trie. It uses one BPF_MAP_UPDATE_BATCH call where the
// kernel supports it for LPM tries (Linux 5.13) and falls back to one update
// per element. It returns how it filled the trie.
func FillTrie(m *ebpf.Map, n uint32) (string, error) {
	keys := make([]bpf.LPMKey, n)
	values := make([]uint32, n)
	for i := range n {
		keys[i] = bpf.KeyFor(bpf.PrefixLen, i)
		values[i] = i
	}
	count, berr := m.BatchUpdate(keys, values, nil)
	if berr == nil && count == int(n) {
		return "batch update", nil
	}
	for i := range keys {
		if err := m.Update(keys[i], values[i], ebpf.UpdateAny); err != nil {
			return "", fmt.Errorf("fill LPM trie: update key %d: %w (batch update: %v)", i, err, berr)
		}
	}
	if berr == nil {
		berr = fmt.Errorf("inserted %d of %d", count, n)
	}
	return fmt.Sprintf("per-element updates (batch update: %v)", berr), nil
}

// progBench runs a program that accumulates bpf.Stats in a stats map.
type progBench struct {
	prog  *ebpf.Program
	stats *ebpf.Map
}

// sample zeroes the accumulators (keeping the sequential cursor), runs the
// program rounds times with BPF_PROG_TEST_RUN and returns what it counted.
func (b *progBench) sample(rounds int) (Sample, error) {
	var st bpf.Stats
	if err := b.stats.Lookup(uint32(0), &st); err != nil {
		return Sample{}, fmt.Errorf("read stats: %w", err)
	}
	if err := b.stats.Update(uint32(0), bpf.Stats{Cursor: st.Cursor}, ebpf.UpdateAny); err != nil {
		return Sample{}, fmt.Errorf("reset stats: %w", err)
	}
	// XDP test runs need at least an Ethernet header (14 bytes).
	ret, err := b.prog.Run(&ebpf.RunOptions{Data: make([]byte, 14), Repeat: uint32(rounds)})
	if err != nil {
		return Sample{}, fmt.Errorf("run program: %w", err)
	}
	if ret != 2 {
		return Sample{}, fmt.Errorf("program returned %d, want XDP_PASS", ret)
	}
	if err := b.stats.Lookup(uint32(0), &st); err != nil {
		return Sample{}, fmt.Errorf("read stats: %w", err)
	}
	if err := st.Check(); err != nil {
		return Sample{}, err
	}
	return Sample{Ops: st.Iterations, Elapsed: st.Nanoseconds}, nil
}

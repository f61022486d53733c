package workloads

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/cilium/ebpf"

	"github.com/lpmbisect/lpmbisect/guest/bpf"
)

// The kernel bench's own three operations as it runs them
// (tools/testing/selftests/bpf/benchs/bench_lpm_trie_map.c, Linux 6.18):
// keys bpf_get_prandom_u32() % entries stored in the host's byte order
// (bpf.HostOrderKeys, at prefix length 32), a trie filled with the same,
// and a delete whose rate includes user space refilling the trie with one
// BPF_MAP_UPDATE_ELEM syscall per key once the deletes have emptied it:
// its reviewer's remark that delete "will include user space refill time".
// They are what its published figures measure, so that a model's ratios
// can be checked against them like with like (docs/cycles.md).
func lpmSeedBenchmarks() []*Benchmark {
	seedDoc := "the kernel bench's lpm-trie-%s as it runs it: %s; keys in host byte order (on x86 the trie branches on their low bits first), trie filled likewise, prefix length 32; in-kernel ktime around one bpf_loop of 10000 iterations per XDP test run"
	bench := func(op bpf.LPMOp, keys bpf.KeyOrder, doc string) *Benchmark {
		return &Benchmark{
			Name:     "LPMTrieSeed/op=" + op.String(),
			Doc:      doc,
			Params:   []string{"entries"},
			Requires: []Requirement{ReqLPMTrie, ReqBPFLoop},
			Run:      lpmRun(op, keys, bpf.HostOrderKeys),
			Instance: lpmInstance(op, keys, bpf.HostOrderKeys),
			Spec:     lpmSpec(op, keys, bpf.HostOrderKeys),
			Programs: []string{bpf.LPMBench{Op: op, Layout: bpf.HostOrderKeys}.ProgName()},
		}
	}
	del := bench(bpf.OpDelete, bpf.SequentialKeys, fmt.Sprintf(seedDoc, "delete",
		"bpf_map_delete_elem of the keys in order until the trie is empty, then user space refills it with one bpf(BPF_MAP_UPDATE_ELEM, BPF_NOEXIST) per key, timed by the guest clock and counted with the deletes: a delete's cost includes one refill syscall"))
	del.Run = runPrepared(func(r *Run) (*refillBench, func(), error) { return seedDeletePrepare(r) })
	del.Instance = seedDeleteInstance
	return []*Benchmark{
		bench(bpf.OpLookup, bpf.RandomKeys, fmt.Sprintf(seedDoc, "lookup", "bpf_map_lookup_elem of random keys on a full trie")),
		bench(bpf.OpUpdate, bpf.RandomKeys, fmt.Sprintf(seedDoc, "update", "bpf_map_update_elem(BPF_EXIST) of random keys in a full trie")),
		del,
	}
}

// refillBench is the kernel bench's delete: its program deletes the keys
// in order (the cursor in the stats map), and once they are all deleted
// user space refills the trie, one syscall per key, inside the sample.
type refillBench struct {
	*progBench
	params Params
}

// seedDeletePrepare loads the delete program and a full trie in host
// byte order.
func seedDeletePrepare(r *Run) (*refillBench, func(), error) {
	b, closeAll, err := lpmPrepare(r, bpf.OpDelete, bpf.SequentialKeys, bpf.HostOrderKeys)
	if err != nil {
		return nil, nil, err
	}
	b.resetTrie = nil // the refill is timed: refillBench.sample does it
	return &refillBench{progBench: b, params: r.Params}, closeAll, nil
}

func seedDeleteInstance(p Params, logf func(string, ...any)) (*Instance, error) {
	b, closeAll, err := seedDeletePrepare(&Run{Params: p, Logf: logf, Info: func(string) {}})
	if err != nil {
		return nil, err
	}
	return &Instance{
		Programs: map[string]*ebpf.Program{bpf.LPMBench{Op: bpf.OpDelete, Layout: bpf.HostOrderKeys}.ProgName(): b.prog},
		Path:     PathTestRun,
		// One cycle of the kernel bench: every key deleted, then the
		// refill (the refill's syscalls are most of it: a cycle of 10000
		// keys is 10000 deletes and 10000 syscalls).
		Operate: func() (uint64, error) {
			s, err := b.sample(int((b.trie.entries + bpf.LoopIterations - 1) / bpf.LoopIterations))
			return s.Ops, err
		},
		Close: closeAll,
	}, nil
}

// sample runs the delete program rounds times; after a run that deleted
// the last key it refills the trie from user space, one
// BPF_MAP_UPDATE_ELEM per key, and rewinds the cursor. The refill's guest
// clock (instructions under icount, its user space included) adds to the
// deletes' in-kernel time: a sample is the deletes and their refills.
func (b *refillBench) sample(rounds int) (Sample, error) {
	var st bpf.Stats
	if err := b.stats.Lookup(uint32(0), &st); err != nil {
		return Sample{}, fmt.Errorf("read stats: %w", err)
	}
	if err := b.setStats(bpf.Stats{Cursor: st.Cursor}); err != nil {
		return Sample{}, err
	}
	var refill time.Duration
	for range rounds {
		if _, err := b.run(1); err != nil {
			return Sample{}, err
		}
		if err := b.stats.Lookup(uint32(0), &st); err != nil {
			return Sample{}, fmt.Errorf("read stats: %w", err)
		}
		if st.Cursor < uint64(b.trie.entries) {
			continue
		}
		start := time.Now()
		if err := b.params.timed(b.refill); err != nil {
			return Sample{}, err
		}
		refill += time.Since(start)
		st.Cursor = 0
		if err := b.setStats(st); err != nil {
			return Sample{}, err
		}
	}
	if err := b.stats.Lookup(uint32(0), &st); err != nil {
		return Sample{}, fmt.Errorf("read stats: %w", err)
	}
	if err := st.Check(); err != nil {
		return Sample{}, err
	}
	return Sample{Ops: st.Iterations, Elapsed: st.Nanoseconds + uint64(refill.Nanoseconds())}, nil
}

// refill inserts every key of the trie again as the kernel bench's
// fill_map does: one BPF_MAP_UPDATE_ELEM with BPF_NOEXIST per key, value 1.
// Key and value are byte slices reused from one syscall to the next,
// which cilium/ebpf passes to the kernel as they are: user space costs
// little beside the syscall, as libbpf's bpf_map_update_elem does (a
// struct key would go through binary encoding at each call, several
// times the instructions; docs/cycles.md).
func (b *refillBench) refill() error {
	key, value := make([]byte, 8), make([]byte, 4)
	binary.NativeEndian.PutUint32(key, bpf.PrefixLen)
	binary.NativeEndian.PutUint32(value, 1)
	for i := range b.trie.entries {
		binary.NativeEndian.PutUint32(key[4:], i)
		if err := b.trie.m.Update(key, value, ebpf.UpdateNoExist); err != nil {
			return fmt.Errorf("refill LPM trie: update key %d: %w", i, err)
		}
	}
	return nil
}

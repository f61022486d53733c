package workloads

import (
	"fmt"
	"time"

	"github.com/cilium/ebpf"

	"github.com/lpmbisect/lpmbisect/guest/bpf"
)

// unrolledBenchmarks are lookups and updates for kernels without bpf_loop
// (before 5.17): a straight line of bpf.UnrolledOps operations per XDP run.
func unrolledBenchmarks() []*Benchmark {
	var out []*Benchmark
	for _, op := range []bpf.LPMOp{bpf.OpLookup, bpf.OpUpdate} {
		for _, keys := range []bpf.KeyOrder{bpf.RandomKeys, bpf.SequentialKeys} {
			out = append(out, &Benchmark{
				Name: "LPMTrieUnrolled/op=" + op.String() + "/keys=" + keys.String(),
				Doc: fmt.Sprintf("like LPMTrie/op=%s/keys=%s without bpf_loop, for kernels before 5.17: %d unrolled operations between two ktime reads per XDP test run (no callback cost: compare with LPMTrieUnrolled only)",
					op, keys, bpf.UnrolledOps),
				Params:   []string{"entries", "prefix_len"},
				Requires: []Requirement{ReqLPMTrie, ReqXDPTestRun},
				Run:      unrolledRun(op, keys),
				Instance: unrolledInstance(op, keys),
				Spec:     unrolledSpec(op, keys),
				Programs: []string{bpf.LPMUnrolled{Op: op}.ProgName()},
			})
		}
	}
	return out
}

// unrolledRuns is the number of program runs per sample of an unrolled
// benchmark per round: each run does bpf.UnrolledOps operations, so 80 runs
// make about as many operations as one bpf_loop run.
const unrolledRuns = bpf.LoopIterations / bpf.UnrolledOps

func unrolledRun(op bpf.LPMOp, keys bpf.KeyOrder) func(*Run) error {
	return func(r *Run) error {
		b, closeAll, err := unrolledPrepare(r, op, keys)
		if err != nil {
			return err
		}
		defer closeAll()
		runs := r.Params.Rounds * unrolledRuns
		if _, err := b.sample(runs); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		return reportSamples(r, func() (Sample, error) { return b.sample(runs) })
	}
}

// unrolledPrepare loads an unrolled benchmark's program and fills its
// trie: what its samples and the insight pass (unrolledInstance) start
// from. closeAll releases the collection.
func unrolledPrepare(r *Run, op bpf.LPMOp, keys bpf.KeyOrder) (b *progBench, closeAll func(), err error) {
	p := r.Params
	spec, err := unrolledSpec(op, keys)(p)
	if err != nil {
		return nil, nil, err
	}
	coll, err := loadCollection(r, "unrolled LPM "+op.String()+" program", spec)
	if err != nil {
		return nil, nil, err
	}
	t := &trie{m: coll.Maps[bpf.TrieMapName], entries: p.Entries, prefixLen: p.PrefixLen}
	start := time.Now()
	how, err := t.fill()
	if err != nil {
		coll.Close()
		return nil, nil, err
	}
	r.Info(fmt.Sprintf("filled %d entries with %s in %v", p.Entries, how, time.Since(start).Round(time.Millisecond)))
	return &progBench{prog: coll.Programs[bpf.LPMUnrolled{Op: op}.ProgName()], stats: coll.Maps[bpf.StatsMapName], trie: t}, coll.Close, nil
}

// unrolledSpec builds the collection of an unrolled benchmark under p.
func unrolledSpec(op bpf.LPMOp, keys bpf.KeyOrder) func(Params) (*ebpf.CollectionSpec, error) {
	return func(p Params) (*ebpf.CollectionSpec, error) {
		return bpf.LPMUnrolled{Op: op, Keys: keys, Entries: p.Entries, PrefixLen: p.PrefixLen, Marks: p.windowMarks()}.Spec()
	}
}

// unrolledInstance is unrolledPrepare for the insight pass; Operate runs
// one sample's worth of test runs (PathTestRun).
func unrolledInstance(op bpf.LPMOp, keys bpf.KeyOrder) func(Params, func(string, ...any)) (*Instance, error) {
	return func(p Params, logf func(string, ...any)) (*Instance, error) {
		b, closeAll, err := unrolledPrepare(&Run{Params: p, Logf: logf, Info: func(string) {}}, op, keys)
		if err != nil {
			return nil, err
		}
		u := bpf.LPMUnrolled{Op: op}
		return &Instance{Programs: map[string]*ebpf.Program{u.ProgName(): b.prog}, Path: PathTestRun, Close: closeAll,
			Operate: func() (uint64, error) {
				s, err := b.sample(p.Rounds * unrolledRuns)
				return s.Ops, err
			}}, nil
	}
}

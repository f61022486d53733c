package workloads

import (
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/lpmbisect/lpmbisect/guest/bpf"
)

// branchBenchmarks are the controls of the memory pass's branch model
// (docs/cycles.md): a bpf_loop whose callback takes one conditional branch
// in a known pattern, JITed to a real x86 branch inside the plugin's
// marked window. Their cond-mispred/op is what the model predicts: about 0
// for a branch always taken and, once warm, for one that alternates, and
// about half for one that follows bpf_get_prandom_u32(). Their insn/op is
// the harness and the branch, nothing of a map.
func branchBenchmarks() []*Benchmark {
	docs := map[bpf.BranchPattern]string{
		bpf.BranchTaken:       "taken at every iteration (a value read from the stats map, which the verifier cannot fold)",
		bpf.BranchAlternating: "taken at every other iteration (the loop index's low bit)",
		bpf.BranchRandom:      "taken when bpf_get_prandom_u32()'s low bit is set",
	}
	var out []*Benchmark
	for _, pat := range []bpf.BranchPattern{bpf.BranchTaken, bpf.BranchAlternating, bpf.BranchRandom} {
		b := bpf.BranchBench{Pattern: pat}
		out = append(out, &Benchmark{
			Name:     "BranchModel/pattern=" + pat.String(),
			Doc:      fmt.Sprintf("a control of the memory pass's branch model: one conditional branch per bpf_loop iteration, %s; no map; in-kernel ktime around one bpf_loop of 10000 iterations per XDP test run", docs[pat]),
			Requires: []Requirement{ReqBPFLoop},
			Run:      runPrepared(func(r *Run) (*progBench, func(), error) { return branchPrepare(r, b) }),
			Instance: testRunInstance(b.ProgName(), func(r *Run) (*progBench, func(), error) { return branchPrepare(r, b) }),
			Spec:     func(p Params) (*ebpf.CollectionSpec, error) { b.Marks = p.windowMarks(); return b.Spec() },
			Programs: []string{b.ProgName()},
		})
	}
	return out
}

// branchPrepare loads a BranchModel benchmark's program.
func branchPrepare(r *Run, b bpf.BranchBench) (*progBench, func(), error) {
	b.Marks = r.Params.windowMarks()
	spec, err := b.Spec()
	if err != nil {
		return nil, nil, err
	}
	coll, err := loadCollection(r, "branch "+b.Pattern.String()+" program", spec)
	if err != nil {
		return nil, nil, err
	}
	return &progBench{prog: coll.Programs[b.ProgName()], stats: coll.Maps[bpf.StatsMapName]}, coll.Close, nil
}

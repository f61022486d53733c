package report

import (
	"github.com/lpmbisect/lpmbisect/host/insight"
)

// profileDiff is insightDiff with the profiles of a random-key lookup on
// 1000 entries as Debian 6.1.0-57 (A) and 6.12.117 (B) gave them under
// icount (the top functions of one boot each, rounded to the sample).
func profileDiff() *insight.Diff {
	const bench = "LPMTrie/op=lookup/keys=random/entries=1000"
	profile := func(samples uint64, perOp float64, fns []insight.FunctionShare, edges []insight.CallEdge) []insight.Profile {
		var total uint64
		for _, f := range fns {
			total += f.Samples
		}
		for i := range fns {
			fns[i].Share = float64(fns[i].Samples) / float64(total)
		}
		for i := range edges {
			edges[i].Share = float64(edges[i].Samples) / float64(total)
		}
		return []insight.Profile{{Benchmark: bench, Event: "cpu-clock", Weight: "instructions", Period: 20011,
			Samples: samples, Ops: 200000, PerOp: perOp, Functions: fns, Edges: edges}}
	}
	d := insightDiff()
	d.A.ProfileSummary = &insight.ProfileSummary{Event: "cpu-clock", Weight: "instructions", Period: 20011, Cost: 289921858,
		Limits: "perf_event_max_sample_rate 199892, perf_cpu_time_max_percent 0"}
	d.A.Profiles = profile(9276, 928.3, []insight.FunctionShare{
		{Function: "longest_prefix_match.isra.0", Samples: 5280}, {Function: "trie_lookup_elem", Samples: 3072},
		{Function: "prandom_u32_state", Samples: 436}, {Function: "bpf_prog_lpm_lookup_cb", Samples: 274},
		{Function: "bpf_prog_lpm_lookup", Samples: 101}, {Function: "bpf_user_rnd_u32", Samples: 91}, {Function: "[user]", Samples: 3},
	}, []insight.CallEdge{
		{Caller: "trie_lookup_elem", Callee: "longest_prefix_match.isra.0", Samples: 5280},
		{Caller: "bpf_prog_lpm_lookup_cb", Callee: "trie_lookup_elem", Samples: 3072},
	})
	d.B.ProfileSummary = &insight.ProfileSummary{Event: "cpu-clock", Weight: "instructions", Period: 20011, Cost: 317725750,
		Limits: "perf_event_max_sample_rate 199892, perf_cpu_time_max_percent 0"}
	d.B.Profiles = profile(9725, 778.6, []insight.FunctionShare{
		{Function: "trie_lookup_elem", Samples: 8220}, {Function: "prandom_u32_state", Samples: 805},
		{Function: "bpf_prog_lpm_lookup_cb", Samples: 477}, {Function: "bpf_prog_lpm_lookup", Samples: 96},
		{Function: "bpf_user_rnd_u32", Samples: 85}, {Function: "[user]", Samples: 1},
	}, []insight.CallEdge{
		{Caller: "bpf_prog_lpm_lookup_cb", Callee: "trie_lookup_elem", Samples: 8220},
	})
	d.Profiles = insight.Compare(&insight.Side{Profiles: d.A.Profiles}, &insight.Side{Profiles: d.B.Profiles}, insight.Options{}).Profiles
	d.AttributeTimed(func(b string, side int) (float64, string, bool) {
		return [2]float64{777.38, 650.61}[side], "insn/op", b == bench
	})
	return d
}

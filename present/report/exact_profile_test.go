package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// exactProfileDiff is exact profiles of a 6.1 → 6.12 random lookup in
// the plugin's counts, with SRSO's return thunk on every return (the
// Zen 2 identity's mitigation), and a retpoline entered by interrupts.
func exactProfileDiff() *insight.Diff {
	const bench = "LPMTrie/op=lookup/keys=random/entries=10000"
	const ops = 50000
	exact := func(insns uint64, fns []insight.FunctionShare, edges []insight.CallEdge, flow insight.Profile) insight.Profile {
		for i := range fns {
			fns[i].Share = float64(fns[i].Insns) / float64(insns)
		}
		p := flow
		p.Benchmark, p.Exact, p.Event, p.Weight, p.Ops, p.Insns, p.PerOp = bench, true, insight.EventExact, "instructions", ops, insns, float64(insns)/ops
		p.Functions, p.Edges = fns, edges
		return p
	}
	d := insightDiff()
	d.A.ProfileSummary = &insight.ProfileSummary{Exact: 1, ExactCost: 336035120}
	d.A.Profiles = []insight.Profile{exact(50207950, []insight.FunctionShare{
		{Function: "longest_prefix_match.isra.0", Insns: 29265000, Entries: 731500},
		{Function: "trie_lookup_elem", Insns: 16645000, Entries: 50000},
		{Function: "srso_return_thunk", Insns: 933000, Entries: 933000},
		{Function: "srso_safe_ret", Insns: 1866000, Entries: 933000},
		{Function: "bpf_prog_lpm_lookup_cb", Insns: 1350000, Entries: 50000},
		{Function: "__x86_indirect_thunk_array", Insns: 300, Entries: 150},
	}, []insight.CallEdge{
		{Caller: "trie_lookup_elem", Callee: "longest_prefix_match.isra.0", Calls: 731500},
		{Caller: "bpf_prog_lpm_lookup_cb", Callee: "trie_lookup_elem", Calls: 50000},
	}, insight.Profile{Special: map[string]uint64{"verw": 0, "lfence": 12, "wrmsr": 0},
		Flow: &vmrunner.FlowCounts{Call: 933000, Ret: 933000, Jcc: 4594000, Taken: 2984500, Diverted: 470}})}
	d.B.ProfileSummary = &insight.ProfileSummary{Exact: 1, ExactCost: 304012050}
	d.B.Profiles = []insight.Profile{exact(41474500, []insight.FunctionShare{
		{Function: "trie_lookup_elem", Insns: 36995000, Entries: 50000},
		{Function: "srso_return_thunk", Insns: 201000, Entries: 201000},
		{Function: "srso_safe_ret", Insns: 402000, Entries: 201000},
		{Function: "bpf_prog_lpm_lookup_cb", Insns: 1450000, Entries: 50000},
	}, []insight.CallEdge{
		{Caller: "bpf_prog_lpm_lookup_cb", Callee: "trie_lookup_elem", Calls: 50000},
	}, insight.Profile{Special: map[string]uint64{"verw": 0, "lfence": 10, "wrmsr": 0},
		Flow: &vmrunner.FlowCounts{Call: 201000, Ret: 201000, Jcc: 4592000, Taken: 2296000, Diverted: 410}})}
	d.Profiles = insight.Compare(&insight.Side{Profiles: d.A.Profiles}, &insight.Side{Profiles: d.B.Profiles}, insight.Options{}).Profiles
	return d
}

// The report puts the mitigation code per operation beside the verdict of
// a DIFFERENT benchmark with an exact profile, in every format.
func TestHeadlineNamesMitigationCode(t *testing.T) {
	const want = "18.66 return thunks per op → 4.02 (srso_return_thunk) (exact)"
	in := exactProfileDiff()
	if got := in.Profiles[0].MitigationLine(insight.HeadlineMitigationMin); got != want {
		t.Fatalf("MitigationLine = %q; want %q", got, want)
	}
	rep := &compare.Report{Alpha: 0.05, MinEffect: 0.01, Confidence: 0.95,
		A: compare.SideInfo{Name: "A", Kernel: "6.1.0-57-cloud-amd64"}, B: compare.SideInfo{Name: "B", Kernel: "6.12.117+deb12-cloud-amd64"},
		Rows: []compare.Row{{Benchmark: "LPMTrie/op=lookup/keys=random/entries=10000", Unit: "insn/op", Verdict: compare.Different, DeltaPct: -17.4,
			A: compare.Summary{Boots: 2, Center: 1004.2}, B: compare.Summary{Boots: 2, Center: 829.9}}}}
	for _, f := range []Format{FormatText, FormatMarkdown, FormatJSON, FormatHTML} {
		var b bytes.Buffer
		if err := Write(&b, f, rep, view.Meta{Insight: in}); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !strings.Contains(b.String(), "18.66 return thunks per op → 4.02") {
			t.Errorf("%s report: no %q beside the verdict", f, want)
		}
	}
}

// A sampled profile that lost most of its samples says so in its lines.
func TestUnreliableProfileSaysSo(t *testing.T) {
	a := insight.Profile{Benchmark: "b", Event: "cpu-clock", Weight: "instructions", Samples: 216, Lost: 43305, Ops: 1000, PerOp: 800,
		Unreliable: "unreliable: 43305 of 43521 samples due were lost", Functions: []insight.FunctionShare{{Function: "trie_lookup_elem", Samples: 216, Share: 1}}}
	b := a
	b.Lost, b.Unreliable = 0, ""
	d := insight.Compare(&insight.Side{Profiles: []insight.Profile{a}}, &insight.Side{Profiles: []insight.Profile{b}}, insight.Options{})
	lines := strings.Join(profileLines(&d.Profiles[0]), "\n")
	if !strings.Contains(lines, "A is unreliable: 43305 of 43521") || strings.Contains(lines, "B is unreliable") {
		t.Errorf("profile lines:\n%s\nwant A, and A alone, said unreliable", lines)
	}
}

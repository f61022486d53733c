package main

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/present/report"
	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
)

// TestExactProfileDebian61To612 compares Debian 6.1 with 6.12 under icount
// with the memory plugin, one boot a side, and checks the exact profile
// of the random lookup: it replaced the sampled one on both sides; its
// instructions per operation are the memory pass's; 6.1's
// trie_lookup_elem calls longest_prefix_match.isra.0 about 11 times per
// lookup of a 1000-entry trie (the trie's depth; the kprobe count of
// docs/insight.md is 10.98) and 6.12's never, and each is entered once
// per lookup; and the default CPU model's mitigation code, ITS's return
// thunk, is named per operation on both sides, in the why-block and
// beside the verdict.
func TestExactProfileDebian61To612(t *testing.T) {
	bootsInParallel(t)
	args := vmArgs(t)
	plugin := memoryPlugin(t)
	a, b := testkernels.Deb(t, testkernels.Debian61), testkernels.Deb(t, testkernels.Debian612)
	const bench = "LPMTrie/op=lookup/keys=random/entries=1000"
	doc := pluginCompare(t, append([]string{"--no-controls", "--bench", "LPMTrie/op=lookup/keys=random", "--memory-plugin", plugin}, args...), a, b)
	t.Log(strings.Join(doc.Insight.ProfileLines, "\n"))
	var p *insight.ProfileDiff
	for i := range doc.Insight.Profiles {
		if doc.Insight.Profiles[i].Benchmark == bench {
			p = &doc.Insight.Profiles[i]
		}
	}
	if p == nil || !p.Exact() {
		t.Fatalf("profile of %s: %+v; want an exact one on both sides", bench, p)
	}
	for side, s := range []*report.InsightSide{&doc.Insight.A, &doc.Insight.B} {
		if s.ProfileSummary == nil || s.ProfileSummary.Exact != 1 || len(s.Profiles) != 1 {
			t.Errorf("side %d: profile summary %+v, %d profiles; want the one benchmark profiled exactly, none sampled", side, s.ProfileSummary, len(s.Profiles))
		}
	}
	for _, m := range doc.Insight.Memory {
		for _, r := range m.Rows {
			if m.Benchmark == bench && r.Metric == "insn/op" && (math.Abs(r.A-p.PerOpA) > 1e-6 || math.Abs(r.B-p.PerOpB) > 1e-6) {
				t.Errorf("exact profile %.3f → %.3f insn/op; the memory pass's %.3f → %.3f: want the same count", p.PerOpA, p.PerOpB, r.A, r.B)
			}
		}
	}
	row := func(fn string) insight.ProfileRow {
		for _, r := range p.Rows {
			if r.Function == fn {
				return r
			}
		}
		t.Errorf("no row of %s in %+v", fn, p.Rows)
		return insight.ProfileRow{}
	}
	if r := row("longest_prefix_match.isra.0"); r.EntriesA < 10 || r.EntriesA > 12 || r.EntriesB != 0 || r.PerOpB != 0 {
		t.Errorf("longest_prefix_match.isra.0: %.2f → %.2f entries per op, %.1f → %.1f insn/op; want about 11 → 0", r.EntriesA, r.EntriesB, r.PerOpA, r.PerOpB)
	}
	if r := row("trie_lookup_elem"); math.Abs(r.EntriesA-1) > 0.001 || math.Abs(r.EntriesB-1) > 0.001 {
		t.Errorf("trie_lookup_elem: %.4f → %.4f entries per op; want 1 → 1", r.EntriesA, r.EntriesB)
	}
	i := slices.IndexFunc(p.Edges, func(e insight.EdgeRow) bool {
		return e.Caller == "trie_lookup_elem" && e.Callee == "longest_prefix_match.isra.0"
	})
	if i < 0 || math.Abs(p.Edges[i].CallsA-row("longest_prefix_match.isra.0").EntriesA) > 0.01 || p.Edges[i].CallsB != 0 {
		t.Errorf("edges %+v; want trie_lookup_elem → longest_prefix_match.isra.0 as often as the callee is entered on A, never on B", p.Edges)
	}
	j := slices.IndexFunc(p.Mitigations, func(m insight.MitigationRow) bool { return m.Kind == insight.ReturnThunks })
	if j < 0 || p.Mitigations[j].A <= 0 || p.Mitigations[j].B <= 0 || !slices.Contains(p.Mitigations[j].SymbolsB, "its_return_thunk") {
		t.Errorf("mitigations %+v; want ITS's return thunk per op on both sides (the default CPU model)", p.Mitigations)
	}
	if !slices.ContainsFunc(doc.Headlines, func(h string) bool { return strings.HasPrefix(h, bench) && strings.Contains(h, "return thunks per op") }) {
		t.Errorf("headlines %q; want the return thunks per op beside %s's verdict", doc.Headlines, bench)
	}
}

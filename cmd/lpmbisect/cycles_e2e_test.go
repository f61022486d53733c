package main

import (
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/present/report"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
)

// memoryRows are the memory rows of each benchmark of a compare's JSON
// document, by benchmark and metric.
func memoryRows(doc report.Document) map[string]map[string]insight.MemoryRow {
	out := map[string]map[string]insight.MemoryRow{}
	for _, m := range doc.Insight.Memory {
		out[m.Benchmark] = map[string]insight.MemoryRow{}
		for _, r := range m.Rows {
			out[m.Benchmark][r.Metric] = r
		}
	}
	return out
}

// TestCycleModel compares Debian 6.1 with 6.12 under icount on the zen2
// CPU profile, whose kernels return through SRSO's Safe RET thunk, and on
// the default model, whose do not, with the memory pass's cycle model
// (docs/cycles.md), and checks what it must show:
//
//   - the branch model on BranchModel's controls: a branch always taken
//     and one that alternates are predicted (under 0.01 mispredictions an
//     iteration), a random one half the time;
//   - under Safe RET every return of a lookup through srso_return_thunk
//     mispredicts (as many as the exact profile's return thunks), and
//     6.12's inlined longest_prefix_match() avoids one a level of the trie
//     (about 11 with these 1000 entries, 14.6 with 10000); on the default
//     model, whose return thunk returns plainly, returns are predicted;
//   - a delete leaves work for later (kfree_rcu of its node: the deferred
//     work pass counts its batch's frees), a lookup none;
//   - the kernel bench's delete (LPMTrieSeed) counts its refill by
//     syscalls, user space included, and says so;
//   - est-cycles/op is a row of the compare table, said there to be a
//     model's estimate, and the lookup's is DIFFERENT (fewer cycles on
//     6.12);
//   - with --no-cycles the pass has none of it: the plugin's own default
//     caches, no branch model, six rows as before the cycle model.
func TestCycleModel(t *testing.T) {
	bootsInParallel(t)
	args := vmArgs(t)
	plugin := memoryPlugin(t)
	a, b := testkernels.Deb(t, testkernels.Debian61), testkernels.Deb(t, testkernels.Debian612)
	const lookup, del, seedDel = "LPMTrie/op=lookup/keys=random/entries=1000", "LPMTrie/op=delete/keys=sequential/entries=1000", "LPMTrieSeed/op=delete/entries=1000"
	zen2 := pluginCompare(t, append([]string{"--no-profile", "--cpu-profile", "zen2", "--memory-plugin", plugin,
		"--bench", "LPMTrie/op=(lookup/keys=random|delete)|BranchModel|LPMTrieSeed/op=delete"}, args...), a, b)
	t.Log(strings.Join(zen2.Insight.MemoryLines, "\n"))
	rows := memoryRows(zen2)
	for pattern, want := range map[string][2]float64{"taken": {0, 0.01}, "alternating": {0, 0.01}, "random": {0.45, 0.55}} {
		r, ok := rows["BranchModel/pattern="+pattern][insight.MetricCondMispred]
		for side, v := range []float64{r.A, r.B} {
			if !ok || v < want[0] || v > want[1] {
				t.Errorf("BranchModel/pattern=%s, side %d: %.4f conditional mispredictions an iteration; want %g to %g", pattern, side, v, want[0], want[1])
			}
		}
	}
	// Every return goes through srso_return_thunk (the exact profile's
	// return thunks per operation), and every one mispredicts.
	var thunks *insight.MitigationRow
	for _, p := range zen2.Insight.Profiles {
		for i, m := range p.Mitigations {
			if p.Benchmark == lookup && m.Kind == insight.ReturnThunks {
				thunks = &p.Mitigations[i]
			}
		}
	}
	ret := rows[lookup][insight.MetricRetMispred]
	switch {
	case thunks == nil:
		t.Errorf("zen2 lookup: no return thunks in the exact profile's mitigations")
	case ret.A < 0.99*thunks.A || ret.B < 0.99*thunks.B || ret.A-ret.B < 0.99*(thunks.A-thunks.B) || thunks.A-thunks.B < 5 || ret.Verdict != compare.Different:
		t.Errorf("zen2 lookup: %.3f → %.3f mispredicted returns (%s), %.3f → %.3f return thunks; want every return through the thunk mispredicted, and 6.12's inlining to avoid one a level of the trie, DIFFERENT",
			ret.A, ret.B, ret.Verdict, thunks.A, thunks.B)
	}
	if d := rows[del][insight.MetricDeferredInsn]; d.A < 50 || d.B < 50 {
		t.Errorf("delete: %.1f → %.1f deferred instructions an operation; want its kfree_rcu frees counted (> 50)", d.A, d.B)
	}
	// The kernel bench's delete counts its refill, one syscall per key,
	// user space included: several times a delete alone, with the wide
	// bounds of a window that holds user space.
	if sd, d := rows[seedDel]["insn/op"], rows[del]["insn/op"]; sd.B < 3*d.B || sd.A < 3*d.A {
		t.Errorf("the kernel bench's delete: %.1f → %.1f insn/op counted, a delete alone %.1f → %.1f; want the refill's syscall in it (over 3 times)", sd.A, sd.B, d.A, d.B)
	}
	for _, m := range zen2.Insight.Memory {
		if m.Benchmark == seedDel && (m.A == nil || m.B == nil || !m.A.UserSpace || !m.B.UserSpace) {
			t.Errorf("the kernel bench's delete: %+v; want its counts marked as holding user space", m)
		}
	}
	if d := rows[lookup][insight.MetricDeferredInsn]; d.A > 10 || d.B > 10 {
		t.Errorf("lookup: %.1f → %.1f deferred instructions an operation; want next to none (< 10)", d.A, d.B)
	}
	if est := rows[lookup][insight.MetricEstCycles]; est.B >= est.A || est.Verdict != compare.Different {
		t.Errorf("zen2 lookup: est-cycles/op %.1f → %.1f (%s); want fewer on 6.12, DIFFERENT", est.A, est.B, est.Verdict)
	}
	tabled := false
	for _, r := range zen2.Rows {
		if r.Benchmark == lookup && r.Unit == insight.MetricEstCycles {
			tabled = strings.Contains(strings.Join(r.Notes, " "), "not a measurement")
		}
	}
	if !tabled {
		t.Errorf("no est-cycles/op row of %s in the compare table saying it is a model", lookup)
	}

	def := pluginCompare(t, append([]string{"--no-profile", "--memory-plugin", plugin, "--bench", "LPMTrie/op=lookup/keys=random"}, args...), a, b)
	if r := memoryRows(def)[lookup][insight.MetricRetMispred]; r.A > 0.1 || r.B > 0.1 {
		t.Errorf("default model lookup: %.3f → %.3f mispredicted returns; want returns predicted (< 0.1 a lookup)\n%s", r.A, r.B, strings.Join(def.Insight.MemoryLines, "\n"))
	}

	off := pluginCompare(t, append([]string{"--no-profile", "--no-cycles", "--memory-plugin", plugin, "--bench", "LPMTrie/op=lookup/keys=random"}, args...), b, b)
	m := memoryRows(off)[lookup]
	if _, has := m[insight.MetricEstCycles]; has || len(m) != 6 || strings.Contains(off.Insight.A.MemorySummary.Model, "bpred") {
		t.Errorf("--no-cycles: rows %v, model %q; want the six rows of the pass alone, no branch model", m, off.Insight.A.MemorySummary.Model)
	}
}

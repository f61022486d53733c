package insight

import (
	"math"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/wire"
)

// exactSide is a side with kallsyms symbols at run-time addresses (no
// image: no KASLR offset to take out) and one benchmark's plugin counts:
// 100 operations, each a call of trie_lookup_elem from the BPF program,
// calls times longest_prefix_match.isra.0 from it, and a return through
// its_return_thunk per call made.
func exactSide(t *testing.T, calls uint64, thunk string, sampled *wire.ProfileDoc) *Side {
	t.Helper()
	kallsyms := "ffffffff81000000 T _text\n" +
		"ffffffff81000100 T trie_lookup_elem\n" +
		"ffffffff81000400 t longest_prefix_match.isra.0\n" +
		"ffffffff81000500 T " + thunk + "\n" +
		"ffffffff81000600 T _etext\n"
	side := Load(Input{Kallsyms: []byte(kallsyms)}, Options{})
	if side.Symbols == nil {
		t.Fatalf("Load: %s", side.Status)
	}
	const ops = 100
	execs := []vmrunner.PCCount{
		{PC: 0xffffffffc0001000, Count: ops}, // the program's first instruction
		{PC: 0xffffffffc0001010, Count: 7 * ops},
		{PC: 0xffffffff81000100, Count: ops}, // trie_lookup_elem's entry
		{PC: 0xffffffff81000110, Count: 99 * ops},
		{PC: vmrunner.PCOverflow, Count: 3},
	}
	segCalls := []vmrunner.CallSite{{Site: 0xffffffffc0001010, Target: 0xffffffff81000100, Count: ops}}
	if calls > 0 {
		execs = append(execs,
			vmrunner.PCCount{PC: 0xffffffff81000400, Count: calls * ops},
			vmrunner.PCCount{PC: 0xffffffff81000404, Count: 9 * calls * ops},
			vmrunner.PCCount{PC: 0xffffffff81000500, Count: calls * ops}, // the thunk, jumped to
		)
		segCalls = append(segCalls, vmrunner.CallSite{Site: 0xffffffff81000120, Target: 0xffffffff81000400, Count: calls * ops})
	}
	var total uint64
	for _, e := range execs {
		total += e.Count
	}
	side.AddProfile(sampled)
	side.AddMemory(Input{
		Memory: &wire.MemoryDoc{Cost: 3e8, Text: 0xffffffff81000000, Benchmarks: []wire.BenchMemory{{
			Benchmark: "LPMTrie/op=lookup", Segment: 1, Ops: ops,
			Programs: []wire.ProfileSymbol{{Addr: 0xffffffffc0001000, Size: 0x40, Name: "bpf_prog_lpm_lookup_cb", Module: "bpf"}},
		}}},
		MemCounts: &vmrunner.MemCounts{Version: 2, Model: "l1d 49152 12", Complete: true, Segments: []vmrunner.MemSegment{{
			Number: 1, Windows: 1, Insns: total, Execs: execs, Calls: segCalls,
			Flow:    &vmrunner.FlowCounts{Call: (1 + calls) * ops, Ret: (1 + calls) * ops},
			Special: map[string]uint64{"verw": 0, "lfence": 0, "wrmsr": 0},
		}}},
	})
	return side
}

// TestExactProfile names the plugin's counts: instructions per function,
// entries as executions of a function's first instruction (a jump to a
// thunk included), calls by caller → callee, BPF programs by the guest's
// names; and the exact profile takes the place of the sampled one.
func TestExactProfile(t *testing.T) {
	sampled := &wire.ProfileDoc{Event: wire.EventCPUClock, Weight: "instructions", Period: 20011, Text: 0xffffffff81000000, Cost: 5e8,
		Benchmarks: []wire.BenchProfile{{Benchmark: "LPMTrie/op=lookup", Ops: 1000, Count: 1e6, Samples: 50,
			Sites: []wire.ProfileSite{{IP: 0xffffffff81000110, Samples: 50}}}}}
	side := exactSide(t, 14, "its_return_thunk", sampled)
	if len(side.Profiles) != 1 || !side.Profiles[0].Exact || side.ProfileSummary.Exact != 1 || side.ProfileSummary.ExactCost != 3e8 {
		t.Fatalf("profiles %+v, summary %+v; want the exact profile in place of the sampled one", side.Profiles, side.ProfileSummary)
	}
	p := side.Profiles[0]
	want := map[string][2]uint64{ // instructions, entries
		"longest_prefix_match.isra.0": {1400 + 12600, 1400},
		"trie_lookup_elem":            {100 + 9900, 100},
		"bpf_prog_lpm_lookup_cb":      {800, 100},
		"its_return_thunk":            {1400, 1400},
		notAttributed:                 {3, 0},
	}
	for _, f := range p.Functions {
		w, ok := want[f.Function]
		if !ok || f.Insns != w[0] || f.Entries != w[1] {
			t.Errorf("%s: %d instructions, %d entries; want %v", f.Function, f.Insns, f.Entries, w)
		}
	}
	if len(p.Functions) != len(want) || p.Insns != 26203 || math.Abs(p.PerOp-262.03) > 1e-9 {
		t.Errorf("%d functions, %d instructions, %.2f per op; want %d, 26203, 262.03", len(p.Functions), p.Insns, p.PerOp, len(want))
	}
	if len(p.Edges) != 2 || p.Edges[0] != (CallEdge{Caller: "trie_lookup_elem", Callee: "longest_prefix_match.isra.0", Calls: 1400, Share: 14.0 / 15}) ||
		p.Edges[1].Caller != "bpf_prog_lpm_lookup_cb" || p.Edges[1].Callee != "trie_lookup_elem" {
		t.Errorf("edges %+v; want the calls by caller → callee", p.Edges)
	}
}

// TestExactProfileDiff: rows in instructions and entries per operation
// from the counts (never split by share), the calls per operation, and
// the mitigation code read from the entries.
func TestExactProfileDiff(t *testing.T) {
	a, b := exactSide(t, 14, "its_return_thunk", nil), exactSide(t, 0, "its_return_thunk", nil)
	d := Compare(a, b, Options{})
	if len(d.Profiles) != 1 || !d.Profiles[0].Exact() || d.Profiles[0].PerOpSource != EventExact {
		t.Fatalf("profiles %+v; want one exact diff", d.Profiles)
	}
	d.AttributeTimed(func(string, int) (float64, string, bool) { return 1, "insn/op", true })
	p := d.Profiles[0]
	if math.Abs(p.PerOpA-262.03) > 1e-9 || math.Abs(p.PerOpB-108.03) > 1e-9 {
		t.Errorf("per op %.2f → %.2f; want the counts' 262.03 → 108.03, not the timed centres", p.PerOpA, p.PerOpB)
	}
	top := p.Rows[0]
	if top.Function != "longest_prefix_match.isra.0" || math.Abs(top.PerOpA-140) > 1e-9 || top.PerOpB != 0 || top.EntriesA != 14 || top.EntriesB != 0 {
		t.Errorf("top row %+v; want longest_prefix_match.isra.0 140 → 0 insn/op, 14 → 0 entries", top)
	}
	if len(p.Edges) == 0 || p.Edges[0].Callee != "longest_prefix_match.isra.0" || p.Edges[0].CallsA != 14 || p.Edges[0].CallsB != 0 {
		t.Errorf("edges %+v; want trie_lookup_elem → longest_prefix_match.isra.0 at 14 → 0 calls per op first", p.Edges)
	}
	if len(p.Mitigations) != 1 || p.Mitigations[0].Kind != ReturnThunks || p.Mitigations[0].A != 14 || p.Mitigations[0].B != 0 {
		t.Errorf("mitigations %+v; want return thunks 14 → 0", p.Mitigations)
	}
	const line = "14.00 return thunks per op → 0 (its_return_thunk → –) (exact)"
	if got := p.MitigationLine(HeadlineMitigationMin); got != line {
		t.Errorf("MitigationLine = %q; want %q", got, line)
	}
	same := Compare(exactSide(t, 0, "srso_return_thunk", nil), exactSide(t, 0, "srso_return_thunk", nil), Options{})
	if got := same.Profiles[0].MitigationLine(0); !strings.Contains(got, "none ran") {
		t.Errorf("MitigationLine(0) without any = %q; want it said that none ran", got)
	}
	if got := same.Profiles[0].MitigationLine(HeadlineMitigationMin); got != "" {
		t.Errorf("headline MitigationLine without any = %q; want none", got)
	}
}

// TestMitigationTable: every kind of mitigation code is named, retpolines
// by their register families, and helpers that a thunk calls are not
// counted a second time.
func TestMitigationTable(t *testing.T) {
	for fn, want := range map[string]MitigationKind{
		"__x86_return_thunk":            ReturnThunks,
		"srso_return_thunk":             ReturnThunks,
		"srso_alias_return_thunk":       ReturnThunks,
		"retbleed_return_thunk":         ReturnThunks,
		"its_return_thunk":              ReturnThunks,
		"__x86_indirect_thunk_rax":      IndirectThunks,
		"__x86_indirect_its_thunk_r11":  IndirectThunks,
		"__x86_indirect_call_thunk_rbx": IndirectThunks,
		"clear_bhb_loop":                BHBClears,
		"entry_untrain_ret":             Untrains,
		"entry_ibpb":                    IBPBs,
		"write_ibpb":                    IBPBs,
	} {
		if kind, why, ok := mitigationOf(fn); !ok || kind != want || why == "" {
			t.Errorf("MitigationOf(%s) = %q, %q, %v; want %q", fn, kind, why, ok, want)
		}
	}
	for _, fn := range []string{"srso_safe_ret", "srso_alias_safe_ret", "trie_lookup_elem", "__x86_return_thunk_x"} {
		if kind, _, ok := mitigationOf(fn); ok {
			t.Errorf("MitigationOf(%s) = %q; want none", fn, kind)
		}
	}
	p := &Profile{Exact: true, Ops: 10, Special: map[string]uint64{"verw": 5}}
	if u := mitigationUses(p); u[len(u)-1].Kind != VERWs || u[len(u)-1].PerOp != 0.5 || u[len(u)-1].Symbols[0] != "VERW" {
		t.Errorf("mitigationUses(5 VERW in 10 ops) = %+v; want VERWs 0.5", u)
	}
}

// TestSampledProfileUnreliable: a sampled profile that lost more than a
// few percent of its samples says so; the tinyconfig kernel without
// high-resolution timers kept 216 and lost 43305.
func TestSampledProfileUnreliable(t *testing.T) {
	for _, tc := range []struct {
		samples, lost uint64
		unreliable    bool
	}{{9150, 0, false}, {9150, 1, false}, {9600, 400, true}, {216, 43305, true}} {
		p := &Profile{Samples: tc.samples, Lost: tc.lost}
		why := p.unreliable()
		if (why != "") != tc.unreliable {
			t.Errorf("%d samples, %d lost: unreliable() = %q; want unreliable %v", tc.samples, tc.lost, why, tc.unreliable)
		}
	}
	if why := (&Profile{Samples: 216, Lost: 43305}).unreliable(); !strings.Contains(why, "99.5%") {
		t.Errorf("unreliable() = %q; want the share lost", why)
	}
	// The guest's counts, symbolized: the profile carries the reason.
	side := Load(Input{Kallsyms: []byte("ffffffff81000000 T _text\nffffffff81000100 T trie_lookup_elem\nffffffff81000600 T _etext\n")}, Options{})
	side.AddProfile(&wire.ProfileDoc{Event: wire.EventCPUClock, Weight: "instructions", Period: 20011, Text: 0xffffffff81000000,
		Benchmarks: []wire.BenchProfile{{Benchmark: "b", Ops: 1000, Samples: 216, Lost: 43305, Sites: []wire.ProfileSite{{IP: 0xffffffff81000110, Samples: 216}}}}})
	if len(side.Profiles) != 1 || !strings.Contains(side.Profiles[0].Unreliable, "43305 of 43521") {
		t.Errorf("AddProfile(216 samples, 43305 lost) = %+v; want it marked unreliable", side.Profiles)
	}
	if why := (&Profile{Exact: true}).unreliable(); why != "" {
		t.Errorf("an exact profile: unreliable() = %q; want none", why)
	}
}

// A plugin built before the exact profile (format 1) counts the memory
// rows alone: the side says why it has no exact profile.
func TestExactProfileOldPlugin(t *testing.T) {
	side := Load(Input{Kallsyms: []byte("ffffffff81000000 T _text\nffffffff81000100 T trie_lookup_elem\nffffffff81000600 T _etext\n")}, Options{})
	side.AddMemory(Input{
		Memory:    &wire.MemoryDoc{Cost: 3e8, Text: 0xffffffff81000000, Benchmarks: []wire.BenchMemory{{Benchmark: "b", Segment: 1, Ops: 10}}},
		MemCounts: &vmrunner.MemCounts{Version: 1, Model: "l1d 49152 12", Complete: true, Segments: []vmrunner.MemSegment{{Number: 1, Windows: 1, Insns: 100}}},
	})
	if len(side.Profiles) != 0 || side.ProfileSummary == nil || !strings.Contains(side.ProfileSummary.ExactProblem, "scripts/setup") {
		t.Errorf("profiles %+v, summary %+v; want none, and the summary naming scripts/setup", side.Profiles, side.ProfileSummary)
	}
	if len(side.Memory) != 1 || side.Memory[0].PerOp["insn/op"] != 10 {
		t.Errorf("memory %+v; want the memory rows all the same", side.Memory)
	}
}

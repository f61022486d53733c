package insight

import (
	"math"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/wire"
)

// TestProfileSymbolizes checks that sites are named after undoing KASLR
// (the guest's _text minus the symbols' _text), that BPF programs take
// the guest's names and other module addresses and user space get their
// buckets, and that callers make edges.
func TestProfileSymbolizes(t *testing.T) {
	const offset = 0x3200000
	kallsyms := "ffffffff84200000 T _text\n" +
		"ffffffff84200100 T trie_lookup_elem\n" +
		"ffffffff84200400 t longest_prefix_match.isra.0\n" +
		"ffffffff84200500 T bpf_test_run\n" +
		"ffffffff84200600 T _etext\n"
	side := Load(Input{Kallsyms: []byte(kallsyms)}, Options{}) // no image: run-time addresses
	if side.Symbols == nil {
		t.Fatalf("Load: %s", side.Status)
	}
	run := func(link uint64) uint64 { return link + offset }
	doc := &wire.ProfileDoc{Event: wire.EventCPUClock, Weight: "instructions", Period: 20011, Text: 0xffffffff84200000, Cost: 1e8,
		Benchmarks: []wire.BenchProfile{{
			Benchmark: "LPMTrie/op=lookup", Ops: 1000, Count: 900_000, Samples: 40,
			Sites: []wire.ProfileSite{
				{IP: run(0xffffffff81000410), Caller: run(0xffffffff81000150), Samples: 20},
				{IP: run(0xffffffff81000120), Caller: 0xffffffffc0001010, Samples: 10},
				{IP: 0xffffffffc0001008, Caller: run(0xffffffff81000520), Samples: 5},
				{IP: 0xffffffffc0800000, Samples: 3},
				{IP: 0, Samples: 2},
			},
			Symbols: []wire.ProfileSymbol{{Addr: 0xffffffffc0001000, Size: 0x40, Name: "bpf_prog_lpm_lookup", Module: "bpf"}},
		}}}
	// Symbols from kallsyms with no image keep run-time addresses: _text
	// is the guest's, no offset to take out.
	side.AddProfile(doc)
	if side.ProfileSummary.Problem != "" || len(side.Profiles) != 1 {
		t.Fatalf("AddProfile: summary %+v, %d profiles", side.ProfileSummary, len(side.Profiles))
	}
	p := side.Profiles[0]
	want := map[string]uint64{"trie_lookup_elem": 10, "longest_prefix_match.isra.0": 20, "bpf_prog_lpm_lookup": 5, moduleCode: 3, userSpace: 2}
	for fn, n := range want {
		got := uint64(0)
		for _, f := range p.Functions {
			if f.Function == fn {
				got = f.Samples
			}
		}
		if got != n {
			t.Errorf("samples of %s = %d; want %d (functions %+v)", fn, got, n, p.Functions)
		}
	}
	if p.Functions[0].Function != "longest_prefix_match.isra.0" || math.Abs(p.Functions[0].Share-0.5) > 1e-9 || p.PerOp != 900 {
		t.Errorf("top function %+v, per op %v; want longest_prefix_match.isra.0 at 50%%, 900 per op", p.Functions[0], p.PerOp)
	}
	edges := map[string]uint64{}
	for _, e := range p.Edges {
		edges[e.Caller+">"+e.Callee] = e.Samples
	}
	if edges["trie_lookup_elem>longest_prefix_match.isra.0"] != 20 || edges["bpf_prog_lpm_lookup>trie_lookup_elem"] != 10 || edges["bpf_test_run>bpf_prog_lpm_lookup"] != 5 {
		t.Errorf("edges %v; want the callers of the samples", edges)
	}

	// The same symbols placed on an image (link-time addresses) name the
	// same sites: the offset comes from _text.
	linked := Load(Input{Kallsyms: []byte(kallsyms)}, Options{})
	linked.Symbols, _ = ParseKallsyms(strings.NewReader(kallsyms), kallsymsOptions{LinkText: 0xffffffff81000000})
	doc.Benchmarks[0].Sites = []wire.ProfileSite{{IP: 0xffffffff84200410, Samples: 1}}
	linked.AddProfile(doc)
	if got := linked.Profiles[0].Functions[0].Function; got != "longest_prefix_match.isra.0" {
		t.Errorf("with the KASLR offset taken out of the symbols: %s; want longest_prefix_match.isra.0", got)
	}

	none := &Side{}
	none.AddProfile(doc)
	if none.ProfileSummary == nil || !strings.Contains(none.ProfileSummary.Problem, "no symbols") {
		t.Errorf("a side without symbols: %+v; want the profile's summary saying so", none.ProfileSummary)
	}
}

// TestProfileDiffRanksAndAttributes checks the rows: largest change of
// attributed cost first, shares in percentage points, and the timed
// centres split by share once AttributeTimed sets them.
func TestProfileDiffRanksAndAttributes(t *testing.T) {
	prof := func(fns ...FunctionShare) []Profile {
		return []Profile{{Benchmark: "b", PerOp: 1000, Functions: fns}}
	}
	a := &Side{Profiles: prof(FunctionShare{Function: "lpm", Samples: 50, Share: 0.5}, FunctionShare{Function: "trie", Samples: 40, Share: 0.4}, FunctionShare{Function: "rnd", Samples: 10, Share: 0.1})}
	b := &Side{Profiles: prof(FunctionShare{Function: "trie", Samples: 80, Share: 0.8}, FunctionShare{Function: "rnd", Samples: 20, Share: 0.2})}
	d := Compare(a, b, Options{})
	if len(d.Profiles) != 1 || d.Profiles[0].PerOpSource != "profile" {
		t.Fatalf("profiles %+v; want one, attributed from the profile's own clock", d.Profiles)
	}
	d.AttributeTimed(func(bench string, side int) (float64, string, bool) {
		return [2]float64{800, 600}[side], "insn/op", true
	})
	p := d.Profiles[0]
	var got []string
	for _, r := range p.Rows {
		got = append(got, r.Function)
	}
	if strings.Join(got, ",") != "lpm,trie,rnd" || p.PerOpSource != "timed" {
		t.Fatalf("rows %v (%s); want lpm, trie, rnd by change of attributed cost, timed", got, p.PerOpSource)
	}
	if r := p.Rows[0]; r.PerOpA != 400 || r.PerOpB != 0 || r.DeltaPP != -50 {
		t.Errorf("lpm row %+v; want 400 → 0, −50 pp", r)
	}
	if r := p.Rows[1]; r.PerOpA != 320 || r.PerOpB != 480 {
		t.Errorf("trie row %+v; want 320 → 480", r)
	}
	sum := 0.0
	for _, r := range p.Rows {
		sum += r.PerOpB - r.PerOpA
	}
	if math.Abs(sum-(600-800)) > 1e-9 {
		t.Errorf("rows' changes sum to %v; want the timed change −200 (every function listed)", sum)
	}
}

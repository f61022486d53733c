package insight

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/wire"
)

func TestCountTargets(t *testing.T) {
	a := &Side{Calls: []FunctionCalls{{Function: "trie_lookup_elem", Calls: []Call{{Callee: "longest_prefix_match.isra.0"}, {Callee: "__x86_return_thunk"}}},
		{Function: "trie_update_elem", Calls: []Call{{Callee: "kfree"}, {Callee: "lpm_trie_node_alloc.constprop.0"}}}}}
	got := CountTargets(Options{}, a, nil)
	// kfree is not code under test: a kprobe on the allocator or on locks
	// is not worth the risk.
	want := []string{"trie_lookup_elem", "trie_update_elem", "trie_delete_elem", "longest_prefix_match", "lpm_trie_node_alloc"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("CountTargets = %q; want %q", got, want)
	}
	if _, err := wire.InsightArgs(got); err != nil {
		t.Errorf("wire.InsightArgs(CountTargets) = %v", err)
	}
	many := Options{Functions: []string{}}
	for i := range 100 {
		many.Functions = append(many.Functions, strings.Repeat("x", 20)+string(rune('a'+i%26))+strings.Repeat("y", i/26))
	}
	if _, err := wire.InsightArgs(CountTargets(many)); err != nil {
		t.Errorf("wire.InsightArgs(CountTargets of 100 functions) = %v; want them cut to the limits", err)
	}
}

func TestCompareGuestFindings(t *testing.T) {
	const (
		bench   = "LPMTrie/op=lookup/keys=random/entries=1000"
		syscall = "LPMTrieSyscall/lookups=8/entries=8192"
		lpmWhy  = "longest_prefix_match.isra.0: a .isra clone has no BTF FUNC, fentry cannot attach; kprobes do not see calls from a program a kprobe runs (bpf_prog_active)"
	)
	a := &Side{
		Programs: []wire.ProgramInfo{{Benchmark: bench, Program: "lpm_lookup", TranslatedBytes: 1000, JitedBytes: 600, VerifiedInsns: 70, JitedSHA256: "aa"}},
		Counts: []wire.CallCount{
			{Benchmark: bench, Function: "longest_prefix_match", Symbol: "longest_prefix_match.isra.0", Mechanism: wire.MechanismKprobe, Calls: 103000, Ops: 10000},
			{Benchmark: bench, Function: "trie_lookup_elem", Symbol: "trie_lookup_elem", Mechanism: wire.MechanismKprobe, Calls: 10000, Ops: 10000},
			{Benchmark: syscall, Function: "trie_lookup_elem", Symbol: "trie_lookup_elem", Mechanism: wire.MechanismFentry, Calls: 8000, Ops: 8000, Unit: "lookup"},
			{Benchmark: syscall, Function: "longest_prefix_match", Symbol: "longest_prefix_match.isra.0", Unit: "lookup", Why: lpmWhy},
		},
	}
	b := &Side{
		Programs: []wire.ProgramInfo{{Benchmark: bench, Program: "lpm_lookup", TranslatedBytes: 1000, JitedBytes: 600, VerifiedInsns: 70, JitedSHA256: "aa"}},
		Counts: []wire.CallCount{
			{Benchmark: bench, Function: "longest_prefix_match", Symbol: "longest_prefix_match.isra.0", Mechanism: wire.MechanismKprobe, Calls: 0, Ops: 10000},
			{Benchmark: bench, Function: "trie_lookup_elem", Why: "not traceable: fentry and kprobe attach failed"},
		},
	}
	d := Compare(a, b, Options{})
	var lines []string
	for _, p := range d.Programs {
		lines = append(lines, p.Line)
	}
	for _, c := range d.Counts {
		lines = append(lines, c.Line)
	}
	want := []string{
		bench + " lpm_lookup: 1000 xlated, 600 JITed bytes, 70 verified insns → 1000 xlated, 600 JITed bytes, 70 verified insns; same JITed code",
		bench + ": longest_prefix_match calls per op: 10.30 (kprobe longest_prefix_match.isra.0) → 0 (kprobe longest_prefix_match.isra.0)",
		bench + ": trie_lookup_elem calls per op: 1.00 (kprobe) → not counted: not traceable: fentry and kprobe attach failed",
		// B did not run the syscall family: its side is "not counted",
		// the unit is A's.
		syscall + ": trie_lookup_elem calls per lookup: 1.00 (fentry) → not counted",
		syscall + ": longest_prefix_match calls per lookup: not counted: " + lpmWhy + " → not counted",
	}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("Compare(guest findings) lines =\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestDiffFileRoundTrip(t *testing.T) {
	path := DiffFile(filepath.Join(t.TempDir(), "results.txt"))
	d := &Diff{A: &Side{Source: "kallsyms (approximate sizes)"}, B: &Side{Status: "no symbols: none"}, CallChanges: []CallChange{{Line: "x"}}}
	if err := WriteDiffFile(path, d); err != nil {
		t.Fatal(err)
	}
	got, err := ReadDiffFile(path)
	if err != nil || got.A.Source != d.A.Source || got.B.Status != d.B.Status || len(got.CallChanges) != 1 {
		t.Errorf("ReadDiffFile(WriteDiffFile(d)) = %+v, %v; want d", got, err)
	}
	if _, err := ReadDiffFile(path + ".none"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadDiffFile(missing) = %v; want os.ErrNotExist", err)
	}
	big := filepath.Join(t.TempDir(), "big.json")
	os.WriteFile(big, []byte(`{"a":"`+strings.Repeat("x", MaxDiffFileBytes)+`"}`), 0o644)
	if _, err := ReadDiffFile(big); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadDiffFile(%d bytes) = %v; want ErrTooLarge", MaxDiffFileBytes, err)
	}
}

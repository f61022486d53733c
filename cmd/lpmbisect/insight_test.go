package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/present/report"
	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
	"github.com/lpmbisect/lpmbisect/wire"
)

// TestInsightFlagsBeforeAnyVM checks that a bad --debug-a, --debug-b or
// --symbols is a usage error before any kernel is looked at.
func TestInsightFlagsBeforeAnyVM(t *testing.T) {
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("not a vmlinux\n"), 0o644)
	common := []string{"compare", "--cache-dir", t.TempDir(), "--guest", fakeGuest(t), "--run-dir", filepath.Join(dir, "runs")}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--debug-a", notes}, "--debug-a: " + notes + " is neither an ELF vmlinux nor a Debian package"},
		{[]string{"--debug-b", filepath.Join(dir, "missing")}, "--debug-b: open"},
		{[]string{"--symbols", "trie_(("}, "--symbols \"trie_((\": error parsing regexp"},
	} {
		args := append(append(append([]string{}, common...), c.args...), "a", "b")
		code, _, stderr := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("lpmbisect %s: exit %d, %q; want %d and %q", strings.Join(c.args, " "), code, stderr, exitUsage, c.want)
		}
	}
}

// TestInsightCountsEveryPath boots Debian 6.1 and 6.12 once each (icount)
// with benchmarks whose lookups kprobes cannot see: from a kprobe program
// on gettid() (bpf_prog_active) and from bpf(2) batch commands
// (bpf_disable_instrumentation). The pass counts trie_*_elem there with
// fentry, once per lookup or element, and names why
// longest_prefix_match.isra.0 is not counted: a .isra clone has no BTF
// FUNC.
func TestInsightCountsEveryPath(t *testing.T) {
	bootsInParallel(t)
	args := vmArgs(t)
	const (
		syscall = "LPMTrieSyscall/lookups=8/entries=8192"
		lookup  = "MapBatch/map=lpm_trie/op=lookup/batch=1000/entries=1000"
		update  = "MapBatch/map=lpm_trie/op=update/batch=1000/entries=1000"
	)
	code, stdout, stderr := runCLI(t, append(append([]string{"compare", "--accel", "icount", "--no-profile", "--boots", "1", "--max-boots", "1", "--samples", "2", "--rounds", "2",
		"--entries", "1000", "--batch-entries", "1000", "--no-controls", "--format", "json",
		"--bench", `^(LPMTrieSyscall/lookups=8/entries=8192$|MapBatch/map=lpm_trie/op=(lookup|update)/batch=1000/)`}, args...),
		testkernels.Deb(t, testkernels.Debian61), testkernels.Deb(t, testkernels.Debian612))...)
	if code != exitOK && code != exitInconclusive {
		t.Fatalf("compare 6.1 6.12, one boot each: exit %d; want %d or %d\n%s\n%s", code, exitOK, exitInconclusive, stdout, stderr)
	}
	var doc report.Document
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("compare --format json: %v\n%s", err, stdout)
	}
	if doc.Insight == nil {
		t.Fatalf("compare --format json: no insight block\n%s", stderr)
	}
	want := map[[2]string]string{ // benchmark, function → the mechanism, or why none
		{syscall, "trie_lookup_elem"}:     wire.MechanismFentry,
		{lookup, "trie_lookup_elem"}:      wire.MechanismFentry,
		{update, "trie_update_elem"}:      wire.MechanismFentry,
		{syscall, "longest_prefix_match"}: "longest_prefix_match.isra.0: a .isra clone has no BTF FUNC, fentry cannot attach; kprobes do not see calls from a program a kprobe runs (bpf_prog_active)",
		{update, "longest_prefix_match"}:  "longest_prefix_match.isra.0: a .isra clone has no BTF FUNC, fentry cannot attach; kprobes do not see the syscall path (bpf_disable_instrumentation)",
	}
	for _, row := range doc.Insight.Counts {
		w, ok := want[[2]string{row.Benchmark, row.Function}]
		if !ok {
			continue
		}
		delete(want, [2]string{row.Benchmark, row.Function})
		t.Logf("%s", row.Line)
		for side, cs := range map[string][]wire.CallCount{"A": row.A, "B": row.B} {
			if len(cs) != 1 {
				t.Errorf("%s: %s counted as %+v on %s; want one symbol", row.Benchmark, row.Function, cs, side)
				continue
			}
			c := cs[0]
			switch {
			// One call per op, give or take what other threads add: the
			// syscall family's program runs on every gettid(), and the Go
			// runtime calls gettid() for each thread it starts (8016 calls
			// in 8000 ops seen once, two stray gettid()s of 8 lookups).
			case w == wire.MechanismFentry && (c.Mechanism != w || c.Ops == 0 || c.Calls < c.Ops || float64(c.Calls) > 1.01*float64(c.Ops)):
				t.Errorf("%s on %s: %s %d calls in %d ops (%s); want one call per op by fentry", row.Benchmark, side, row.Function, c.Calls, c.Ops, c.Why)
			case w != wire.MechanismFentry && (c.Mechanism != "" || c.Why != w):
				t.Errorf("%s on %s: %s counted by %q, why %q; want not counted, because %q", row.Benchmark, side, row.Function, c.Mechanism, c.Why, w)
			}
			if strings.HasPrefix(row.Benchmark, "LPMTrieSyscall/") != (c.Unit == "lookup") {
				t.Errorf("%s on %s: unit %q; want lookups for LPMTrieSyscall only", row.Benchmark, side, c.Unit)
			}
		}
	}
	for k := range want {
		t.Errorf("insight counts %q: no row for %s of %s", doc.Insight.CountLines, k[1], k[0])
	}
	assertNoQEMULeft(t)
}

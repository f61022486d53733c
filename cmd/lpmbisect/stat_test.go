package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/present/report"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// The results files are real runs kept in stats/compare/testdata.
func testdataResults(name string) string {
	return filepath.Join("..", "..", "stats", "compare", "testdata", name)
}

func TestStatGivesVerdictsAgain(t *testing.T) {
	// 6.1 vs 6.12 in instruction counts: the lookups are DIFFERENT and
	// better, so no regression.
	code, stdout, stderr := runCLI(t, "stat", testdataResults("debian61-vs-612-icount.txt"))
	if code != exitOK || !strings.Contains(stdout, "DIFFERENT") || !strings.Contains(stdout, "lpmbisect stat ") {
		t.Errorf("stat 6.1 vs 6.12 (icount): exit %d; want 0 with DIFFERENT rows\n%s\n%s", code, stdout, stderr)
	}
	// The same with --fail-on change: a change is a failure.
	if code, _, _ := runCLI(t, "stat", "--fail-on", "change", testdataResults("debian61-vs-612-icount.txt")); code != exitRegression {
		t.Errorf("stat --fail-on change on 6.1 vs 6.12: exit %d; want %d", code, exitRegression)
	}
}

func TestStatPairedSelfCompare(t *testing.T) {
	// A paired TCG self-compare of Debian 6.12 (10 pairs): nothing is
	// shown within 1 %, everything within 15 %, nothing is DIFFERENT.
	path := testdataResults("debian612-self-tcg-paired.txt")
	code, stdout, stderr := runCLI(t, "stat", "--format", "json", path)
	if code != exitInconclusive {
		t.Errorf("stat (1%%) on a paired TCG self-compare: exit %d; want %d\n%s", code, exitInconclusive, stderr)
	}
	var doc report.Document
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("JSON report: %v\n%s", err, stdout)
	}
	if !doc.Paired {
		t.Errorf("JSON report of a paired results file: paired = false; want true")
	}
	for _, r := range doc.Rows {
		if r.Verdict == compare.Different || r.Pairs != 10 {
			t.Errorf("%s: %v over %d pairs; want no DIFFERENT, 10 pairs", r.Benchmark, r.Verdict, r.Pairs)
		}
	}
	code, stdout, _ = runCLI(t, "stat", "--min-effect", "15", path)
	if code != exitOK || !strings.Contains(stdout, "every benchmark is SAME") || !strings.Contains(stdout, "paired:") {
		t.Errorf("stat --min-effect 15 on a paired TCG self-compare: exit %d; want 0, every benchmark SAME, paired\n%s", code, stdout)
	}
}

func TestStatBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"stat"}, "one results file"},
		{[]string{"stat", "no-such-results.txt"}, "no-such-results.txt"},
		{[]string{"stat", "--format", "html", testdataResults("debian61-self-icount.txt")}, "--format"},
		{[]string{"stat", "--min-effect", "0", testdataResults("debian61-self-icount.txt")}, "--min-effect"},
		{[]string{"stat", "--html", "/nonexistent-dir/r.html", testdataResults("debian61-self-icount.txt")}, "--html"},
	} {
		code, _, stderr := runCLI(t, c.args...)
		if lines := strings.Split(strings.TrimSpace(stderr), "\n"); code != exitUsage || len(lines) != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("lpmbisect %s: exit %d, stderr %q; want exit %d and one line naming %q", strings.Join(c.args, " "), code, stderr, exitUsage, c.want)
		}
	}
}

// TestStatSymbolsWidensTheSavedBlock checks that stat --symbols draws the
// size table of the saved insight block over other functions, and says in
// one line when the block kept no function sizes to draw it from.
func TestStatSymbolsWidensTheSavedBlock(t *testing.T) {
	dir := t.TempDir()
	results := filepath.Join(dir, "results.txt")
	b, err := os.ReadFile(testdataResults("debian61-vs-612-icount.txt"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(results, b, 0o644)
	side := func(sizes map[string]uint64) *insight.Side {
		return &insight.Side{Symbols: &insight.Symbols{Kind: insight.SourceKallsyms}, Source: "kallsyms (approximate sizes)", FunctionSizes: sizes}
	}
	d := &insight.Diff{
		A: side(map[string]uint64{"trie_lookup_elem": 192, "longest_prefix_match.isra": 304, "htab_map_lookup_elem": 100}),
		B: side(map[string]uint64{"trie_lookup_elem": 544, "longest_prefix_match.isra": 320, "htab_map_lookup_elem": 140}),
	}
	if err := d.Resize(nil); err != nil {
		t.Fatal(err)
	}
	if err := insight.WriteDiffFile(insight.DiffFile(results), d); err != nil {
		t.Fatal(err)
	}
	htab := fmt.Sprintf("%-40s %7d %7d %+7d", "htab_map_lookup_elem", 100, 140, 40) // bloat-o-meter's row
	code, stdout, stderr := runCLI(t, "stat", results)
	if code != exitOK || !strings.Contains(stdout, "trie_lookup_elem") || strings.Contains(stdout, "htab_map_lookup_elem") {
		t.Errorf("stat: exit %d; want the default size table, without htab_map_lookup_elem\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "stat", "--symbols", "^(htab|trie)_", results)
	if code != exitOK || !strings.Contains(stdout, htab) || !strings.Contains(stdout, "Total: Before=292, After=684") {
		t.Errorf("stat --symbols '^(htab|trie)_': exit %d; want htab_map_lookup_elem's row and both functions' totals\n%s\n%s", code, stdout, stderr)
	}
	// A block without the function sizes keeps its table and says why.
	d.A.FunctionSizes = nil
	insight.WriteDiffFile(insight.DiffFile(results), d)
	code, stdout, _ = runCLI(t, "stat", "--symbols", "^htab_", results)
	if code != exitOK || strings.Contains(stdout, htab) || !strings.Contains(stdout, "--symbols ^htab_: not applied: the saved insight block keeps no function sizes") {
		t.Errorf("stat --symbols on a block without sizes: exit %d; want the table as compare drew it and one line saying so\n%s", code, stdout)
	}
	if code, _, stderr := runCLI(t, "stat", "--symbols", "trie_((", results); code != exitUsage || !strings.Contains(stderr, "--symbols") {
		t.Errorf("stat --symbols 'trie_((': exit %d, %q; want a usage error naming --symbols", code, stderr)
	}
}

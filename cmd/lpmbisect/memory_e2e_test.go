package main

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/present/report"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
)

// memoryPlugin is the plugin scripts/setup built (vmrunner.FindMemoryPlugin:
// under LPMBISECT_CACHE, else the user's cache directory).
func memoryPlugin(t *testing.T) string {
	t.Helper()
	path, tried := vmrunner.FindMemoryPlugin(os.Getenv("LPMBISECT_CACHE"))
	if path == "" {
		testkernels.Unavailable(t, "no memory plugin at %s (run scripts/setup)", strings.Join(tried, " or "))
	}
	return path
}

// pluginCompare runs compare under icount, one boot a side of a small
// trie (1000 entries, 2 samples of 5 rounds), with args, and returns its
// JSON document (insightDoc).
func pluginCompare(t *testing.T, args []string, a, b string) report.Document {
	t.Helper()
	return insightDoc(t, append(append([]string{"compare", "--accel", "icount", "--boot-timeout", "5m", "--samples", "2", "--rounds", "5", "--entries", "1000",
		"--boots", "1", "--max-boots", "1", "--format", "json"}, args...), a, b)...)
}

// TestMemoryPassSelfCompare boots Debian 6.12 twice under icount with the
// memory plugin (a self-comparison, one boot a side) on an LPM trie lookup
// and a hash map lookup (a second family whose timed bpf_loop carries the
// marks) and checks, for each, that the why-block has its memory rows,
// that the two boots agree on L1D misses, accesses and instructions within
// their bounds (insight.MemoryBounds) and no row is DIFFERENT, that the
// compare table has the same rows beside insn/op, and that the plugin
// counted the timed operations: its instructions per operation inside the
// marked windows equal the timed insn/op within 0.5 % (the two marks per
// run are the difference).
func TestMemoryPassSelfCompare(t *testing.T) {
	bootsInParallel(t)
	args := vmArgs(t)
	plugin := memoryPlugin(t)
	deb := testkernels.Deb(t, testkernels.Debian612)
	const lpm, hash = "LPMTrie/op=lookup/keys=random/entries=1000", "HashMap/map=hash/op=lookup/key_size=4/entries=1000"
	doc := pluginCompare(t, append([]string{"--no-profile", "--bench", "LPMTrie/op=lookup/keys=random|HashMap/map=hash/op=lookup/key_size=4",
		"--memory-plugin", plugin}, args...), deb, deb)
	t.Log(strings.Join(doc.Insight.MemoryLines, "\n"))
	// Every metric but the L2's: the default model's core has none.
	nrows := len(insight.MemoryMetrics) - 1
	for _, bench := range []string{lpm, hash} {
		var m *insight.MemoryDiff
		for i := range doc.Insight.Memory {
			if doc.Insight.Memory[i].Benchmark == bench {
				m = &doc.Insight.Memory[i]
			}
		}
		if m == nil || len(m.Rows) != nrows {
			t.Errorf("memory of %s: %+v; want %d rows\n%s", bench, m, nrows, strings.Join(doc.Insight.MemoryLines, "\n"))
			continue
		}
		rows := map[string]insight.MemoryRow{}
		for _, r := range m.Rows {
			rows[r.Metric] = r
			if r.Verdict == compare.Different {
				t.Errorf("%s: row %s %.4f → %.4f: DIFFERENT for a kernel compared with itself", bench, r.Metric, r.A, r.B)
			}
		}
		for _, metric := range []string{"l1d-miss/op", "mem-access/op", "insn/op"} {
			r, bound := rows[metric], insight.MemoryBounds[metric]
			if r.A <= 0 || math.Abs(r.B-r.A) > bound*r.A {
				t.Errorf("%s: row %s %.4f → %.4f; want positive counts within the bound ±%.2g%% of each other", bench, metric, r.A, r.B, 100*bound)
			}
		}
		// The same counts are rows of the compare table, beside insn/op,
		// with the why-block's verdicts.
		var timed float64
		tabled := 0
		for _, r := range doc.Rows {
			switch {
			case r.Benchmark != bench:
			case r.Unit == compare.UnitInstructions:
				timed = r.A.Center
			case r.A == nil || r.B == nil || r.A.Center != rows[r.Unit].A || r.B.Center != rows[r.Unit].B || r.Verdict != rows[r.Unit].Verdict:
				t.Errorf("table row %s %s: %+v %+v %s; want the why-block's %+v", r.Benchmark, r.Unit, r.A, r.B, r.Verdict, rows[r.Unit])
			default:
				tabled++
			}
		}
		if tabled != nrows-1 {
			t.Errorf("%d memory rows of %s in the compare table; want %d (all but insn/op)", tabled, bench, nrows-1)
		}
		if got := rows["insn/op"].A; timed == 0 || math.Abs(got-timed) > 0.005*timed {
			t.Errorf("%s: the plugin counted %.2f insn/op inside the marks; the timed samples %.2f: want them within 0.5%%", bench, got, timed)
		}
		if bench != lpm {
			continue
		}
		// Debian 6.12 inlines longest_prefix_match: trie_lookup_elem takes
		// nearly every L1D miss of a lookup, on both sides.
		if len(m.Functions) == 0 || m.Functions[0].Function != "trie_lookup_elem" ||
			m.Functions[0].L1DA < 0.9*rows["l1d-miss/op"].A || m.Functions[0].L1DB < 0.9*rows["l1d-miss/op"].B {
			t.Errorf("functions %+v; want trie_lookup_elem first with ≥ 90%% of each side's L1D misses", m.Functions)
		}
	}
}

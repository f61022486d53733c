package main

// End-to-end tests of the benchmark suite: real Debian kernels, the real
// guest, every benchmark family. They boot under TCG with -icount (guest
// instruction counts: deterministic, so the plausibility checks cannot flake
// on a busy host) and skip without QEMU or the kernels, like e2e_test.go.
//
// The full matrix (--bench all, wall time, 2 vCPUs, both kernels: about 2
// minutes per boot) runs only with LPMBISECT_FULL_MATRIX=1:
//
//	LPMBISECT_FULL_MATRIX=1 go test -run TestSuiteFullMatrix -timeout 30m ./cmd/lpmbisect

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/guest/workloads"
	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
)

// medians returns the median value in unit of each benchmark's results.
func medians(t *testing.T, results []*benchfmt.Result, unit string) map[string]float64 {
	t.Helper()
	vals := map[string][]float64{}
	for _, r := range results {
		for _, v := range r.Values {
			switch {
			case v.OrigUnit != "" && v.OrigUnit == unit: // tidied: ns/op became sec/op
				vals[string(r.Name)] = append(vals[string(r.Name)], v.OrigValue)
			case v.OrigUnit == "" && v.Unit == unit:
				vals[string(r.Name)] = append(vals[string(r.Name)], v.Value)
			}
		}
	}
	out := map[string]float64{}
	for name, vs := range vals {
		sort.Float64s(vs)
		out[name] = vs[len(vs)/2]
	}
	return out
}

// notes returns the lpmbisect notes of a given key printed on stderr.
func notes(stderr, key string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if rest, ok := strings.CutPrefix(l, "lpmbisect: "+key+": "); ok {
			out = append(out, rest)
		}
	}
	return out
}

// checkEveryBenchmarkAnswered checks that each benchmark the pattern selects
// has results or an unsupported note, and that none failed.
func checkEveryBenchmarkAnswered(t *testing.T, pattern, workload string, p workloads.Params, results []*benchfmt.Result, stderr string) {
	t.Helper()
	for _, f := range notes(stderr, "lpmbisect-failed") {
		t.Errorf("failed: %s", f)
	}
	got := map[string]bool{}
	for _, r := range results {
		got[string(r.Name)] = true
	}
	unsupported := strings.Join(notes(stderr, "lpmbisect-unsupported"), "\n")
	for _, b := range workloads.Select(workloads.RegistryWith(workload, ""), regexp.MustCompile(workloads.ResolveBench(pattern)), p) {
		name := b.FullName(p)
		if !got[name] && !strings.Contains(unsupported, "Benchmark"+name+" needs ") {
			t.Errorf("%s: neither results nor an unsupported note", name)
		}
	}
}

// The example program of examples/xdp-lpm (--workload) and its map entries.
var (
	exampleWorkload     = filepath.Join("..", "..", "examples", "xdp-lpm", "xdp_lpm.o")
	exampleWorkloadMaps = filepath.Join("..", "..", "examples", "xdp-lpm", "blocked.txt")
)

// familyPattern picks one or a few benchmarks of every family, and the
// example program.
const familyPattern = `^(LPMTrie/op=(noop|baseline/keys=random/|lookup/keys=random/|update/keys=random/|insert/|delete/|free/)` +
	`|LPMTrieUnrolled/op=lookup/keys=random/` +
	`|LPMTrieSyscall/lookups=(1|32)/entries=8192$` +
	`|MapBatch/map=(hash|lpm_trie)/op=lookup/batch=(none|1000)/` +
	`|MapBatch/map=hash/op=(update|delete|lookup_and_delete)/batch=10/` +
	`|RingBuf/api=reserve/mode=(consumer|producer|overwrite)/producers=1$` +
	`|HashMap/(op=baseline|map=(hash|lru_hash)/op=(lookup|update)|map=percpu_hash/op=lookup)/key_size=4/` +
	`|BloomFilter/op=(lookup/hashes=3|hashmap_with_bloom|hashmap_without_bloom)/` +
	`|TaskStorage/prog=(raw_tp|fentry)/op=get$` +
	`|Workload/)`

func TestSuiteFamiliesOnDebianKernels(t *testing.T) {
	bootsInParallel(t)
	args := vmArgs(t)
	p := workloads.Params{Entries: 1000, PrefixLen: 32, BatchEntries: 5000, Samples: 2, Rounds: 2, CPUs: 1}
	for _, k := range []struct{ pkg, release string }{
		{testkernels.Debian61, testkernels.Release61},
		{testkernels.Debian612, testkernels.Release612},
	} {
		t.Run(k.release, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append(append([]string{"run", "--accel", "icount", "--bench", familyPattern,
				"--samples", fmt.Sprint(p.Samples), "--rounds", fmt.Sprint(p.Rounds), "--entries", fmt.Sprint(p.Entries),
				"--batch-entries", fmt.Sprint(p.BatchEntries),
				"--workload", exampleWorkload, "--workload-maps", exampleWorkloadMaps}, args...), testkernels.Deb(t, k.pkg))...)
			if code != 0 {
				t.Fatalf("lpmbisect run %s: exit %d\n%s", k.release, code, stderr)
			}
			results := parseResults(t, stdout)
			checkEveryBenchmarkAnswered(t, familyPattern, "xdp_lpm", p, results, stderr)
			m := medians(t, results, "insn/op")
			t.Logf("%s medians (insn/op): %v", k.release, m)

			noop, base, lookup := m["LPMTrie/op=noop"], m["LPMTrie/op=baseline/keys=random/entries=1000"], m["LPMTrie/op=lookup/keys=random/entries=1000"]
			if !(noop > 0 && noop < base && base < lookup) {
				t.Errorf("noop %v < baseline %v < lookup %v insn/op does not hold", noop, base, lookup)
			}
			batched, single := m["MapBatch/map=hash/op=lookup/batch=1000/entries=5000"], m["MapBatch/map=hash/op=lookup/batch=none/entries=5000"]
			if !(batched > 0 && batched < single) {
				t.Errorf("hash lookups: batch 1000 %v insn/op; want below one syscall per element %v", batched, single)
			}
			one, many := m["LPMTrieSyscall/lookups=1/entries=8192"], m["LPMTrieSyscall/lookups=32/entries=8192"]
			if !(one > 0 && many > one) {
				t.Errorf("gettid with 32 lookups %v insn/op; want more than with 1 lookup %v", many, one)
			}
			hb, hl, hu := m["HashMap/op=baseline/key_size=4/entries=1000"], m["HashMap/map=hash/op=lookup/key_size=4/entries=1000"], m["HashMap/map=hash/op=update/key_size=4/entries=1000"]
			if !(hb > 0 && hb < hl && hl < hu) {
				t.Errorf("hash map: baseline %v < lookup %v < full update %v insn/op does not hold", hb, hl, hu)
			}
			with, without := m["BloomFilter/op=hashmap_with_bloom/entries=1000"], m["BloomFilter/op=hashmap_without_bloom/entries=1000"]
			if bl := m["BloomFilter/op=lookup/hashes=3/entries=1000"]; !(bl > 0 && with > bl && without > 0) {
				t.Errorf("bloom filter: lookup %v, hash map with %v and without %v insn/op; want the lookups with the filter to cost more than the filter's", bl, with, without)
			}
			for _, prog := range []string{"raw_tp", "fentry"} {
				if v := m["TaskStorage/prog="+prog+"/op=get"]; !(v > 0) {
					t.Errorf("task storage get from %s: %v insn/op; want a figure", prog, v)
				}
			}
			if noop, prog := m["Workload/prog=xdp_lpm/op=noop"], m["Workload/prog=xdp_lpm"]; !(noop > 0 && prog > noop) {
				t.Errorf("the example program %v insn/op; want more than its noop %v", prog, noop)
			}
			// What these kernels lack is named, not failed.
			unsupported := strings.Join(notes(stderr, "lpmbisect-unsupported"), "\n")
			if !strings.Contains(unsupported, "BPF_F_RB_OVERWRITE (Linux 6.19)") {
				t.Errorf("no unsupported note for the overwrite ring buffer on %s:\n%s", k.release, stderr)
			}
		})
	}
	assertNoQEMULeft(t)
}

// TestSuiteLookupGrowsWithEntries checks that a lookup costs more the
// deeper the trie: three sizes show it (a fourth of 100000 entries cost
// the suite a boot that spent most of its time filling the trie).
func TestSuiteLookupGrowsWithEntries(t *testing.T) {
	bootsInParallel(t)
	args := vmArgs(t)
	var costs []float64
	sizes := []int{1, 100, 10000}
	for _, n := range sizes {
		code, stdout, stderr := runCLI(t, append(append([]string{"run", "--accel", "icount", "--bench", "LPMTrie/op=lookup/keys=random/",
			"--samples", "2", "--rounds", "2", "--entries", fmt.Sprint(n)}, args...), testkernels.Deb(t, testkernels.Debian612))...)
		if code != 0 {
			t.Fatalf("lpmbisect run --entries %d: exit %d\n%s", n, code, stderr)
		}
		m := medians(t, parseResults(t, stdout), "insn/op")
		costs = append(costs, m[fmt.Sprintf("LPMTrie/op=lookup/keys=random/entries=%d", n)])
	}
	t.Logf("random lookup insn/op for entries %v: %v", sizes, costs)
	if !slices.IsSorted(costs) || costs[0] <= 0 || costs[0] == costs[len(costs)-1] {
		t.Errorf("lookup cost for entries %v = %v insn/op; want it to grow with entries", sizes, costs)
	}
	assertNoQEMULeft(t)
}

// TestSuiteFullMatrix runs every benchmark on both kernels under TCG with 2
// vCPUs (about 2 minutes per boot) and writes the medians to the log.
func TestSuiteFullMatrix(t *testing.T) {
	if os.Getenv("LPMBISECT_FULL_MATRIX") != "1" {
		t.Skip("set LPMBISECT_FULL_MATRIX=1 to run every benchmark on both kernels (several minutes)")
	}
	args := vmArgs(t)
	p := workloads.DefaultParams
	p.CPUs = 2
	for _, k := range []string{testkernels.Debian61, testkernels.Debian612} {
		t.Run(k, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append(append([]string{"run", "--accel", "tcg", "--cpus", "2", "--bench", "all"}, args...), testkernels.Deb(t, k))...)
			if code != 0 {
				t.Fatalf("lpmbisect run --bench all: exit %d\n%s", code, stderr)
			}
			results := parseResults(t, stdout)
			checkEveryBenchmarkAnswered(t, "all", "", p, results, stderr)
			m := medians(t, results, "ns/op")
			names := make([]string, 0, len(m))
			for n := range m {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				t.Logf("%-70s %12.1f ns/op", n, m[n])
			}
		})
	}
	assertNoQEMULeft(t)
}

// TestListCommand needs no VM: lpmbisect list shows every benchmark with its
// minimum kernel, and the presets.
func TestListCommand(t *testing.T) {
	code, out, stderr := runCLI(t, "list")
	if code != 0 {
		t.Fatalf("lpmbisect list: exit %d\n%s", code, stderr)
	}
	for _, b := range workloads.Registry() {
		if !strings.Contains(out, b.FullName(workloads.DefaultParams)) {
			t.Errorf("lpmbisect list lacks %s", b.FullName(workloads.DefaultParams))
		}
	}
	for _, want := range []string{"LPMTrie/op=lookup/keys=random/entries=10000  ", "5.17", "6.19", "PRESETS", "lookup", "controls", "all"} {
		if !strings.Contains(out, want) {
			t.Errorf("lpmbisect list output lacks %q", want)
		}
	}
	code, out, _ = runCLI(t, "list", "--entries", "100", "controls")
	if code != 0 || !strings.Contains(out, "LPMTrie/op=baseline/keys=random/entries=100 ") || strings.Contains(out, "op=lookup/keys") {
		t.Errorf("lpmbisect list controls: exit %d, want only the controls with entries=100:\n%s", code, out)
	}
	if code, _, _ := runCLI(t, "list", "LPM("); code != exitUsage {
		t.Errorf("lpmbisect list 'LPM(': exit %d; want %d", code, exitUsage)
	}
}

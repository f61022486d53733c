package workloads

import (
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"

	"github.com/lpmbisect/lpmbisect/guest/bpf"
	"github.com/lpmbisect/lpmbisect/wire"
)

// skipWithoutBPF skips unless the running kernel can run the LPM benchmarks
// (root and Linux 5.17).
func skipWithoutBPF(t *testing.T) {
	t.Helper()
	for _, req := range []Requirement{ReqLPMTrie, ReqBPFLoop} {
		if err := req.Probe(); err != nil {
			t.Skipf("BPF unavailable here: %s: %v", req.Feature, err)
		}
	}
}

func TestFillTrie(t *testing.T) {
	skipWithoutBPF(t)
	m, err := ebpf.NewMap(bpf.TrieSpec(1000))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	how, err := fillTrie(m, 1000, 16, bpf.BigEndianKeys)
	if err != nil {
		t.Fatalf("FillTrie(1000) = %v", err)
	}
	t.Logf("filled with %s", how)
	var v uint32
	for _, k := range []uint32{0, 1, 999} {
		if err := m.Lookup(bpf.KeyFor(16, k), &v); err != nil || v != k {
			t.Errorf("Lookup(%d) after FillTrie = %d, %v; want %d", k, v, err, k)
		}
	}
	if err := m.Lookup(bpf.KeyFor(16, 1000), &v); !errors.Is(err, ebpf.ErrKeyNotExist) {
		t.Errorf("Lookup(1000) after FillTrie(1000) = %v; want ErrKeyNotExist", err)
	}
	tr := &trie{m: m, entries: 1000, prefixLen: 16}
	if err := tr.empty(); err != nil {
		t.Fatalf("empty() = %v", err)
	}
	if err := m.Lookup(bpf.KeyFor(16, 5), &v); !errors.Is(err, ebpf.ErrKeyNotExist) {
		t.Errorf("Lookup(5) after empty() = %v; want ErrKeyNotExist", err)
	}
}

// runSelected runs the benchmarks matching pattern on the host's kernel
// and returns the result lines and notes.
func runSelected(t *testing.T, pattern string, p Params) []string {
	t.Helper()
	out := &recorder{}
	rep := &Reporter{Out: out, Logf: t.Logf, Info: func(string) {}}
	benches := Select(Registry(), regexp.MustCompile(pattern), p)
	if len(benches) == 0 {
		t.Fatalf("no benchmark matches %q", pattern)
	}
	if err := rep.RunAll(benches, p); err != nil {
		t.Fatal(err)
	}
	return out.lines
}

// perOp returns the ns/op of a result line "BenchmarkX N V ns/op ...".
func perOp(t *testing.T, line string) float64 {
	t.Helper()
	f := strings.Fields(line)
	if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
		t.Fatalf("not a result line: %q", line)
	}
	v, err := strconv.ParseFloat(f[2], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestLPMTrieBenchmarks(t *testing.T) {
	skipWithoutBPF(t)
	p := Params{Entries: 2000, PrefixLen: 32, BatchEntries: 100, Samples: 2, Rounds: 2}
	lines := runSelected(t, "^LPMTrie/op=(noop|baseline|lookup|update|insert|delete)", p)
	byName := map[string][]float64{}
	for _, l := range lines {
		if !strings.HasPrefix(l, "Benchmark") {
			t.Errorf("note %q; want only results", l)
			continue
		}
		name := strings.Fields(l)[0]
		byName[name] = append(byName[name], perOp(t, l))
	}
	if len(byName) != 9 {
		t.Fatalf("results for %d benchmarks; want 9\n%s", len(byName), strings.Join(lines, "\n"))
	}
	// A signal during BPF_PROG_TEST_RUN makes cilium/ebpf run the program
	// again (RunOptions.Repeat is a lower bound, cilium/ebpf#887), and the
	// program counts the iterations it ran, so a sample may hold whole
	// extra runs: 30000 ops for 20000 was seen once. Ops and time are
	// counted together, so the per-op value stays right.
	for _, l := range lines {
		iters, err := strconv.Atoi(strings.Fields(l)[1])
		if err != nil {
			t.Errorf("%q: iterations: %v", l, err)
			continue
		}
		if strings.Contains(l, "op=insert") || strings.Contains(l, "op=delete") {
			if iters != 4000 { // 2 runs of the 2000 keys
				t.Errorf("%q: want 4000 ops (2 runs, each using up the 2000 keys)", l)
			}
		} else if iters < 20000 || iters%10000 != 0 {
			t.Errorf("%q: want 20000 ops, or more in whole runs of 10000", l)
		}
	}
	noop, base, lookup := byName["BenchmarkLPMTrie/op=noop"][0], byName["BenchmarkLPMTrie/op=baseline/keys=random/entries=2000"][0], byName["BenchmarkLPMTrie/op=lookup/keys=random/entries=2000"][0]
	if !(noop < base && base < lookup) {
		t.Errorf("noop %v, baseline %v, lookup %v ns/op; want noop < baseline < lookup", noop, base, lookup)
	}
}

func TestOtherFamiliesRunHere(t *testing.T) {
	skipWithoutBPF(t)
	p := Params{Entries: 1000, PrefixLen: 32, BatchEntries: 2000, Samples: 1, Rounds: 2, CPUs: 1}
	kprobes := func() string {
		for _, f := range []string{"/sys/bus/event_source/devices/kprobe/type", "/sys/kernel/tracing/kprobe_events", "/sys/kernel/debug/tracing/kprobe_events"} {
			if _, err := os.Stat(f); err == nil {
				return ""
			}
		}
		return "no kprobe PMU and no tracefs mounted here"
	}
	fentry := func() string {
		if err := features.HaveProgramType(ebpf.Tracing); err != nil {
			return err.Error()
		}
		return ""
	}
	for _, c := range []struct {
		pattern string
		results int
		skip    func() string
	}{
		{"^LPMTrieUnrolled/", 4, nil},
		{"^MapBatch/map=hash/", 16, nil},
		{"^MapBatch/map=lpm_trie/", 12, nil},
		{"^RingBuf/api=reserve/mode=(consumer|producer)/producers=1$", 2, nil},
		{"^RingBuf/api=output/mode=(consumer|producer)/producers=1$", 2, nil},
		{"^LPMTrieSyscall/lookups=(0|8)/entries=(0|8192)$", 3, kprobes},
		{"^LPMTrie/op=free/", 1, fentry},
		{"^RingBuf/api=reserve/mode=overwrite/producers=1$", 1, nil},
		{"^HashMap/", 18, nil},
		{"^BloomFilter/", 6, nil},
		{"^TaskStorage/prog=raw_tp/", 3, nil},
		{"^TaskStorage/prog=fentry/", 3, fentry},
	} {
		t.Run(c.pattern, func(t *testing.T) {
			if c.skip != nil {
				if why := c.skip(); why != "" {
					t.Skipf("cannot run here (the VM tests do): %s", why)
				}
			}
			lines := runSelected(t, c.pattern, p)
			var results, unsupported int
			for _, l := range lines {
				switch {
				case strings.HasPrefix(l, "Benchmark"):
					results++
				case strings.HasPrefix(l, "lpmbisect-unsupported"):
					unsupported++
				default:
					t.Errorf("unexpected note: %s", l)
				}
			}
			if unsupported > 0 {
				t.Logf("unsupported here: %s", strings.Join(lines, "\n"))
			}
			if results+unsupported != c.results {
				t.Errorf("%d results and %d unsupported notes; want %d in all\n%s", results, unsupported, c.results, strings.Join(lines, "\n"))
			}
			for _, l := range lines {
				t.Log(l)
			}
		})
	}
}

// TestPlaceOnOnePage loads the lookup program (main function and bpf_loop
// callback) on the host's kernel, asking for placements on pages much
// smaller than the program can fit, and on real pages.
func TestPlaceOnOnePage(t *testing.T) {
	skipWithoutBPF(t)
	l := bpf.LPMBench{Op: bpf.OpLookup, Keys: bpf.RandomKeys, Entries: 100, PrefixLen: 32}
	spec, err := l.Spec()
	if err != nil {
		t.Fatal(err)
	}
	loads := 0
	load := func() (*ebpf.Collection, error) { loads++; return ebpf.NewCollection(spec) }

	coll, note, err := placeOnOnePage(load, os.Getpagesize())
	if err != nil {
		t.Fatalf("placeOnOnePage() = %v", err)
	}
	onePage, known := jitOnOnePage(coll, uint64(os.Getpagesize()))
	coll.Close()
	if !known {
		t.Skipf("the kernel does not report JIT addresses (%s)", note)
	}
	if !onePage {
		t.Errorf("placeOnOnePage() gave a program split over pages after %d loads (%s)", loads, note)
	}
	t.Logf("placed after %d loads (%q)", loads, note)

	// No 64-byte "page" holds a lookup program: every load is misplaced,
	// and the last one is returned with a note after maxPlacements.
	loads = 0
	coll, note, err = placeOnOnePage(load, 64)
	if err != nil {
		t.Fatalf("placeOnOnePage(64) = %v", err)
	}
	coll.Close()
	if loads != maxPlacements || !strings.Contains(note, "still split") {
		t.Errorf("placeOnOnePage(64) took %d loads, note %q; want %d loads and a still-split note", loads, note, maxPlacements)
	}

	// Under an instruction clock placement is not controlled: one load,
	// however the code lies. Under a wall clock placeFor places.
	for _, tt := range []struct {
		name  string
		clock Clock
		loads int
	}{{"InstructionClock", InstructionClock, 1}, {"WallClock", WallClock, maxPlacements}} {
		loads = 0
		coll, note, err = placeFor(tt.clock, load, 64)
		if err != nil {
			t.Fatalf("placeFor(%s, 64) = %v", tt.name, err)
		}
		coll.Close()
		if loads != tt.loads {
			t.Errorf("placeFor(%s, 64) took %d loads (note %q); want %d", tt.name, loads, note, tt.loads)
		}
	}
}

// TestBatchHashSeed checks, on the host's kernel, that MapBatch hash maps
// are created with seed 0 under an instruction clock and with the kernel's
// random seed under a wall clock, and that a MapBatch hash benchmark runs
// with the fixed seed.
func TestBatchHashSeed(t *testing.T) {
	skipWithoutBPF(t)
	for _, tt := range []struct {
		name  string
		clock Clock
		seed  string
		flag  uint32
	}{
		{"InstructionClock", InstructionClock, wire.HashSeedZero, unix.BPF_F_ZERO_SEED},
		{"WallClock", WallClock, wire.HashSeedRandom, 0},
	} {
		if got := HashSeed(tt.clock); got != tt.seed {
			t.Errorf("HashSeed(%s) = %q; want %q", tt.name, got, tt.seed)
		}
		m, err := ebpf.NewMap(batchHashSpec(16, tt.clock))
		if err != nil {
			t.Fatalf("create MapBatch hash map (%s): %v", tt.name, err)
		}
		info, err := m.Info()
		m.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Flags & unix.BPF_F_ZERO_SEED; got != tt.flag {
			t.Errorf("MapBatch hash map (%s) has BPF_F_ZERO_SEED %#x; want %#x", tt.name, got, tt.flag)
		}
	}
	p := Params{Entries: 1000, PrefixLen: 32, BatchEntries: 1000, Samples: 1, Rounds: 1, CPUs: 1, Clock: InstructionClock}
	lines := runSelected(t, "^MapBatch/map=hash/op=lookup/batch=(none|all)/", p)
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "Benchmark") || !strings.HasPrefix(lines[1], "Benchmark") {
		t.Errorf("MapBatch hash lookups with a fixed seed gave %q; want 2 results", lines)
	}
}

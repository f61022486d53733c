package workloads

import (
	"errors"
	"regexp"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/lpmbisect/lpmbisect/bpf"
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
	how, err := FillTrie(m, 1000)
	if err != nil {
		t.Fatalf("FillTrie(1000) = %v", err)
	}
	t.Logf("filled with %s", how)
	var v uint32
	for _, k := range []uint32{0, 1, 999} {
		if err := m.Lookup(bpf.KeyFor(bpf.PrefixLen, k), &v); err != nil || v != k {
			t.Errorf("Lookup(%d) after FillTrie = %d, %v; want %d", k, v, err, k)
		}
	}
	if err := m.Lookup(bpf.KeyFor(bpf.PrefixLen, 1000), &v); !errors.Is(err, ebpf.ErrKeyNotExist) {
		t.Errorf("Lookup(1000) after FillTrie(1000) = %v; want ErrKeyNotExist", err)
	}
}

func TestLPMLookupBenchmarks(t *testing.T) {
	skipWithoutBPF(t)
	p := Params{Entries: 2000, Samples: 3, Rounds: 2}
	out := &recorder{}
	var infos []string
	rep := &Reporter{Out: out, Logf: t.Logf, Info: func(text string) { infos = append(infos, text) }}
	if err := rep.RunAll(Select(Registry(), regexp.MustCompile("LPMTrie/op=lookup"), p), p); err != nil {
		t.Fatal(err)
	}
	if len(infos) != 2 {
		t.Errorf("RunAll() gave infos %q; want one per benchmark (how the trie was filled)", infos)
	}
	if len(out.lines) != 6 {
		t.Fatalf("RunAll() wrote %q; want 6 result lines", out.lines)
	}
	for _, l := range out.lines {
		if !regexp.MustCompile(`^BenchmarkLPMTrie/op=lookup/keys=(random|sequential)/entries=2000 20000 [0-9.]+ ns/op$`).MatchString(l) {
			t.Errorf("line %q is not a 20000-op LPM lookup result", l)
		}
	}
}

package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"
)

// addHostileSeeds adds the recorded hostile streams to a corpus.
func addHostileSeeds(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "hostile", "*.stream"))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

// resultText is what a result means, for comparing decodes.
func resultText(r *benchfmt.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d", r.Name, r.Iters)
	for _, v := range r.Values {
		fmt.Fprintf(&b, " %v %s", v.Value, v.Unit)
	}
	for _, c := range r.Config {
		fmt.Fprintf(&b, " %s=%q", c.Key, c.Value)
	}
	return b.String()
}

// FuzzDecode decodes arbitrary streams. A complete stream has as many
// results as its trailer counts, none that vet rejects, and re-encodes
// (Writer) to a complete stream that decodes to the same results and
// notes; the insight bytes stay within MaxInsightBytes.
func FuzzDecode(f *testing.F) {
	addHostileSeeds(f)
	f.Add([]byte("kernel: 6.1\nBenchmarkX 1 2 ns/op\nlpmbisect-end: records=1 sha256=00\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := Decode(data)
		if len(s.Insight) > MaxInsightBytes {
			t.Fatalf("Decode kept %d insight bytes, more than %d", len(s.Insight), MaxInsightBytes)
		}
		if s.Complete == (s.Problem != "") || s.Rejected && s.Complete {
			t.Fatalf("Decode: complete %v, rejected %v with problem %q", s.Complete, s.Rejected, s.Problem)
		}
		if !s.Complete {
			return
		}
		var out bytes.Buffer
		w := NewWriter(&out)
		for _, r := range s.Results {
			for _, v := range r.Values {
				if math.IsNaN(v.Value) || v.Value < 0 || v.Value > maxValue {
					t.Fatalf("complete stream with value %v", v.Value)
				}
			}
			if err := w.Result(r.Clone()); err != nil {
				t.Fatal(err)
			}
		}
		for _, n := range s.Notes {
			if err := w.Note(n.Key, n.Text); err != nil {
				t.Fatalf("a decoded note does not re-encode: %v", err)
			}
		}
		if err := w.End(); err != nil {
			t.Fatal(err)
		}
		again := Decode(out.Bytes())
		if !again.Complete {
			t.Fatalf("re-encoded stream is not complete: %s\n%q", again.Problem, out.Bytes())
		}
		if len(again.Results) != len(s.Results) || len(again.Notes) != len(s.Notes) {
			t.Fatalf("re-encoded stream has %d results and %d notes; want %d and %d", len(again.Results), len(again.Notes), len(s.Results), len(s.Notes))
		}
		for i := range s.Results {
			if a, b := resultText(s.Results[i]), resultText(again.Results[i]); a != b {
				t.Fatalf("result %d re-encoded as %s; want %s", i, b, a)
			}
		}
		for i := range s.Notes {
			if s.Notes[i] != again.Notes[i] {
				t.Fatalf("note %d re-encoded as %+v; want %+v", i, again.Notes[i], s.Notes[i])
			}
		}
	})
}

// FuzzDecodeInsight decodes arbitrary insight documents: one that decodes
// is within the list limits and encodes to a document that decodes to the
// same JSON.
func FuzzDecodeInsight(f *testing.F) {
	for _, d := range []*InsightDoc{
		{Kernel: "6.12.117+deb12-cloud-amd64", Kallsyms: "ffffffff81000000 T _text\n",
			Programs: []ProgramInfo{{Benchmark: "LPMTrie/op=lookup", Program: "lookup", TranslatedBytes: 800, JitedBytes: 500, Jited: []byte{0x90, 0xc3}}},
			Counts:   []CallCount{{Benchmark: "LPMTrie/op=lookup", Function: "longest_prefix_match", Symbol: "longest_prefix_match.isra.0", Mechanism: MechanismKprobe, Calls: 24000, Ops: 2000}},
			Problems: []string{"<b>problem</b>"}},
		{Kernel: "6.1.0-57-cloud-amd64", KallsymsProblem: "kptr_restrict"},
	} {
		gz, err := EncodeInsight(d)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(gz)
	}
	f.Add([]byte("not gzip"))
	f.Fuzz(func(t *testing.T, gz []byte) {
		d, err := DecodeInsight(gz)
		if err != nil {
			return
		}
		if err := d.Check(); err != nil {
			t.Fatalf("DecodeInsight returned a document that fails Check: %v", err)
		}
		again, err := EncodeInsight(d)
		if err != nil {
			t.Fatalf("a decoded document does not encode: %v", err)
		}
		d2, err := DecodeInsight(again)
		if err != nil {
			t.Fatalf("an encoded document does not decode: %v", err)
		}
		a, _ := json.Marshal(d)
		b, _ := json.Marshal(d2)
		if !bytes.Equal(a, b) {
			t.Fatalf("round trip changed the document:\n%s\n%s", a, b)
		}
	})
}

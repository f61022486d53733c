package measure

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"
)

// resultMeaning is what a result says, for comparing reads.
func resultMeaning(r *benchfmt.Result) string {
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

// FuzzReadResults reads arbitrary results files (what stat, history import
// and bisect's store read): whatever reads writes back (benchfmt.Writer)
// to a file that reads to the same results, and a line longer than
// bufio.MaxScanTokenSize is an error, not an allocation. The seeds are the
// heads of real results files (testdata/fuzz/FuzzReadResults).
func FuzzReadResults(f *testing.F) {
	f.Add([]byte("kernel: 6.1\nBenchmarkX 1 2 ns/op 3 B/op\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		results, err := ReadResults(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		var out bytes.Buffer
		w := benchfmt.NewWriter(&out)
		for _, r := range results {
			if len(r.Name) > len(data) {
				t.Fatalf("a name of %d bytes from %d bytes of input", len(r.Name), len(data))
			}
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		again, err := ReadResults(bytes.NewReader(out.Bytes()), "again")
		if err != nil {
			t.Fatalf("re-written results do not read: %v\n%q", err, out.Bytes())
		}
		if len(again) != len(results) {
			t.Fatalf("re-written file has %d results; want %d\n%q", len(again), len(results), out.Bytes())
		}
		for i := range results {
			if a, b := resultMeaning(results[i]), resultMeaning(again[i]); a != b {
				t.Fatalf("result %d re-read as %s; want %s", i, b, a)
			}
		}
	})
}

// TestReadResultsLongLine checks the documented bound on a line.
func TestReadResultsLongLine(t *testing.T) {
	long := "BenchmarkX 1 2 ns/op " + strings.Repeat("x", bufio.MaxScanTokenSize) + "\n"
	if _, err := ReadResults(strings.NewReader(long), "long"); err == nil {
		t.Errorf("ReadResults(a %d-byte line) succeeded; want an error", len(long))
	}
}

package ab

import (
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/insight"
	"github.com/lpmbisect/lpmbisect/kernel"
	"github.com/lpmbisect/lpmbisect/measure"
	"github.com/lpmbisect/lpmbisect/wire"
)

// TestInsightDiff checks the hand-off of the guests' documents: programs
// and counts reach the block, a side without any source says so in one
// line, and a malformed document is a problem of its side, not a failure.
func TestInsightDiff(t *testing.T) {
	const bench = "LPMTrie/op=lookup/keys=random/entries=1000"
	doc := &wire.InsightDoc{
		Programs: []wire.ProgramInfo{{Benchmark: bench, Program: "lpm_lookup", TranslatedBytes: 560}},
		Counts:   []wire.CallCount{{Benchmark: bench, Function: "longest_prefix_match", Symbol: "longest_prefix_match.isra.0", Mechanism: wire.MechanismKprobe, Calls: 109840, Ops: 10000}},
	}
	gz, err := wire.EncodeInsight(doc)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sides := []*measure.Side{
		{Name: "A", Kernel: &kernel.Kernel{Image: dir + "/vmlinuz-a"}, Insight: gz},
		{Name: "B", Kernel: &kernel.Kernel{Image: dir + "/vmlinuz-b"}, Insight: []byte("not gzip")},
	}
	in := &Insight{Options: insight.Options{}, Guest: true}
	d := in.diff(sides, in.static(sides))
	if d == nil {
		t.Fatal("diff = nil; want a block")
	}
	if len(d.Programs) != 1 || d.Programs[0].A == nil || d.Programs[0].B != nil {
		t.Errorf("diff programs %+v; want A's program only", d.Programs)
	}
	if len(d.Counts) != 1 || !strings.Contains(d.Counts[0].Line, "10.98 (kprobe longest_prefix_match.isra.0) → not counted") {
		t.Errorf("diff counts %+v; want A's 10.98 calls per op", d.Counts)
	}
	if !strings.HasPrefix(d.A.Status, "no symbols") || d.Sizes != nil {
		t.Errorf("side A status %q, sizes %v; want no symbols and no size table", d.A.Status, d.Sizes)
	}
	if got := strings.Join(d.B.Problems, "; "); !strings.Contains(got, "guest insight: decode insight") {
		t.Errorf("side B problems %q; want the malformed document named", got)
	}
}

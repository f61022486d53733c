package guestfaults

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/wire"
)

var updateHostile = flag.Bool("update-hostile", false, "rewrite wire/testdata/hostile from the guest's hostile faults")

// hostileStream is the stream a guest with fault kind writes for three
// results of the default plan's benchmark, through the same faultyOutput
// and liar a booted guest uses.
func hostileStream(t *testing.T, kind string) []byte {
	t.Helper()
	var stream bytes.Buffer
	w := wire.NewWriter(newLiar(&stream, kind))
	out := &faultyOutput{out: w, fault: kind}
	for i := range 3 {
		r := &benchfmt.Result{Name: []byte("LPMTrie/op=lookup/keys=random/entries=10000"), Iters: 50000,
			Values: []benchfmt.Value{{Value: float64(980 + i), Unit: wire.UnitInsnPerOp}}}
		r.Config = []benchfmt.Config{{Key: wire.KeyKernel, Value: []byte("6.12.117+deb12-cloud-amd64")}, {Key: wire.KeyCPU, Value: []byte("Westmere")}}
		if err := out.Result(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.End(); err != nil {
		t.Fatal(err)
	}
	return stream.Bytes()
}

// TestHostileFaults checks that each hostile fault writes the lie it
// names, which the host's decoder rejects with its reason (or, for HTML,
// keeps as valid text, and for the insight document, keeps the results
// and drops the document). With -update-hostile it records the streams
// for wire's tests.
func TestHostileFaults(t *testing.T) {
	plan := wire.DefaultPlan()
	for _, kind := range Hostile {
		t.Run(kind, func(t *testing.T) {
			data := hostileStream(t, kind)
			if *updateHostile && len(data) < 64<<10 { // insight-big's 5 MiB stay out of the repository
				dir := filepath.Join("..", "..", "wire", "testdata", "hostile")
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, kind+".stream"), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			s := wire.Decode(data)
			s.CheckPlan(plan)
			switch kind {
			case HTML, InsightBig, InsightBad:
				if !s.Complete || len(s.Results) != 3 {
					t.Fatalf("Decode(%s) = complete %v (%s), %d results; want the 3 results kept", kind, s.Complete, s.Problem, len(s.Results))
				}
				if kind == InsightBig && !strings.Contains(s.InsightProblem, "over") {
					t.Errorf("Decode(%s).InsightProblem = %q; want the document over its cap", kind, s.InsightProblem)
				}
				if _, err := wire.DecodeInsight(s.Insight); kind == InsightBad && err == nil {
					t.Errorf("DecodeInsight(%s) succeeded; want an error", kind)
				}
			default:
				if s.Complete {
					t.Fatalf("Decode(%s) is complete; want it rejected", kind)
				}
				t.Logf("%s: %s", kind, s.Problem)
			}
		})
	}
}

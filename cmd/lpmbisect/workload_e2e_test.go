package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/present/report"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
	"github.com/lpmbisect/lpmbisect/wire"
)

// The second example program, examples/xdp-hash: a hash map of flows.
var (
	hashWorkload     = filepath.Join("..", "..", "examples", "xdp-hash", "xdp_hash.o")
	hashWorkloadMaps = filepath.Join("..", "..", "examples", "xdp-hash", "flows.txt")
)

// TestCompareUserProgram compares a user's program (examples/xdp-hash)
// on Debian 6.1 and 6.12 as a new user would: icount, no calibration. Its
// harness, BPF_PROG_TEST_RUN's loop, costs more instructions on 6.12; that
// is the kernel, never environment drift, and the program's own work is a
// row of its own. Every row is decided at 2+2 boots by the deterministic
// rule with the default bound.
func TestCompareUserProgram(t *testing.T) {
	bootsInParallel(t)
	args := vmArgs(t)
	code, stdout, stderr := runCLI(t, append(append([]string{"compare", "--accel", "icount", "--no-profile", "--format", "json",
		"--workload", hashWorkload, "--workload-maps", hashWorkloadMaps, "--out", filepath.Join(t.TempDir(), "ab.txt")}, args...),
		testkernels.Deb(t, testkernels.Debian61), testkernels.Deb(t, testkernels.Debian612))...)
	if code != exitOK && code != exitRegression {
		t.Fatalf("lpmbisect compare --workload xdp_hash 6.1 6.12: exit %d; want %d or %d\n%s\n%s", code, exitOK, exitRegression, stdout, stderr)
	}
	var doc report.Document
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("compare --format json: %v\n%s", err, stdout)
	}
	if doc.EnvironmentDrift {
		t.Errorf("environment drift under icount; want none (warnings %q)", doc.Warnings)
	}
	rows := map[string]report.Row{}
	for _, r := range doc.Rows {
		rows[r.Benchmark] = r
	}
	for _, name := range []string{wire.WorkloadBench("xdp_hash"), wire.WorkloadNoop("xdp_hash"), wire.WorkloadOwn("xdp_hash")} {
		r, ok := rows[name]
		if !ok {
			t.Fatalf("no row %s in %v", name, doc.Rows)
		}
		if r.Verdict == compare.Unknown || r.Rule != compare.RuleDeterministic || r.A.Boots != compare.DeterministicBoots || r.B.Boots != compare.DeterministicBoots {
			t.Errorf("%s: %v by %q at %d+%d boots (notes %q); want SAME or DIFFERENT by the deterministic rule at 2+2", name, r.Verdict, r.Rule, r.A.Boots, r.B.Boots, r.Notes)
		}
		t.Logf("%s: %.1f → %.1f %s, %v", name, r.A.Center, r.B.Center, r.Unit, r.Verdict)
	}
	total, noop, own := rows[wire.WorkloadBench("xdp_hash")], rows[wire.WorkloadNoop("xdp_hash")], rows[wire.WorkloadOwn("xdp_hash")]
	if !noop.Control || own.Control || noop.Verdict == compare.Different && !noop.HarnessChanged {
		t.Errorf("control: noop %v (harness changed %v), own %v; want the noop a control, the own work not", noop.Control, noop.HarnessChanged, own.Control)
	}
	for i, s := range []struct{ t, n, o float64 }{{total.A.Center, noop.A.Center, own.A.Center}, {total.B.Center, noop.B.Center, own.B.Center}} {
		if s.o != s.t-s.n || s.o <= 0 {
			t.Errorf("side %c: own work %v; want the program %v less its noop %v, positive", "AB"[i], s.o, s.t, s.n)
		}
	}
	// The exit code follows the program's own work, what runs in
	// production: its total, harness included, is reported, not weighed.
	if !total.Total || own.Total {
		t.Errorf("total %v, own %v; want the program's row marked as its total, the own row not", total.Total, own.Total)
	}
	wantCode := exitOK
	for _, r := range doc.Rows {
		if r.Worse && (compare.Row{Benchmark: r.Benchmark, Unit: r.Unit, Control: r.Control, Total: r.Total}).Weighed() {
			wantCode = exitRegression
		}
	}
	if code != wantCode {
		t.Errorf("exit %d; want %d (own work %v, worse %v; total %v, worse %v)", code, wantCode, own.Verdict, own.Worse, total.Verdict, total.Worse)
	}
	// The harness's change and the program's own work on lines of their own.
	var harness, ownLine bool
	for _, w := range doc.Warnings {
		harness = harness || strings.HasPrefix(w, "HARNESS CHANGED WITH THE KERNEL: "+wire.WorkloadNoop("xdp_hash"))
		if strings.Contains(strings.ToLower(w), "drift") && !strings.Contains(w, "not drift") {
			t.Errorf("warning speaks of drift: %q", w)
		}
	}
	for _, h := range append(doc.Headlines, doc.Undecided...) {
		ownLine = ownLine || strings.HasPrefix(h, wire.WorkloadOwn("xdp_hash")+": ")
	}
	if noop.Verdict == compare.Different && !harness {
		t.Errorf("the noop moved but no warning says the harness changed: %q", doc.Warnings)
	}
	if own.Verdict == compare.Different && !ownLine {
		t.Errorf("the own work is DIFFERENT but has no headline: %q", doc.Headlines)
	}
	assertNoQEMULeft(t)
}

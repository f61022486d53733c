package compare

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/wire"
	"golang.org/x/perf/benchfmt"
)

// The testdata files are real results, written by lpmbisect compare on the
// team's 2-core host from Debian's linux-image-6.1.0-57-cloud-amd64 (6.1)
// and linux-image-6.12.117+deb12-cloud-amd64 (6.12) packages:
//
//	debian61-vs-612-tcg.txt     TCG wall time, lookups, 6+6 boots × 5 samples
//	debian61-vs-612-icount.txt  TCG icount, lookups and controls, 6+6 boots
//	debian61-self-icount.txt    6.1 against itself, icount, with controls, 4+4
//	debian61-self-tcg.txt       6.1 against itself, TCG wall time on a host
//	                            loaded by other builds (in-boot spread ~100 %)
//	debian61-self-tcg-controls.txt
//	                            the same with controls, 8+8 boots
//	debian61-vs-612-tcg-loaded.txt
//	                            TCG wall time with controls, 6+6 boots, on the
//	                            same loaded host (per-boot medians ±40-65 %)

// realResults reads a testdata file, keeping the first boots boots of each
// side (all if boots is 0): an earlier look of the same run.
func realResults(t *testing.T, name string, boots int) []*benchfmt.Result {
	t.Helper()
	text, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var out []*benchfmt.Result
	for _, r := range parse(t, string(text)) {
		if n, err := strconv.Atoi(r.GetConfig(wire.KeyBoot)); err != nil || boots == 0 || n <= boots {
			out = append(out, r)
		}
	}
	return out
}

func realReport(t *testing.T, name string, boots int, opts Options) *Report {
	t.Helper()
	rep, err := Build(realResults(t, name, boots), opts)
	if err != nil {
		t.Fatalf("Build(%s) = %v", name, err)
	}
	return rep
}

func TestRealDebian61vs612(t *testing.T) {
	for _, name := range []string{"debian61-vs-612-tcg.txt", "debian61-vs-612-icount.txt"} {
		rep := realReport(t, name, 0, Options{})
		lookups := 0
		for _, row := range rep.Rows {
			if !strings.Contains(row.Benchmark, "op=lookup") {
				continue
			}
			lookups++
			if row.Verdict != Different || row.DeltaPct > -10 || row.Worse() {
				t.Errorf("Build(%s) %s: %v %+.1f%% worse=%v; want DIFFERENT, 6.12 faster by more than 10%%",
					name, row.Benchmark, row.Verdict, row.DeltaPct, row.Worse())
			}
		}
		if lookups != 2 {
			t.Errorf("Build(%s) has %d lookup rows; want 2", name, lookups)
		}
		if rep.EnvironmentDrift {
			t.Errorf("Build(%s).EnvironmentDrift = true (%v); want false", name, rep.Drifted())
		}
		if got := rep.Outcome(FailOnRegression); got != NoRegression {
			t.Errorf("Build(%s).Outcome(regression) = %v; want no regression", name, got)
		}
		if got := rep.Outcome(FailOnChange); got != Regression {
			t.Errorf("Build(%s).Outcome(change) = %v; want regression", name, got)
		}
	}
}

// TestRealControlsMoveWithKernel: from 6.1 to 6.12 the kernel's own
// bpf_loop overhead changes, and with it the controls (noop 15.01 → 17.01
// insn/op). That is the kernel, not the environment: instruction counts do
// not move with the host, so under icount it is the harness's cost, never
// drift.
func TestRealControlsMoveWithKernel(t *testing.T) {
	rep := realReport(t, "debian61-vs-612-icount.txt", 0, Options{})
	if got := len(rep.Moved()); got == 0 {
		t.Fatalf("Build(6.1 vs 6.12, icount).Moved() is empty; want the controls that changed with the kernel")
	}
	if !rep.Deterministic || rep.EnvironmentDrift {
		t.Errorf("Build(6.1 vs 6.12, icount) Deterministic, EnvironmentDrift = %v, %v; want true, false", rep.Deterministic, rep.EnvironmentDrift)
	}
	for _, row := range rep.Moved() {
		if !row.HarnessChanged || row.Drift || !hasNote(row, "the kernel's cost of the harness changed") {
			t.Errorf("Build(6.1 vs 6.12, icount) control %s HarnessChanged, Drift = %v, %v, notes = %q; want true, false, \"the kernel's cost of the harness changed\"",
				row.Benchmark, row.HarnessChanged, row.Drift, row.Notes)
		}
	}
}

// TestRealAdaptive replays the icount 6.1 vs 6.12 run as an adaptive one:
// looks at 4 and 6 boots of at most 12. At 4 boots the five rows cannot be
// DIFFERENT yet (spending nothing); at 6 the lookups are, the first look at
// which they can be.
func TestRealAdaptive(t *testing.T) {
	opts := Options{MaxBoots: 12}
	same, different, err := minBootsToDecide(opts, 5)
	if err != nil || same != 4 || different != 6 {
		t.Fatalf("MinBootsToDecide(max 12, 5 rows) = %d, %d, %v; want 4, 6, nil", same, different, err)
	}
	look1 := realReport(t, "debian61-vs-612-icount.txt", 4, opts)
	if !look1.NeedMoreBoots(nil) || look1.Look.DifferentSpent != 0 {
		t.Fatalf("look 1 (4 boots) NeedMoreBoots, DifferentSpent = %v, %v; want true, 0", look1.NeedMoreBoots(nil), look1.Look.DifferentSpent)
	}
	opts.Previous = &look1.Look
	look2 := realReport(t, "debian61-vs-612-icount.txt", 6, opts)
	if look2.NeedMoreBoots(nil) {
		t.Errorf("look 2 (6 boots) NeedMoreBoots(nil) = true; want false, the lookups are decided")
	}
	for _, row := range look2.Rows {
		if !row.Control && (row.Verdict != Different || row.DecidedBoots != 6) {
			t.Errorf("look 2 %s: %v at %d boots; want DIFFERENT at 6", row.Benchmark, row.Verdict, row.DecidedBoots)
		}
	}
}

func TestRealSelfCompare(t *testing.T) {
	// Instruction counts: SAME for every row at 4 boots.
	rep := realReport(t, "debian61-self-icount.txt", 0, Options{})
	for _, row := range rep.Rows {
		if row.Verdict != Same {
			t.Errorf("Build(6.1 vs 6.1, icount) %s = %v (Δ=%+.3f%%, PSame=%.3g); want SAME", row.Benchmark, row.Verdict, row.DeltaPct, row.PSame)
		}
	}
	if got := rep.Outcome(FailOnChange); got != NoRegression {
		t.Errorf("Build(6.1 vs 6.1, icount).Outcome(change) = %v; want no regression", got)
	}

	// Wall time on a loaded host: far too noisy for SAME at 1 %, and
	// never DIFFERENT.
	for _, name := range []string{"debian61-self-tcg.txt", "debian61-self-tcg-controls.txt"} {
		rep = realReport(t, name, 0, Options{})
		for _, row := range rep.Rows {
			if row.Verdict == Different {
				t.Errorf("Build(%s) %s = DIFFERENT (Δ=%+.1f%%, p=%.3f); want not DIFFERENT", name, row.Benchmark, row.DeltaPct, row.P)
			}
		}
		if got := rep.Outcome(FailOnChange); got != Inconclusive || rep.EnvironmentDrift {
			t.Errorf("Build(%s).Outcome(change), EnvironmentDrift = %v, %v; want inconclusive, false", name, got, rep.EnvironmentDrift)
		}
	}
}

// TestRealLoadedHost: on a host loaded by other builds, 6+6 wall-time
// boots cannot show the 18 % lookup change (benchstat, counting the 30
// samples per side as units, says p=0.000). lpmbisect says UNKNOWN, leaning
// to DIFFERENT with the boots it would need, and blames nothing.
func TestRealLoadedHost(t *testing.T) {
	rep := realReport(t, "debian61-vs-612-tcg-loaded.txt", 0, Options{})
	for _, row := range rep.Rows {
		if row.Verdict == Different {
			t.Errorf("Build(loaded 6.1 vs 6.12) %s = DIFFERENT (Δ=%+.1f%%, p=%.3f); want UNKNOWN at this noise", row.Benchmark, row.DeltaPct, row.P)
		}
		if strings.Contains(row.Benchmark, "op=lookup") && (row.NeedFor != Different || row.BootsNeeded <= 6) {
			t.Errorf("Build(loaded 6.1 vs 6.12) %s NeedFor, BootsNeeded = %v, %d; want DIFFERENT, more than 6", row.Benchmark, row.NeedFor, row.BootsNeeded)
		}
	}
	if rep.EnvironmentDrift || rep.Outcome(FailOnRegression) != Inconclusive {
		t.Errorf("Build(loaded 6.1 vs 6.12) drift, outcome = %v, %v; want false, inconclusive", rep.EnvironmentDrift, rep.Outcome(FailOnRegression))
	}
}

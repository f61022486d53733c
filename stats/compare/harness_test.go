package compare

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/wire"
)

// progRun is a comparison of a user's program, as the guest writes it:
// every boot runs the built-in noop control, the program's noop and the
// program, with one value a boot each (given per side).
type progRun struct {
	accel          string // "" writes no accel line (wall time)
	unit           string
	lpmNoop        [2]float64
	noop, prog     [2]float64
	jitter         float64 // relative, added to boot i of each side as jitter·sin(i)
	progJitterOnly bool    // jitter only the program, not the controls
}

const userProg = "xdp_user"

func (r progRun) results(t *testing.T, boots int) []*benchfmt.Result {
	t.Helper()
	var b strings.Builder
	if r.accel != "" {
		fmt.Fprintf(&b, "accel: %s\nqemu: 7.2\ncpu-model: Westmere-v1\n", r.accel)
	}
	for i, name := range []string{"A", "B"} {
		fmt.Fprintf(&b, "side: %s\nkernel: %s\n", name, strings.ToLower(name))
		for n := range boots {
			j := 1 + r.jitter*math.Sin(float64(2*n+i+1))
			c := j
			if r.progJitterOnly {
				c = 1
			}
			fmt.Fprintf(&b, "boot: %d\n", n+1)
			fmt.Fprintf(&b, "BenchmarkLPMTrie/op=noop 1000 %v %s\n", r.lpmNoop[i]*c, r.unit)
			fmt.Fprintf(&b, "Benchmark%s 1000 %v %s\n", wire.WorkloadNoop(userProg), r.noop[i]*c, r.unit)
			fmt.Fprintf(&b, "Benchmark%s 1000 %v %s\n", wire.WorkloadBench(userProg), r.prog[i]*j, r.unit)
		}
	}
	return parse(t, b.String())
}

func rowOf(t *testing.T, rep *Report, bench string) Row {
	t.Helper()
	for _, r := range rep.Rows {
		if r.Benchmark == bench {
			return r
		}
	}
	t.Fatalf("report has no row %s", bench)
	return Row{}
}

// workloadBounds are the jitter bounds a comparison without calibration
// gives a user's program under icount (calibrate's default, 0.2 %).
var workloadBounds = map[string]float64{
	"LPMTrie/op=noop":            0.002,
	wire.WorkloadNoop(userProg):  0.002,
	wire.WorkloadBench(userProg): 0.002,
	wire.WorkloadOwn(userProg):   0.002,
}

// The case, Debian 6.1 → 6.12 under icount: the bpf_loop noop
// moves 16 → 18 and the program's noop 61 → 90 insn/op, the program 261 →
// 275. No drift: the harness's cost changed with the kernel, and the
// program's own work (200 → 185) is a row of its own, decided at 2+2 boots.
func TestOwnWorkUnderIcount(t *testing.T) {
	r := progRun{accel: "icount", unit: "insn/op", lpmNoop: [2]float64{16, 18}, noop: [2]float64{61, 90}, prog: [2]float64{261, 275}}
	rep, err := Build(r.results(t, 2), Options{Bounds: workloadBounds, MaxBoots: 10})
	if err != nil {
		t.Fatal(err)
	}
	if rep.EnvironmentDrift || !rep.Deterministic {
		t.Fatalf("Build(icount).EnvironmentDrift, Deterministic = %v, %v; want false, true", rep.EnvironmentDrift, rep.Deterministic)
	}
	for _, c := range []string{"LPMTrie/op=noop", wire.WorkloadNoop(userProg)} {
		if row := rowOf(t, rep, c); !row.Control || !row.HarnessChanged || row.Drift {
			t.Errorf("%s: Control, HarnessChanged, Drift = %v, %v, %v; want true, true, false", c, row.Control, row.HarnessChanged, row.Drift)
		}
	}
	own := rowOf(t, rep, wire.WorkloadOwn(userProg))
	if own.Control || own.A.Center != 200 || own.B.Center != 185 || own.Verdict != Different || own.Rule != RuleDeterministic || own.DecidedBoots != 2 {
		t.Errorf("own row: control %v, %v → %v, %v by %s at %d boots; want not a control, 200 → 185, DIFFERENT by the deterministic rule at 2",
			own.Control, own.A.Center, own.B.Center, own.Verdict, own.Rule, own.DecidedBoots)
	}
	if own.Direction() != Better {
		t.Errorf("own row direction = %v; want better (fewer instructions)", own.Direction())
	}
	total := rowOf(t, rep, wire.WorkloadBench(userProg))
	if total.Verdict != Different || total.Rule != RuleDeterministic || !total.Worse() || !total.Total || total.Weighed() || own.Total || !own.Weighed() {
		t.Errorf("program row: %v by %s, worse %v, total %v; own row total %v; want DIFFERENT for the worse by the deterministic rule, the total, not weighed",
			total.Verdict, total.Rule, total.Worse(), total.Total, own.Total)
	}
	// The total is worse only by the harness it includes; the program's
	// own work, what runs in production, is better: no regression.
	if got := rep.Outcome(FailOnRegression); got != NoRegression {
		t.Errorf("Outcome(regression) = %v; want no regression (the program's own work is better; its total is worse by the harness)", got)
	}
	if got := rep.Outcome(FailOnChange); got != Regression {
		t.Errorf("Outcome(change) = %v; want regression (the program's own work changed)", got)
	}
	if rep.NeedMoreBoots(nil) {
		t.Errorf("NeedMoreBoots = true; want false: every row is decided")
	}
	// The rows keep the guest's order, the own row right after the program.
	var names []string
	for _, r := range rep.Rows {
		names = append(names, r.Benchmark)
	}
	if want := []string{"LPMTrie/op=noop", wire.WorkloadNoop(userProg), wire.WorkloadBench(userProg), wire.WorkloadOwn(userProg)}; strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("rows = %q; want %q", names, want)
	}
}

// The other way round: the harness got cheaper, so the total is better,
// while the program's own work is worse: a regression, which the total
// alone would have hidden.
func TestOwnWorkDecidesTheOutcome(t *testing.T) {
	r := progRun{accel: "icount", unit: "insn/op", lpmNoop: [2]float64{16, 16}, noop: [2]float64{90, 61}, prog: [2]float64{275, 261}}
	rep, err := Build(r.results(t, 2), Options{Bounds: workloadBounds, MaxBoots: 10})
	if err != nil {
		t.Fatal(err)
	}
	own, total := rowOf(t, rep, wire.WorkloadOwn(userProg)), rowOf(t, rep, wire.WorkloadBench(userProg))
	if !own.Worse() || total.Worse() || total.Verdict != Different {
		t.Fatalf("own %v (worse %v), total %v (worse %v); want the own row worse, the total DIFFERENT for the better", own.Verdict, own.Worse(), total.Verdict, total.Worse())
	}
	if got := rep.Outcome(FailOnRegression); got != Regression {
		t.Errorf("Outcome(regression) = %v; want regression: the program's own work takes 185 → 200 insn/op", got)
	}
	// Without its noop there is no own row, and the program's row is
	// weighed as any benchmark.
	var rows []Row
	for _, r := range rep.Rows {
		if r.Benchmark != wire.WorkloadOwn(userProg) {
			rows = append(rows, r)
		}
	}
	if total := totals(rows); len(total) != 0 {
		t.Errorf("totals(rows without an own row) = %v; want none", total)
	}
}

// Under wall time a control that moves is still drift, weighed against the
// benchmarks of its own harness: the program's noop against the program.
func TestWorkloadDriftUnderWallTime(t *testing.T) {
	for _, tc := range []struct {
		name      string
		noopB     float64
		wantDrift bool
	}{
		// The program's noop +30 % (18 ns) is 6 % of the program: drift.
		{"harness moved by 6 % of the program", 78, true},
		// +1 ns of a 260 ns program: the harness moved too little.
		{"harness moved by 0.4 % of the program", 61, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := progRun{accel: "tcg", unit: "ns/op", lpmNoop: [2]float64{16, 16}, noop: [2]float64{60, tc.noopB}, prog: [2]float64{300, 330}, jitter: 0.001}
			rep, err := Build(r.results(t, 8), Options{})
			if err != nil {
				t.Fatal(err)
			}
			noop := rowOf(t, rep, wire.WorkloadNoop(userProg))
			if rep.Deterministic || noop.HarnessChanged || rep.EnvironmentDrift != tc.wantDrift || noop.Drift != tc.wantDrift {
				t.Errorf("Deterministic %v, HarnessChanged %v, EnvironmentDrift %v, noop drift %v (notes %q); want false, false, %v, %v",
					rep.Deterministic, noop.HarnessChanged, rep.EnvironmentDrift, noop.Drift, noop.Notes, tc.wantDrift, tc.wantDrift)
			}
			if tc.wantDrift && rep.Outcome(FailOnRegression) != Inconclusive {
				t.Errorf("Outcome = %v; want inconclusive under drift", rep.Outcome(FailOnRegression))
			}
		})
	}
}

// The built-in controls judge the built-in families, the program's noop
// the program: a bpf_loop noop that moved by 2 of 16 insn/op is weighed
// against the LPM lookups, not the program's 61-instruction noop.
func TestEachBenchmarkItsOwnControls(t *testing.T) {
	r := progRun{unit: "ns/op", lpmNoop: [2]float64{16, 18}, noop: [2]float64{61, 61}, prog: [2]float64{261, 261}, jitter: 0.0005}
	text := ""
	for i, name := range []string{"A", "B"} {
		text += fmt.Sprintf("side: %s\n", name)
		for n := range 8 {
			text += fmt.Sprintf("boot: %d\nBenchmarkLPMTrie/op=lookup 1000 %v ns/op\n", n+1, 1000*(1+0.0005*math.Sin(float64(n+i))))
		}
	}
	rs := append(r.results(t, 8), parse(t, text)...)
	rep, err := Build(rs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.EnvironmentDrift {
		t.Errorf("EnvironmentDrift = true (%v); want false: 2 ns is under 1 %% of the 1000 ns lookup, the program's harness did not move", rep.Drifted())
	}
	if noop := rowOf(t, rep, "LPMTrie/op=noop"); !hasNote(noop, "too little to explain a verdict") {
		t.Errorf("LPMTrie/op=noop notes = %q; want it weighed against the lookup", noop.Notes)
	}
}

// Without controls (an empty Controls), the program's noop is an ordinary
// row; with the defaults (nil) it is a control.
func TestWorkloadNoopIsADefaultControl(t *testing.T) {
	if !IsControl(wire.WorkloadNoop("p"), nil) || IsControl(wire.WorkloadBench("p"), nil) || IsControl(wire.WorkloadOwn("p"), nil) {
		t.Errorf("IsControl(nil) of the program's noop, program, own = %v, %v, %v; want true, false, false",
			IsControl(wire.WorkloadNoop("p"), nil), IsControl(wire.WorkloadBench("p"), nil), IsControl(wire.WorkloadOwn("p"), nil))
	}
	if IsControl(wire.WorkloadNoop("p"), []string{}) {
		t.Errorf("IsControl(noop, none) = true; want false")
	}
}

// fakeSource serves a progRun's boots as they are asked for.
type fakeSource struct {
	t     *testing.T
	run   progRun
	boots int
}

func (s *fakeSource) Measure(_ context.Context, n int) error { s.boots = max(s.boots, n); return nil }
func (s *fakeSource) Results() []*benchfmt.Result            { return s.run.results(s.t, s.boots) }

// The adaptive loop does not end below what its report says a verdict
// needs: under icount a control that moves with the kernel no longer
// stops it (it did, as drift, at 4 of 10 boots while saying ~5 were
// needed). A program whose boots spread beyond the default bound is
// decided statistically, and the loop goes on until every selected row
// is decided or the cap is reached.
func TestAdaptiveGoesOnWhenTheHarnessMoves(t *testing.T) {
	for _, tc := range []struct {
		name   string
		jitter float64
	}{
		{"boots agree", 0},
		{"boots spread 0.5 %", 0.005},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &fakeSource{t: t, run: progRun{accel: "icount", unit: "insn/op", lpmNoop: [2]float64{16, 18}, noop: [2]float64{61, 90},
				prog: [2]float64{261, 275}, jitter: tc.jitter, progJitterOnly: true}}
			opts := Options{Bounds: workloadBounds, MaxBoots: 10}
			start, err := Start(opts, FirstLook{Rows: 4, Deterministic: true})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Decide(context.Background(), src, opts, start, nil)
			if err != nil {
				t.Fatal(err)
			}
			if rep.EnvironmentDrift {
				t.Fatalf("EnvironmentDrift under icount; want none")
			}
			for _, row := range rep.Undecided(nil) {
				if src.boots < opts.MaxBoots {
					t.Errorf("%s UNKNOWN (needs ~%d) when the loop ended at %d of %d boots", row.Benchmark, row.BootsNeeded, src.boots, opts.MaxBoots)
				}
			}
			if tc.jitter == 0 && src.boots != DeterministicBoots {
				t.Errorf("boots agreeing: ended at %d boots; want %d", src.boots, DeterministicBoots)
			}
			if tc.jitter > 0 {
				if row := rowOf(t, rep, wire.WorkloadBench(userProg)); row.Rule != RuleStatistical || !hasNote(row, "disagree") {
					t.Errorf("spread boots: program row by %s (notes %q); want the statistical rule, saying its boots disagree", row.Rule, row.Notes)
				}
			}
		})
	}
}

// A verifier row's description of the program as loaded (its JITed size,
// here 204 → 287 bytes as Debian 6.1 → 6.12 JIT examples/xdp-lpm) is
// reported with its verdict but weighs in no outcome: what verifying cost
// (the instructions processed, the same here) does.
func TestLoadedProgramRowsNotWeighed(t *testing.T) {
	var b strings.Builder
	b.WriteString("accel: icount\nqemu: 7.2\ncpu-model: Westmere-v1\n")
	for i, side := range []string{"A", "B"} {
		fmt.Fprintf(&b, "side: %s\nkernel: %s\n", side, strings.ToLower(side))
		for boot := 1; boot <= 2; boot++ {
			fmt.Fprintf(&b, "boot: %d\nBenchmarkVerifier/prog=xdp_lpm 1 49 insns-processed 43 prog-insns %d jited-bytes 16 stack-bytes 1 verifier-verdict\n", boot, []int{204, 287}[i])
		}
	}
	rep, err := Build(parse(t, b.String()), Options{Bounds: map[string]float64{"Verifier/prog=xdp_lpm": 0.002}})
	if err != nil {
		t.Fatal(err)
	}
	var jited Row
	for _, r := range rep.Rows {
		if r.Unit == wire.UnitJitedBytes {
			jited = r
		}
	}
	if jited.Verdict != Different || !jited.Worse() || jited.Weighed() {
		t.Errorf("jited-bytes row: %v, worse %v, weighed %v; want DIFFERENT for the worse, not weighed", jited.Verdict, jited.Worse(), jited.Weighed())
	}
	if got := rep.Outcome(FailOnChange); got != NoRegression {
		t.Errorf("Outcome(change) = %v; want no regression: only the JITed size changed", got)
	}
}

package compare

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/wire"
)

// icountBoots returns n boots around v whose medians spread by about rel,
// as instruction counts do.
func icountBoots(n int, v, rel float64) [][]float64 {
	out := make([][]float64, n)
	for i := range out {
		m := v * (1 + rel*math.Sin(float64(3*i+1)))
		out[i] = []float64{m, m * (1 + rel/4), m * (1 - rel/4)}
	}
	return out
}

func TestDeterministicRule(t *testing.T) {
	const bound = 0.0006 // 0.06 %
	opts := Options{Bounds: map[string]float64{bench: bound}, MaxBoots: 10}
	for _, tc := range []struct {
		name  string
		a, b  [][]float64
		want  Verdict
		final bool
		rule  Rule
	}{
		{"-17 % from 2+2 boots", icountBoots(2, 1002, 0.0002), icountBoots(2, 828, 0.0002), Different, false, RuleDeterministic},
		{"+5 % from 2+2 boots", icountBoots(2, 1000, 0.0002), icountBoots(2, 1050, 0.0002), Different, false, RuleDeterministic},
		{"itself", icountBoots(2, 828, 0.0002), icountBoots(2, 828.1, 0.0002), Same, false, RuleDeterministic},
		{"0.5 % below 1 %", icountBoots(2, 1000, 0.0001), icountBoots(2, 1005, 0.0001), Same, false, RuleDeterministic},
		{"right at the minimum effect", icountBoots(2, 1000, 0.0001), icountBoots(2, 1010.2, 0.0001), Unknown, true, RuleDeterministic},
		{"one boot per side", icountBoots(1, 1000, 0), icountBoots(1, 1200, 0), Unknown, false, RuleDeterministic},
		// A side whose boots fall in two modes, 1.2 % apart: the bound no
		// longer holds, so the statistical rule decides (UNKNOWN at 2+2).
		{"second mode", [][]float64{{1000, 1000}, {1012, 1012}}, icountBoots(2, 1000, 0.0002), Unknown, false, RuleStatistical},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := oneRow(t, buildWith(t, opts, side{"A", "a", bench, "insn/op", tc.a}, side{"B", "b", bench, "insn/op", tc.b}))
			if row.Verdict != tc.want || row.Final != tc.final || row.Rule != tc.rule {
				t.Errorf("Build(%s) = %v final %v rule %s (Δ=%+.3f%%, notes %q); want %v final %v rule %s",
					tc.name, row.Verdict, row.Final, row.Rule, row.DeltaPct, row.Notes, tc.want, tc.final, tc.rule)
			}
		})
	}
}

// A count that is 0 in every boot of both sides (a verifier statistic a
// program never reaches) is SAME by the deterministic rule, though no
// relative change exists; a 0 on one side, one boot a side, or no bound
// leave it without a verdict.
func TestDeterministicZeros(t *testing.T) {
	zero := [][]float64{{0}, {0}}
	bounded := Options{Bounds: map[string]float64{bench: 0.002}, MaxBoots: 10}
	for _, tc := range []struct {
		name string
		opts Options
		a, b [][]float64
		want Verdict
		note string
	}{
		{"0 → 0", bounded, zero, zero, Same, "0 in every sample of both sides"},
		{"0 → 1", bounded, zero, [][]float64{{1}, {1}}, Unknown, "centre of A is not positive"},
		{"a 1 among A's samples", bounded, [][]float64{{0, 1}, {0}}, zero, Unknown, "boots of A disagree"},
		{"one boot a side", bounded, [][]float64{{0}}, [][]float64{{0}}, Unknown, "needs 2 boots per side"},
		{"no bound (wall time)", Options{MaxBoots: 10}, zero, zero, Unknown, "centre of A is not positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := buildWith(t, tc.opts, side{"A", "a", bench, "states-per-insn-max", tc.a}, side{"B", "b", bench, "states-per-insn-max", tc.b})
			row := oneRow(t, rep)
			if row.Verdict != tc.want || !strings.Contains(strings.Join(row.Notes, "; "), tc.note) {
				t.Errorf("Build(%s) = %v, notes %q; want %v and a note saying %q", tc.name, row.Verdict, row.Notes, tc.want, tc.note)
			}
			decided := slices.ContainsFunc(rep.Look.Decided, func(d Decision) bool { return d.Unit == row.Unit && d.Verdict == Same })
			if decided != (tc.want == Same) || tc.want == Same && (row.Rule != RuleDeterministic || row.DecidedBoots != 2) {
				t.Errorf("Build(%s): rule %s, decided at %d boots, in the look's decisions %v; want a decision of the deterministic rule at 2 boots exactly when SAME",
					tc.name, row.Rule, row.DecidedBoots, decided)
			}
		})
	}
}

// The deterministic rule never calls a kernel DIFFERENT from itself: boots
// that differ by no more than the bound, in any arrangement, give SAME.
func TestDeterministicSelfCompareNeverDifferent(t *testing.T) {
	const bound = 0.0006
	opts := Options{Bounds: map[string]float64{bench: bound}}
	for seed := range 200 {
		vs := jitter(uint64(seed), 4, 827.6, bound/6)
		row := oneRow(t, buildWith(t, opts, side{"A", "a", bench, "insn/op", vs[:2]}, side{"B", "b", bench, "insn/op", vs[2:]}))
		if row.Verdict == Different {
			t.Fatalf("seed %d: a kernel against itself is DIFFERENT (%+.3f%%)", seed, row.DeltaPct)
		}
		if row.Rule == RuleDeterministic && row.Verdict != Same {
			t.Errorf("seed %d: self-compare %v under the deterministic rule; want SAME", seed, row.Verdict)
		}
	}
}

// Deterministic rows are outside the Holm family: a statistical row beside
// them is corrected for its own family only.
func TestDeterministicRowsSpendNoAlpha(t *testing.T) {
	other := "LPMTrie/op=update/keys=random/entries=10000"
	opts := Options{Bounds: map[string]float64{bench: 0.0006}}
	rep := buildWith(t, opts,
		side{"A", "a", bench, "insn/op", icountBoots(6, 1000, 0.0001)}, side{"A", "a", other, "insn/op", jitter(1, 6, 2000, 0.02)},
		side{"B", "b", bench, "insn/op", icountBoots(6, 1000, 0.0001)}, side{"B", "b", other, "insn/op", jitter(2, 6, 2600, 0.02)})
	for _, row := range rep.Rows {
		switch row.Benchmark {
		case bench:
			if row.Rule != RuleDeterministic || row.Verdict != Same {
				t.Errorf("%s: %v by %s; want SAME by the deterministic rule", row.Benchmark, row.Verdict, row.Rule)
			}
		case other:
			if row.Rule != RuleStatistical || row.Verdict != Different || math.Abs(row.PAdj-math.Max(row.P, row.PEffect)) > 1e-12 {
				t.Errorf("%s: %v by %s, PAdj %v of max(P, PEffect) %v; want DIFFERENT, uncorrected (a family of one)",
					row.Benchmark, row.Verdict, row.Rule, row.PAdj, math.Max(row.P, row.PEffect))
			}
		}
	}
}

func TestMinEffectsPerBenchmark(t *testing.T) {
	opts := Options{MinEffects: map[string]float64{bench: 0.10}}
	a, b := jitter(1, 6, 1000, 0.01), jitter(2, 6, 1050, 0.01)
	row := oneRow(t, buildWith(t, opts, side{"A", "a", bench, "ns/op", a}, side{"B", "b", bench, "ns/op", b}))
	if row.MinEffect != 0.10 || row.Verdict == Different {
		t.Errorf("+5%% with a 10%% minimum effect for the benchmark: %v, MinEffect %v; want not DIFFERENT at 0.1", row.Verdict, row.MinEffect)
	}
	row = oneRow(t, buildWith(t, Options{}, side{"A", "a", bench, "ns/op", a}, side{"B", "b", bench, "ns/op", b}))
	if row.MinEffect != 0.01 || row.Verdict != Different {
		t.Errorf("+5%% with the default minimum effect: %v, MinEffect %v; want DIFFERENT at 0.01", row.Verdict, row.MinEffect)
	}
}

func TestBoundsRoundTrip(t *testing.T) {
	m := map[string]float64{bench: 0.0006, "LPMTrie/op=noop": 0.001}
	s := FormatBounds(m)
	got, err := ParseBounds(s)
	if err != nil || len(got) != 2 || got[bench] != 0.0006 || got["LPMTrie/op=noop"] != 0.001 {
		t.Errorf("ParseBounds(FormatBounds(%v) = %q) = %v, %v; want the map back", m, s, got, err)
	}
	for _, bad := range []string{"x", "a:0", "a:1.5", "a:b"} {
		if _, err := ParseBounds(bad); err == nil {
			t.Errorf("ParseBounds(%q) succeeded; want an error", bad)
		}
	}
}

func TestIcountInstrumentsMustMatch(t *testing.T) {
	text := func(side, qemu, cpu string) string {
		return "accel: icount\nqemu: " + qemu + "\ncpu-model: " + cpu + "\nside: " + side + "\nboot: 1\nBenchmarkX 1 100 insn/op\nboot: 2\nBenchmarkX 1 100 insn/op\n"
	}
	if _, err := Build(parse(t, text("A", "7.2.22", "Westmere-v1")+text("B", "7.2.22", "Westmere-v1")), Options{}); err != nil {
		t.Errorf("Build(same instrument) = %v; want no error", err)
	}
	for _, tc := range []struct{ name, text string }{
		{"CPU model", text("A", "7.2.22", "Westmere-v1") + text("B", "7.2.22", "max")},
		{"QEMU version", text("A", "7.2.22", "Westmere-v1") + text("B", "8.2.0", "Westmere-v1")},
		{"within a side", text("A", "7.2.22", "Westmere-v1") + strings.Replace(text("A", "8.2.0", "Westmere-v1"), "boot: 1", "boot: 3", 1) + text("B", "7.2.22", "Westmere-v1")},
	} {
		if _, err := Build(parse(t, tc.text), Options{}); !errors.Is(err, ErrIncomparable) || !strings.Contains(err.Error(), "QEMU") {
			t.Errorf("Build(different %s) = %v; want ErrIncomparable naming the instruments", tc.name, err)
		}
	}
}

// TestOneKernelOnTwoInstruments: one kernel image booted on two CPU
// models (or with two command lines) is a comparison of those, said in
// Differences; two images on two models stay incomparable.
func TestOneKernelOnTwoInstruments(t *testing.T) {
	text := func(side, image, cpu, extra string) string {
		return "accel: icount\nqemu: 7.2.22\nimage: " + image + "\ncpu-model: " + cpu + "\n" + extra + "side: " + side +
			"\nboot: 1\nBenchmarkX 1 100 insn/op\nboot: 2\nBenchmarkX 1 100 insn/op\n"
	}
	zen2 := "Westmere-v1,-cx16,-hypervisor,vendor=AuthenticAMD,family=23,model=49,stepping=0"
	rep, err := Build(parse(t, text("A", "aaa", zen2, "")+text("B", "aaa", "Westmere-v1,-cx16", "append: mitigations=off\n")), Options{})
	want := []Difference{{wire.KeyCPUModel, zen2, "Westmere-v1,-cx16"}, {wire.KeyAppend, "", "mitigations=off"}}
	if err != nil || !rep.OneKernel || !slices.Equal(rep.Differences, want) {
		t.Errorf("Build(one image, two CPU models and command lines) = %+v, %v; want one kernel, differences %+v", rep, err, want)
	}
	rep, err = Build(parse(t, text("A", "aaa", zen2, "")+text("B", "aaa", zen2, "")), Options{})
	if err != nil || !rep.OneKernel || len(rep.Differences) != 0 {
		t.Errorf("Build(one image, one setup) = %+v, %v; want one kernel, no differences", rep, err)
	}
	noop := strings.ReplaceAll(text("A", "aaa", zen2, ""), "BenchmarkX", "BenchmarkLPMTrie/op=noop") +
		strings.ReplaceAll(strings.ReplaceAll(text("B", "aaa", "Westmere-v1,-cx16", ""), "BenchmarkX", "BenchmarkLPMTrie/op=noop"), " 100 insn/op", " 90 insn/op")
	rep, err = Build(parse(t, noop), Options{Bounds: map[string]float64{"LPMTrie/op=noop": 0.002}})
	if err != nil || len(rep.Rows) != 1 || !rep.Rows[0].HarnessChanged || !hasNote(rep.Rows[0], "with the set-up (one kernel on both sides)") {
		t.Errorf("Build(a noop that moved between two CPU models of one kernel) = %+v, %v; want the harness changed with the set-up", rep, err)
	}
	if _, err := Build(parse(t, text("A", "aaa", zen2, "")+text("B", "bbb", "Westmere-v1,-cx16", "")), Options{}); !errors.Is(err, ErrIncomparable) {
		t.Errorf("Build(two images, two CPU models) = %v; want ErrIncomparable", err)
	}
}

func TestSummarize(t *testing.T) {
	rows, err := Summarize(results(t, side{"A", "a", bench, "insn/op", repeat(3, 10, 11, 12)}))
	if err != nil || len(rows) != 1 || rows[0].A.Boots != 3 || rows[0].A.Center != 11 {
		t.Errorf("Summarize(3 boots of 10, 11, 12) = %+v, %v; want one row, 3 boots, centre 11", rows, err)
	}
}

// TestRaisedFloorHidesNoChange: a benchmark's own minimum effect above the
// user's (a calibrated floor) makes SAME coarser, but a change the user's
// floor sees, significant and beyond it, stays UNKNOWN instead of SAME.
// The user's own floor keeps SAME with a note.
func TestRaisedFloorHidesNoChange(t *testing.T) {
	a, b := jitter(1, 6, 1000, 0.01), jitter(2, 6, 800, 0.01) // −20 %
	raised := oneRow(t, buildWith(t, Options{MinEffects: map[string]float64{bench: 0.50}},
		side{"A", "a", bench, "ns/op", a}, side{"B", "b", bench, "ns/op", b}))
	if raised.Verdict != Unknown || !raised.FloorHides || !hasNote(raised, "SAME within ±50% withheld") {
		t.Errorf("−20%% under a floor raised to 50%%: %v, FloorHides %v, notes %q; want UNKNOWN, the floor hides it", raised.Verdict, raised.FloorHides, raised.Notes)
	}
	own := oneRow(t, buildWith(t, Options{MinEffect: 0.50}, side{"A", "a", bench, "ns/op", a}, side{"B", "b", bench, "ns/op", b}))
	if own.Verdict != Same || own.FloorHides || !hasNote(own, "significant") {
		t.Errorf("−20%% under the user's own 50%%: %v, FloorHides %v, notes %q; want SAME, noted significant", own.Verdict, own.FloorHides, own.Notes)
	}
	// Too few boots for significance (3+3: the U test's smallest p is
	// 0.1): SAME within the raised floor, saying how coarse it is.
	coarse := oneRow(t, buildWith(t, Options{MinEffects: map[string]float64{bench: 0.50}},
		side{"A", "a", bench, "ns/op", a[:3]}, side{"B", "b", bench, "ns/op", b[:3]}))
	if coarse.Verdict != Same || !hasNote(coarse, "SAME within its own ±50% only: the -18.29% change is beyond the ±1% asked for") {
		t.Errorf("−20%% at 3+3 boots under a floor raised to 50%%: %v, notes %q; want SAME, noted as coarse", coarse.Verdict, coarse.Notes)
	}
	// A SAME kept from an earlier look says so too, with the change seen
	// now (it was lost after the look that decided it).
	kept := oneRow(t, buildWith(t, Options{MinEffects: map[string]float64{bench: 0.50}, MaxBoots: 10,
		Previous: &Look{Number: 1, MaxBoots: 10, Decided: []Decision{{Benchmark: bench, Unit: "sec/op", Verdict: Same, Look: 1, Boots: 3, P: 0.04, Rule: RuleStatistical}}}},
		side{"A", "a", bench, "ns/op", a}, side{"B", "b", bench, "ns/op", b}))
	if kept.Verdict != Same || !hasNote(kept, "SAME since look 1") || !hasNote(kept, "SAME within its own ±50% only") {
		t.Errorf("−20%% SAME since look 1 under a floor raised to 50%%: %v, notes %q; want SAME, kept and noted as coarse", kept.Verdict, kept.Notes)
	}
	// No change: the raised floor says SAME.
	c := jitter(3, 6, 1000, 0.01)
	same := oneRow(t, buildWith(t, Options{MinEffects: map[string]float64{bench: 0.50}},
		side{"A", "a", bench, "ns/op", a}, side{"B", "b", bench, "ns/op", c}))
	if same.Verdict != Same || same.FloorHides {
		t.Errorf("one image against itself under a floor raised to 50%%: %v, FloorHides %v; want SAME", same.Verdict, same.FloorHides)
	}
}

func TestDecideExact(t *testing.T) {
	for _, c := range []struct {
		a, b, e, bound float64
		want           Verdict
		delta          float64
	}{
		{2, 2, 0.02, 0.01, Same, 0},
		{2, 2.5, 0.02, 0.01, Different, 25},
		{2, 2.01, 0.02, 0.01, Same, 0.5},
		{2, 2.05, 0.02, 0.01, Unknown, 2.5},
		{0, 1, 0.02, 0.01, Different, 0},
		{2, 2, 0.01, 0.02, Unknown, 0}, // a bound beyond the effect decides nothing
	} {
		v, d := decideExact(c.a, c.b, c.e, c.bound)
		if v != c.want || math.Abs(d-c.delta) > 1e-9 {
			t.Errorf("DecideExact(%g, %g, %g, %g) = %s, %g; want %s, %g", c.a, c.b, c.e, c.bound, v, d, c.want, c.delta)
		}
	}
}

func TestExactRow(t *testing.T) {
	for _, c := range []struct {
		a, b, floor float64
		want        Verdict
		worse       bool
	}{
		{6.46, 6.47, 0.02, Same, false},
		{273.5, 187.6, 0.02, Different, false},
		{187.6, 273.5, 0.02, Different, true},
		{0.40, 0.41, 0.02, Same, false},     // within the floor, though 2.5 % apart
		{0.40, 0.41, 0.001, Unknown, false}, // the same change above the floor
	} {
		r := ExactRow("LPMTrie/op=lookup", "l1d-miss/op", "memory pass", c.a, c.b, 0.02, 0.05, c.floor)
		if r.Verdict != c.want || r.Worse() != c.worse {
			t.Errorf("ExactRow(%g, %g, floor %g) = %s (worse %v); want %s (worse %v)", c.a, c.b, c.floor, r.Verdict, r.Worse(), c.want, c.worse)
		}
		if !r.Exact || !r.Final || r.Undecided() || !r.Compared() || r.A.CIPct() != 0 || r.Better != -1 {
			t.Errorf("ExactRow(%g, %g) = %+v; want an exact, final, compared row with no interval, lower is better", c.a, c.b, r)
		}
	}
}

// An exact row's DIFFERENT fails a comparison as any row's, its UNKNOWN
// does not make it inconclusive, and exact rows alone show nothing.
func TestOutcomeWithExactRows(t *testing.T) {
	timed := Row{Benchmark: "LPMTrie/op=lookup", Unit: UnitInstructions, Verdict: Same}
	unknown := ExactRow("LPMTrie/op=lookup", "llc-miss/op", "memory pass", 0.25, 0.256, 0.02, 0.5, 0.001)
	worse := ExactRow("LPMTrie/op=lookup", "l1d-miss/op", "memory pass", 2, 3, 0.02, 0.05, 0.02)
	better := ExactRow("LPMTrie/op=lookup", "mem-access/op", "memory pass", 273, 187, 0.02, 0.002, 0.02)
	for _, c := range []struct {
		rows   []Row
		failOn FailOn
		want   Outcome
	}{
		{[]Row{timed, unknown}, FailOnRegression, NoRegression},
		{[]Row{timed, worse}, FailOnRegression, Regression},
		{[]Row{timed, better}, FailOnRegression, NoRegression},
		{[]Row{timed, better}, FailOnChange, Regression},
		{[]Row{unknown}, FailOnRegression, Inconclusive},
	} {
		rep := &Report{Rows: c.rows}
		if got := rep.Outcome(c.failOn); got != c.want {
			t.Errorf("Outcome(%v) of %d rows = %v; want %v", c.failOn, len(c.rows), got, c.want)
		}
	}
	if unknown.Verdict != Unknown || worse.Verdict != Different || better.Verdict != Different {
		t.Fatalf("verdicts %v %v %v; want UNKNOWN DIFFERENT DIFFERENT", unknown.Verdict, worse.Verdict, better.Verdict)
	}
}

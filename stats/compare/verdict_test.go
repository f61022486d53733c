package compare

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// boots returns one single-sample boot per value.
func boots(vs ...float64) [][]float64 {
	out := make([][]float64, len(vs))
	for i, v := range vs {
		out[i] = []float64{v}
	}
	return out
}

// jitter returns n boots of one sample each around v, with relative noise
// of about cv, drawn from a fixed seed.
func jitter(seed uint64, n int, v, cv float64) [][]float64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([][]float64, n)
	for i := range out {
		out[i] = []float64{v * math.Exp(cv*rng.NormFloat64())}
	}
	return out
}

func buildWith(t *testing.T, opts Options, sides ...side) *Report {
	t.Helper()
	rep, err := Build(results(t, sides...), opts)
	if err != nil {
		t.Fatalf("Build(…, %+v) = %v; want no error", opts, err)
	}
	return rep
}

func TestVerdictDifferent(t *testing.T) {
	for _, tc := range []struct {
		name      string
		a, b      [][]float64
		wantWorse bool
	}{
		{"B slower", jitter(1, 6, 1000, 0.02), jitter(2, 6, 1200, 0.02), true},
		{"B faster", jitter(3, 6, 1000, 0.02), jitter(4, 6, 800, 0.02), false},
	} {
		row := oneRow(t, buildWith(t, Options{},
			side{"A", "a", bench, "ns/op", tc.a},
			side{"B", "b", bench, "ns/op", tc.b}))
		if row.Verdict != Different {
			t.Errorf("Build(%s).Rows[0].Verdict = %v (p=%v, PAdj=%v); want DIFFERENT", tc.name, row.Verdict, row.P, row.PAdj)
		}
		if got := row.Worse(); got != tc.wantWorse {
			t.Errorf("Build(%s).Rows[0].Worse() = %v (Δ=%+.1f%%); want %v", tc.name, got, row.DeltaPct, tc.wantWorse)
		}
		if row.DecidedLook != 1 || row.DecidedBoots != 6 {
			t.Errorf("Build(%s).Rows[0] decided at look %d, %d boots; want 1, 6", tc.name, row.DecidedLook, row.DecidedBoots)
		}
	}
}

func TestVerdictIdentical(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want Verdict
	}{
		// One-sided U tests of n+n boots reach p = 1/C(2n, n): 1/6 for
		// 2, 1/20 = 0.05 for 3.
		{2, Unknown},
		{3, Same},
		{4, Same},
	} {
		row := oneRow(t, buildWith(t, Options{},
			side{"A", "k", bench, "insn/op", repeat(tc.n, 980, 980, 981)},
			side{"B", "k", bench, "insn/op", repeat(tc.n, 980, 980, 981)}))
		if row.Verdict != tc.want {
			t.Errorf("Build(identical values, %d+%d boots).Rows[0].Verdict = %v (PSame=%v); want %v", tc.n, tc.n, row.Verdict, row.PSame, tc.want)
		}
		if row.Verdict == Unknown && (row.NeedFor != Same || row.BootsNeeded != 3) {
			t.Errorf("Build(identical values, %d+%d boots).Rows[0] NeedFor, BootsNeeded = %v, %d; want SAME, 3", tc.n, tc.n, row.NeedFor, row.BootsNeeded)
		}
	}
}

// TestVerdictTooFewBoots: 3+3 boots far apart are not enough for DIFFERENT
// (the U test's smallest p is 0.1), and the row says what would be.
func TestVerdictTooFewBoots(t *testing.T) {
	row := oneRow(t, buildWith(t, Options{},
		side{"A", "a", bench, "ns/op", boots(1000, 1010, 990)},
		side{"B", "b", bench, "ns/op", boots(1500, 1490, 1510)}))
	if row.Verdict != Unknown || row.NeedFor != Different || row.BootsNeeded != 4 {
		t.Errorf("Build(3+3 boots, +50%%).Rows[0] Verdict, NeedFor, BootsNeeded = %v, %v, %d; want UNKNOWN, DIFFERENT, 4",
			row.Verdict, row.NeedFor, row.BootsNeeded)
	}
}

func TestVerdictOneSideEmpty(t *testing.T) {
	rep := buildWith(t, Options{},
		side{"A", "a", bench, "ns/op", repeat(4, 5)},
		side{"A", "a", "LPMTrie/op=free", "ns/op", boots(1, 2, 3, 4)},
		side{"B", "b", bench, "ns/op", repeat(4, 5)})
	row := rep.Rows[1]
	if row.Verdict != Unknown || !hasNote(row, "only on side A") {
		t.Errorf("Build(free on A only).Rows[1] Verdict, Notes = %v, %q; want UNKNOWN, \"only on side A\"", row.Verdict, row.Notes)
	}
	if got := rep.Undecided(nil); len(got) != 0 {
		t.Errorf("Build(free on A only).Undecided(nil) = %d rows; want 0: more boots cannot compare a benchmark one side lacks", len(got))
	}
	if got := rep.Outcome(FailOnRegression); got != Inconclusive {
		t.Errorf("Build(free on A only).Outcome(regression) = %v; want inconclusive", got)
	}
	// A side without any result is not a comparison at all.
	if _, err := Build(results(t, side{"A", "a", bench, "ns/op", boots(1, 2, 3, 4)}), Options{}); err == nil {
		t.Errorf("Build(no results for B) = nil error; want an error")
	}
}

// TestVerdictBelowMinEffect: a change that is significant but smaller than
// the minimum effect is never DIFFERENT; with icount precision it is SAME.
func TestVerdictBelowMinEffect(t *testing.T) {
	a := jitter(5, 6, 1000, 0.0003)
	for _, tc := range []struct {
		name   string
		change float64
		want   Verdict
		note   string
	}{
		{"+0.5%", 1.005, Same, "significant (p=0.002) but within the minimum effect 1%"},
		{"-0.9%", 0.991, Same, "within the minimum effect"},
		// Observed beyond 1 % but not shown beyond it: the effect test
		// keeps it from DIFFERENT.
		{"+1.02%", 1.0102, Unknown, ""},
		{"+1.5%", 1.015, Different, ""},
	} {
		b := make([][]float64, len(a))
		for i := range a {
			b[i] = []float64{a[(i+3)%len(a)][0] * tc.change}
		}
		row := oneRow(t, buildWith(t, Options{},
			side{"A", "k", bench, "insn/op", a},
			side{"B", "k", bench, "insn/op", b}))
		if row.Verdict != tc.want {
			t.Errorf("Build(icount %s).Rows[0].Verdict = %v (Δ=%+.3f%%, p=%.3g, PEffect=%.3g, PSame=%.3g); want %v",
				tc.name, row.Verdict, row.DeltaPct, row.P, row.PEffect, row.PSame, tc.want)
		}
		if tc.note != "" && !hasNote(row, tc.note) {
			t.Errorf("Build(icount %s).Rows[0].Notes = %q; want %q", tc.name, row.Notes, tc.note)
		}
	}
}

// TestVerdictNoisySmallChange: under TCG wall-time noise an observed change
// beyond the minimum effect is not DIFFERENT unless the test shows it.
func TestVerdictNoisySmallChange(t *testing.T) {
	row := oneRow(t, buildWith(t, Options{},
		side{"A", "k", bench, "ns/op", boots(400, 412, 405, 398, 420, 409)},
		side{"B", "k", bench, "ns/op", boots(414, 411, 425, 408, 418, 421)}))
	if row.Verdict != Unknown {
		t.Errorf("Build(+1.9%% in 3%% noise).Rows[0].Verdict = %v (Δ=%+.2f%%, p=%.3f, PEffect=%.3f); want UNKNOWN", row.Verdict, row.DeltaPct, row.P, row.PEffect)
	}
	// σ ≈ 1.6 % of the centre, 1.9 % observed: DIFFERENT leans near.
	if row.NeedFor != Different || row.BootsNeeded < 6 || row.BootsNeeded > 40 {
		t.Errorf("Build(+1.9%% in 3%% noise).Rows[0] NeedFor, BootsNeeded = %v, %d; want DIFFERENT, 6…40", row.NeedFor, row.BootsNeeded)
	}
}

// TestBootsNeededSame checks the estimate against the normal approximation:
// σ = 4 % between boots and no change, SAME at ±1 % needs about
// 2·(1.645+0.842)²·16·π/3 ≈ 207 boots per side.
func TestBootsNeededSame(t *testing.T) {
	a := boots(96, 104, 96, 104, 96, 104)
	b := boots(104, 96, 104, 96, 104, 96)
	row := oneRow(t, buildWith(t, Options{},
		side{"A", "k", bench, "ns/op", a},
		side{"B", "k", bench, "ns/op", b}))
	// Sample sd of ±4 around 100 with 10 df is 4·sqrt(12/10).
	want := 2 * math.Pow(1.6449+0.8416, 2) * 16 * 1.2 * math.Pi / 3
	if row.NeedFor != Same || math.Abs(float64(row.BootsNeeded)-want) > 2 {
		t.Errorf("Build(σ=4%%, Δ=0).Rows[0] NeedFor, BootsNeeded = %v, %d; want SAME, ~%.0f", row.NeedFor, row.BootsNeeded, want)
	}
}

func TestHolm(t *testing.T) {
	ps := []float64{0.04, 0.01, 0.03, 0.005}
	rows := make([]*Row, len(ps))
	for i, p := range ps {
		rows[i] = &Row{P: p, PEffect: p / 2}
	}
	holm(rows)
	// Sorted 0.005 0.01 0.03 0.04 → ×4 ×3 ×2 ×1 = 0.02 0.03 0.06 0.04 → monotone 0.02 0.03 0.06 0.06.
	want := []float64{0.06, 0.03, 0.06, 0.02}
	for i, row := range rows {
		if math.Abs(row.PAdj-want[i]) > 1e-12 {
			t.Errorf("holm(%v)[%d].PAdj = %v; want %v", ps, i, row.PAdj, want[i])
		}
	}
}

func TestUMinP(t *testing.T) {
	for _, tc := range []struct {
		n1, n2   int
		twoSided bool
		want     float64
	}{
		{4, 4, true, 2.0 / 70}, {4, 4, false, 1.0 / 70}, {6, 6, true, 2.0 / 924}, {3, 5, true, 2.0 / 56}, {1, 1, true, 1}, {0, 4, true, 1},
	} {
		if got := uMinP(tc.n1, tc.n2, tc.twoSided); math.Abs(got-tc.want) > 1e-15 {
			t.Errorf("uMinP(%d, %d, %v) = %v; want %v", tc.n1, tc.n2, tc.twoSided, got, tc.want)
		}
	}
	// The formula must agree with the test itself.
	a, b := boots(1, 2, 3, 4, 5, 6), boots(7, 8, 9, 10, 11, 12)
	row := oneRow(t, buildWith(t, Options{}, side{"A", "a", bench, "ns/op", a}, side{"B", "b", bench, "ns/op", b}))
	if math.Abs(row.P-uMinP(6, 6, true)) > 1e-12 {
		t.Errorf("Build(6+6 separated).Rows[0].P = %v; want uMinP(6, 6, true) = %v", row.P, uMinP(6, 6, true))
	}
}

func TestMinBootsToDecide(t *testing.T) {
	for _, tc := range []struct {
		opts                Options
		rows                int
		wantSame, wantDiffs int
	}{
		{Options{}, 1, 3, 4},
		{Options{MaxBoots: 10}, 4, 4, 6},
		{Options{MaxBoots: 20}, 4, 4, 6},
		{Options{MaxBoots: 12, Alpha: 0.01}, 4, 5, 7},
	} {
		same, diff, err := minBootsToDecide(tc.opts, tc.rows)
		if err != nil || same != tc.wantSame || diff != tc.wantDiffs {
			t.Errorf("MinBootsToDecide(%+v, %d) = %d, %d, %v; want %d, %d, nil", tc.opts, tc.rows, same, diff, err, tc.wantSame, tc.wantDiffs)
		}
	}
}

// fourRows is a comparison of two lookups and the two controls; change
// multiplies B's lookups, drift B's noop.
func fourRows(t *testing.T, n int, change, drift float64, opts Options) *Report {
	t.Helper()
	var sides []side
	for i, s := range []string{"A", "B"} {
		c, d := 1.0, 1.0
		if s == "B" {
			c, d = change, drift
		}
		sides = append(sides,
			side{s, "k", "LPMTrie/op=lookup/keys=random/entries=10000", "insn/op", jitter(uint64(10+i), n, 1000*c, 0.0003)},
			side{s, "k", "LPMTrie/op=lookup/keys=sequential/entries=10000", "insn/op", jitter(uint64(20+i), n, 950*c, 0.0003)},
			side{s, "k", "LPMTrie/op=noop/entries=10000", "insn/op", jitter(uint64(30+i), n, 40*d, 0.0003)},
			side{s, "k", "LPMTrie/op=baseline/entries=10000", "insn/op", jitter(uint64(40+i), n, 90, 0.0003)},
		)
	}
	return buildWith(t, opts, sides...)
}

func TestControlsDrift(t *testing.T) {
	// noop +30 %: 12 insn/op, more than 1 % of the lookups (950 insn/op).
	rep := fourRows(t, 6, 1.10, 1.30, Options{})
	if !rep.EnvironmentDrift {
		t.Fatalf("Build(noop +30%%).EnvironmentDrift = false; want true")
	}
	if got := rep.Drifted(); len(got) != 1 || got[0].Benchmark != "LPMTrie/op=noop/entries=10000" {
		t.Errorf("Build(noop +30%%).Drifted() = %v; want the noop row", got)
	}
	if !hasNote(rep.Rows[2], "environment drift") {
		t.Errorf("Build(noop +30%%).Rows[2].Notes = %q; want \"environment drift\"", rep.Rows[2].Notes)
	}
	if rep.Rows[0].Verdict != Different {
		t.Errorf("Build(noop +30%%, lookup +10%%).Rows[0].Verdict = %v; want DIFFERENT (rows keep their verdicts)", rep.Rows[0].Verdict)
	}
	for _, f := range []FailOn{FailOnRegression, FailOnChange} {
		if got := rep.Outcome(f); got != Inconclusive {
			t.Errorf("Build(noop +30%%).Outcome(%v) = %v; want inconclusive", f, got)
		}
	}
	if rep.NeedMoreBoots(nil) {
		t.Errorf("Build(noop +30%%).NeedMoreBoots(nil) = true; want false: more boots do not undo drift")
	}

	// noop +13 % as from Debian 6.1 to 6.12 in instruction counts: 5
	// insn/op, under 1 % of every lookup. The control moved (the kernel's
	// loop overhead changed), but it cannot explain a verdict.
	rep = fourRows(t, 6, 0.83, 1.13, Options{})
	if rep.EnvironmentDrift || len(rep.Moved()) != 1 || len(rep.Drifted()) != 0 {
		t.Errorf("Build(noop +13%% = 5 insn/op).EnvironmentDrift, Moved, Drifted = %v, %d, %d; want false, 1, 0",
			rep.EnvironmentDrift, len(rep.Moved()), len(rep.Drifted()))
	}
	if !hasNote(rep.Rows[2], "too little to explain a verdict") {
		t.Errorf("Build(noop +13%%).Rows[2].Notes = %q; want \"too little to explain a verdict\"", rep.Rows[2].Notes)
	}
	if got := rep.Outcome(FailOnRegression); got != NoRegression {
		t.Errorf("Build(lookups -17%%, noop +13%%).Outcome(regression) = %v; want no regression", got)
	}

	// Controls that stay put: no drift, and they are marked.
	rep = fourRows(t, 6, 1.10, 1, Options{})
	if rep.EnvironmentDrift || !rep.HasControls() || !rep.Rows[2].Control || !rep.Rows[3].Control || rep.Rows[0].Control {
		t.Errorf("Build(controls steady) drift=%v hasControls=%v control flags %v %v %v; want false true true true false",
			rep.EnvironmentDrift, rep.HasControls(), rep.Rows[2].Control, rep.Rows[3].Control, rep.Rows[0].Control)
	}
	if got := rep.Outcome(FailOnRegression); got != Regression {
		t.Errorf("Build(lookup +10%%).Outcome(regression) = %v; want regression", got)
	}

	// No controls configured: the noop move is a change like any other.
	rep = fourRows(t, 6, 1, 1.30, Options{Controls: []string{}})
	if rep.EnvironmentDrift || rep.HasControls() {
		t.Errorf("Build(Controls: none).EnvironmentDrift, HasControls() = %v, %v; want false, false", rep.EnvironmentDrift, rep.HasControls())
	}
	if got := rep.Outcome(FailOnRegression); got != Regression {
		t.Errorf("Build(Controls: none, noop +30%%).Outcome(regression) = %v; want regression", got)
	}
}

func TestOutcome(t *testing.T) {
	for _, tc := range []struct {
		name       string
		n          int
		change     float64
		regression Outcome
		change_    Outcome
	}{
		{"same", 4, 1, NoRegression, NoRegression},
		{"slower", 6, 1.05, Regression, Regression},
		{"faster", 6, 0.95, NoRegression, Regression},
		// 4 boots: SAME is reachable, DIFFERENT is not (4 rows).
		{"slower, too few boots", 4, 1.05, Inconclusive, Inconclusive},
	} {
		rep := fourRows(t, tc.n, tc.change, 1, Options{MaxBoots: 10})
		if got := rep.Outcome(FailOnRegression); got != tc.regression {
			t.Errorf("Build(%s).Outcome(regression) = %v; want %v", tc.name, got, tc.regression)
		}
		if got := rep.Outcome(FailOnChange); got != tc.change_ {
			t.Errorf("Build(%s).Outcome(change) = %v; want %v", tc.name, got, tc.change_)
		}
	}

	// A unit without a known direction counts as worse either way.
	rep := buildWith(t, Options{},
		side{"A", "a", bench, "widgets", boots(10, 11, 12, 13)},
		side{"B", "b", bench, "widgets", boots(5, 6, 7, 8)})
	if got := rep.Outcome(FailOnRegression); got != Regression {
		t.Errorf("Build(widgets -45%%).Outcome(regression) = %v; want regression (direction unknown)", got)
	}
	// Rates: higher is better.
	rep = buildWith(t, Options{},
		side{"A", "a", bench, "ops/s", boots(10, 11, 12, 13)},
		side{"B", "b", bench, "ops/s", boots(5, 6, 7, 8)})
	if got := rep.Outcome(FailOnRegression); got != Regression {
		t.Errorf("Build(ops/s -45%%).Outcome(regression) = %v; want regression", got)
	}
}

func TestParseFailOn(t *testing.T) {
	for _, f := range []FailOn{FailOnRegression, FailOnChange} {
		if got, err := ParseFailOn(f.String()); got != f || err != nil {
			t.Errorf("ParseFailOn(%q) = %v, %v; want %v, nil", f.String(), got, err, f)
		}
	}
	if _, err := ParseFailOn("slower"); err == nil {
		t.Errorf("ParseFailOn(\"slower\") = nil error; want an error")
	}
}

func TestVerdictText(t *testing.T) {
	for _, v := range []Verdict{Unknown, Same, Different} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("json.Marshal(%v) = %v", v, err)
		}
		var got Verdict
		if err := json.Unmarshal(b, &got); err != nil || got != v {
			t.Errorf("json.Unmarshal(%s) = %v, %v; want %v, nil", b, got, err, v)
		}
	}
	var v Verdict
	if err := v.UnmarshalText([]byte("MAYBE")); err == nil {
		t.Errorf("UnmarshalText(MAYBE) = nil error; want an error")
	}
}

// TestAdaptiveLooks follows a run that adds boots: verdicts reached at a
// look are kept, each look spends only what the spending function allows,
// and the total never exceeds α.
func TestAdaptiveLooks(t *testing.T) {
	opts := Options{MaxBoots: 10}
	// Look 1 at 4 boots: identical controls are SAME, the lookups (+10 %)
	// cannot be DIFFERENT yet.
	rep1 := fourRows(t, 4, 1.10, 1, opts)
	if rep1.Rows[0].Verdict != Unknown || rep1.Rows[2].Verdict != Same {
		t.Fatalf("look 1 verdicts %v, %v; want UNKNOWN, SAME", rep1.Rows[0].Verdict, rep1.Rows[2].Verdict)
	}
	if !rep1.NeedMoreBoots(nil) {
		t.Fatalf("look 1 NeedMoreBoots(nil) = false; want true")
	}
	if rep1.Look.DifferentSpent != 0 || rep1.Look.SameSpent == 0 {
		t.Errorf("look 1 spent DIFFERENT %v, SAME %v; want 0 (out of reach), > 0", rep1.Look.DifferentSpent, rep1.Look.SameSpent)
	}
	if rep1.NeedMoreBoots(func(b string) bool { return strings.Contains(b, "noop") }) {
		t.Errorf("look 1 NeedMoreBoots(noop only) = true; want false, noop is decided")
	}

	opts.Previous = &rep1.Look
	rep2 := fourRows(t, 6, 1.10, 1, opts)
	if rep2.Look.Number != 2 || !slices.Equal(rep2.Look.History, []int{4, 6}) {
		t.Errorf("look 2 Number, History = %d, %v; want 2, [4 6]", rep2.Look.Number, rep2.Look.History)
	}
	if rep2.Rows[0].Verdict != Different || rep2.Rows[0].DecidedBoots != 6 {
		t.Errorf("look 2 lookup Verdict, DecidedBoots = %v, %d; want DIFFERENT, 6", rep2.Rows[0].Verdict, rep2.Rows[0].DecidedBoots)
	}
	if rep2.Rows[2].Verdict != Same || rep2.Rows[2].DecidedLook != 1 || rep2.Rows[2].DecidedBoots != 4 {
		t.Errorf("look 2 noop Verdict, DecidedLook, DecidedBoots = %v, %d, %d; want SAME, 1, 4 (kept)", rep2.Rows[2].Verdict, rep2.Rows[2].DecidedLook, rep2.Rows[2].DecidedBoots)
	}
	if len(rep2.Look.Decided) != 4 {
		t.Errorf("look 2 Decided = %v; want 4 decisions", rep2.Look.Decided)
	}
	if wantD := spentBy(0.05, 6, 10); math.Abs(rep2.Look.DifferentLevel-wantD) > 1e-15 {
		t.Errorf("look 2 DifferentLevel = %v; want %v (nothing spent at look 1)", rep2.Look.DifferentLevel, wantD)
	}
	if wantS := spentBy(0.05, 6, 10) - spentBy(0.05, 4, 10); math.Abs(rep2.Look.SameLevel-wantS) > 1e-15 {
		t.Errorf("look 2 SameLevel = %v; want %v", rep2.Look.SameLevel, wantS)
	}

	// A verdict is final even if the next look's data disagree.
	opts.Previous = &rep2.Look
	rep3 := fourRows(t, 8, 1.0, 1, opts)
	if rep3.Rows[0].Verdict != Different || !hasNote(rep3.Rows[0], "DIFFERENT since look 2 at 6 boots per side") {
		t.Errorf("look 3 lookup Verdict, Notes = %v, %q; want DIFFERENT since look 2", rep3.Rows[0].Verdict, rep3.Rows[0].Notes)
	}

	// Looking again at the same boots spends nothing more.
	opts.Previous = &rep3.Look
	rep4 := fourRows(t, 8, 1.0, 1, opts)
	if rep4.Look.DifferentLevel != 0 || rep4.Look.SameLevel != 0 {
		t.Errorf("look 4 at unchanged boots levels = %v, %v; want 0, 0", rep4.Look.DifferentLevel, rep4.Look.SameLevel)
	}

	// Past the cap, nothing is left: the whole run spent at most α.
	opts.Previous = &rep4.Look
	rep5 := fourRows(t, 30, 1.0, 1, opts)
	if s := rep5.Look.DifferentSpent; s > 0.05+1e-12 {
		t.Errorf("look 5 DifferentSpent = %v; want <= α = 0.05", s)
	}
	if s := rep5.Look.SameSpent; s > 0.05+1e-12 {
		t.Errorf("look 5 SameSpent = %v; want <= α = 0.05", s)
	}
}

func TestOptionsErrors(t *testing.T) {
	rs := results(t,
		side{"A", "a", bench, "insn/op", spread(4, 10, 1)},
		side{"B", "b", bench, "insn/op", spread(4, 20, 1)})
	for _, opts := range []Options{
		{MinEffect: -0.01},
		{MinEffect: 1},
		{MaxBoots: -1},
		{Previous: &Look{MaxBoots: 10}},               // no MaxBoots
		{MaxBoots: 12, Previous: &Look{MaxBoots: 10}}, // changed cap
	} {
		if _, err := Build(rs, opts); err == nil {
			t.Errorf("Build(…, %+v) = nil error; want an error", opts)
		}
	}
}

func TestInstructions(t *testing.T) {
	rep := buildWith(t, Options{},
		side{"A", "a", bench, "insn/op", boots(1, 2, 3, 4)},
		side{"B", "b", bench, "insn/op", boots(1, 2, 3, 4)})
	if !rep.Instructions() {
		t.Errorf("Build(insn/op).Instructions() = false; want true")
	}
	rep = buildWith(t, Options{},
		side{"A", "a", bench, "ns/op", boots(1, 2, 3, 4)},
		side{"B", "b", bench, "ns/op", boots(1, 2, 3, 4)})
	if rep.Instructions() {
		t.Errorf("Build(ns/op).Instructions() = true; want false")
	}
}

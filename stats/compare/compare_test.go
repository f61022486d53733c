package compare

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/aclements/go-moremath/stats"
	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
)

// side describes the results of one benchmark on one side, boot by boot.
type side struct {
	name, kernel string
	bench, unit  string
	boots        [][]float64 // samples of boot 1, 2, …
}

// text returns s in the benchfmt format the host writes.
func (s side) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "side: %s\n", s.name)
	if s.kernel != "" {
		fmt.Fprintf(&b, "kernel: %s\n", s.kernel)
	}
	for i, samples := range s.boots {
		fmt.Fprintf(&b, "boot: %d\n", i+1)
		for _, v := range samples {
			fmt.Fprintf(&b, "Benchmark%s 1000 %v %s\n", s.bench, v, s.unit)
		}
	}
	return b.String()
}

// parse reads benchfmt text as Build's callers do.
func parse(t *testing.T, text string) []*benchfmt.Result {
	t.Helper()
	r := benchfmt.NewReader(strings.NewReader(text), "test.txt")
	var out []*benchfmt.Result
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.Result:
			out = append(out, rec.Clone()) // the Reader reuses its Result
		case *benchfmt.SyntaxError:
			t.Fatalf("parse: %v", rec)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatalf("parse: %v", err)
	}
	return out
}

// results parses the text of all sides, in order.
func results(t *testing.T, sides ...side) []*benchfmt.Result {
	t.Helper()
	var b strings.Builder
	for _, s := range sides {
		b.WriteString(s.text())
	}
	return parse(t, b.String())
}

// repeat returns n boots of the given samples.
func repeat(n int, samples ...float64) [][]float64 {
	boots := make([][]float64, n)
	for i := range boots {
		boots[i] = samples
	}
	return boots
}

// spread returns boots whose medians are base, base+step, …
func spread(n int, base, step float64) [][]float64 {
	boots := make([][]float64, n)
	for i := range boots {
		m := base + float64(i)*step
		boots[i] = []float64{m - 1, m, m + 1}
	}
	return boots
}

const bench = "LPMTrie/op=lookup/keys=random/entries=10000"

func mustBuild(t *testing.T, rs []*benchfmt.Result) *Report {
	t.Helper()
	rep, err := Build(rs, Options{})
	if err != nil {
		t.Fatalf("Build(%d results) = %v; want no error", len(rs), err)
	}
	return rep
}

func oneRow(t *testing.T, rep *Report) Row {
	t.Helper()
	if len(rep.Rows) != 1 {
		t.Fatalf("Build(…).Rows has %d rows; want 1", len(rep.Rows))
	}
	return rep.Rows[0]
}

func hasNote(row Row, substr string) bool {
	return slices.ContainsFunc(row.Notes, func(n string) bool { return strings.Contains(n, substr) })
}

func TestBuildDifferent(t *testing.T) {
	for _, tc := range []struct {
		name       string
		a, b       float64 // base of the boot medians
		wantPos    bool
		wantDeltaA float64 // approximate DeltaPct
	}{
		{"B slower", 1000, 1100, true, 10},
		{"B faster", 1065, 838, false, -21.3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := mustBuild(t, results(t,
				side{"A", "6.1.0-57-cloud-amd64", bench, "insn/op", spread(5, tc.a, 2)},
				side{"B", "6.12.117+deb12-cloud-amd64", bench, "insn/op", spread(5, tc.b, 2)},
			))
			row := oneRow(t, rep)
			if !row.Significant || row.P > 0.05 {
				t.Errorf("Build(%v vs %v).Rows[0] Significant, P = %v, %v; want true, <= 0.05", tc.a, tc.b, row.Significant, row.P)
			}
			if (row.DeltaPct > 0) != tc.wantPos || math.Abs(row.DeltaPct-tc.wantDeltaA) > 0.5 {
				t.Errorf("Build(%v vs %v).Rows[0].DeltaPct = %v; want about %v", tc.a, tc.b, row.DeltaPct, tc.wantDeltaA)
			}
			if got, want := row.A.Center, tc.a+4; got != want {
				t.Errorf("Build(…).Rows[0].A.Center = %v; want %v (median of per-boot medians)", got, want)
			}
			if row.A.Boots != 5 || row.A.Samples != 15 {
				t.Errorf("Build(…).Rows[0].A Boots, Samples = %d, %d; want 5, 15", row.A.Boots, row.A.Samples)
			}
			if hasNote(row, "before any difference") {
				t.Errorf("Build(…).Rows[0].Notes = %q; want no minimum-boots note with 5+5 boots", row.Notes)
			}
			if rep.A.Kernel != "6.1.0-57-cloud-amd64" || rep.B.Kernel != "6.12.117+deb12-cloud-amd64" {
				t.Errorf("Build(…) kernels = %q, %q; want the kernel keys", rep.A.Kernel, rep.B.Kernel)
			}
		})
	}
}

func TestBuildSame(t *testing.T) {
	boots := repeat(6, 980, 980, 981)
	rep := mustBuild(t, results(t,
		side{"A", "6.1.0-57-cloud-amd64", bench, "insn/op", boots},
		side{"B", "6.1.0-57-cloud-amd64", bench, "insn/op", boots},
	))
	row := oneRow(t, rep)
	if row.Significant {
		t.Errorf("Build(same values).Rows[0].Significant = true (p=%v); want false", row.P)
	}
	if row.DeltaPct != 0 {
		t.Errorf("Build(same values).Rows[0].DeltaPct = %v; want 0", row.DeltaPct)
	}
	if !hasNote(row, "all samples are equal") {
		t.Errorf("Build(same values).Rows[0].Notes = %q; want benchmath's \"all samples are equal\"", row.Notes)
	}
}

// TestBuildSameNoisy compares a kernel with itself through noisy boots drawn
// from the same values in a different order: never DIFFERENT.
func TestBuildSameNoisy(t *testing.T) {
	a := [][]float64{{630}, {640}, {622}, {651}, {633}, {628}, {645}, {637}}
	b := [][]float64{{641}, {629}, {650}, {623}, {636}, {646}, {632}, {638}}
	row := oneRow(t, mustBuild(t, results(t,
		side{"A", "k", bench, "ns/op", a},
		side{"B", "k", bench, "ns/op", b},
	)))
	if row.Significant || row.P < 0.5 {
		t.Errorf("Build(interleaved boots).Rows[0] Significant, P = %v, %v; want false, >= 0.5", row.Significant, row.P)
	}
}

func TestBuildTooFewBoots(t *testing.T) {
	for _, tc := range []struct {
		boots    int
		wantSig  bool
		wantNote bool
	}{
		{1, false, true},
		{3, false, true},
		{4, true, false},
	} {
		note := fmt.Sprintf("DIFFERENT out of reach at %d+%d boots", tc.boots, tc.boots)
		row := oneRow(t, mustBuild(t, results(t,
			side{"A", "a", bench, "insn/op", spread(tc.boots, 1000, 1)},
			side{"B", "b", bench, "insn/op", spread(tc.boots, 2000, 1)},
		)))
		if row.Significant != tc.wantSig {
			t.Errorf("Build(%d+%d boots, separated).Rows[0].Significant = %v (p=%v); want %v", tc.boots, tc.boots, row.Significant, row.P, tc.wantSig)
		}
		if got := hasNote(row, note); got != tc.wantNote {
			t.Errorf("Build(%d+%d boots).Rows[0].Notes = %q; want note %q: %v", tc.boots, tc.boots, row.Notes, note, tc.wantNote)
		}
		if want := map[bool]Verdict{true: Different, false: Unknown}[tc.wantSig]; row.Verdict != want {
			t.Errorf("Build(%d+%d boots, separated by 100%%).Rows[0].Verdict = %v; want %v", tc.boots, tc.boots, row.Verdict, want)
		}
	}
}

func TestBuildIntervalNote(t *testing.T) {
	for _, tc := range []struct {
		boots    int
		wantNote bool
	}{{5, true}, {6, false}} {
		row := oneRow(t, mustBuild(t, results(t,
			side{"A", "a", bench, "insn/op", spread(tc.boots, 1000, 1)},
			side{"B", "b", bench, "insn/op", spread(tc.boots, 1000, 1)},
		)))
		if got := hasNote(row, "need ≥6 boots per side for a 95% confidence interval"); got != tc.wantNote {
			t.Errorf("Build(%d boots).Rows[0].Notes = %q; want interval note: %v", tc.boots, row.Notes, tc.wantNote)
		}
		if got := math.IsInf(row.A.CIPct(), 1); got != tc.wantNote {
			t.Errorf("Build(%d boots).Rows[0].A.CIPct() = %v; want infinite: %v", tc.boots, row.A.CIPct(), tc.wantNote)
		}
	}
}

// TestBuildPerBootMedians checks that a boot counts once however many samples
// it has. Side A has one boot with 50 low samples and four ordinary boots; as
// 54 samples against 5 they would differ, as 5 boots against 5 they do not.
func TestBuildPerBootMedians(t *testing.T) {
	lucky := slices.Repeat([]float64{900}, 50)
	a := [][]float64{lucky, {1000}, {1020}, {1040}, {1060}}
	b := [][]float64{{990}, {1010}, {1030}, {1050}, {1070}}

	// The test only means something if counting samples as units would
	// call this significant.
	thr := benchmath.DefaultThresholds
	cmp := benchmath.AssumeNothing.Compare(benchmath.NewSample(slices.Concat(a...), &thr), benchmath.NewSample(slices.Concat(b...), &thr))
	if cmp.P > 0.05 {
		t.Fatalf("AssumeNothing.Compare(samples as units) p = %v; want <= 0.05 (the case is too weak to test anything)", cmp.P)
	}

	row := oneRow(t, mustBuild(t, results(t,
		side{"A", "a", bench, "insn/op", a},
		side{"B", "b", bench, "insn/op", b},
	)))
	if row.Significant {
		t.Errorf("Build(one boot with 50 samples).Rows[0].Significant = true (p=%v); want false: boots are the unit", row.P)
	}
	if row.A.Boots != 5 || row.A.Samples != 54 {
		t.Errorf("Build(…).Rows[0].A Boots, Samples = %d, %d; want 5, 54", row.A.Boots, row.A.Samples)
	}
	var medians []float64
	for _, b := range row.A.PerBoot {
		medians = append(medians, b.Median)
	}
	if want := []float64{900, 1000, 1020, 1040, 1060}; !slices.Equal(medians, want) {
		t.Errorf("Build(…).Rows[0].A.PerBoot medians = %v; want %v", medians, want)
	}
	if got, want := row.A.Center, 1020.0; got != want {
		t.Errorf("Build(…).Rows[0].A.Center = %v; want %v", got, want)
	}
}

func TestBuildWithinBoot(t *testing.T) {
	a := [][]float64{
		{100, 101, 102}, // 2 %
		{200, 201, 203}, // 1.5 %
		{50, 50, 50},    // 0 %
		{300},           // one sample: no spread, left out
	}
	row := oneRow(t, mustBuild(t, results(t,
		side{"A", "a", bench, "insn/op", a},
		side{"B", "b", bench, "insn/op", repeat(4, 7)},
	)))
	if got, want := row.A.WithinBoot, 3.0/201; math.Abs(got-want) > 1e-12 {
		t.Errorf("Build(…).Rows[0].A.WithinBoot = %v; want %v (median of 2%%, 1.49%%, 0%%)", got, want)
	}
	if got, want := row.A.PerBoot[0].Spread, 2.0/101; math.Abs(got-want) > 1e-12 {
		t.Errorf("Build(…).Rows[0].A.PerBoot[0].Spread = %v; want %v", got, want)
	}
	if got := row.B.WithinBoot; got != 0 {
		t.Errorf("Build(one sample per boot).Rows[0].B.WithinBoot = %v; want 0", got)
	}
}

func TestBuildOneSided(t *testing.T) {
	rep := mustBuild(t, results(t,
		side{"A", "6.1", bench, "insn/op", spread(5, 1000, 1)},
		side{"A", "6.1", "LPMTrie/op=free", "insn/op", spread(5, 1000, 1)},
		side{"B", "6.12", bench, "insn/op", spread(5, 1000, 1)},
	))
	if len(rep.Rows) != 2 {
		t.Fatalf("Build(…).Rows has %d rows; want 2", len(rep.Rows))
	}
	row := rep.Rows[1]
	if row.Benchmark != "LPMTrie/op=free" || row.Compared() || row.Significant || row.P != 1 || row.B.Boots != 0 {
		t.Errorf("Build(…).Rows[1] = %q compared=%v significant=%v p=%v B.Boots=%d; want %q false false 1 0",
			row.Benchmark, row.Compared(), row.Significant, row.P, row.B.Boots, "LPMTrie/op=free")
	}
	if !hasNote(row, "only on side A: 6.1") {
		t.Errorf("Build(…).Rows[1].Notes = %q; want \"only on side A: 6.1\"", row.Notes)
	}
}

// TestBuildUnits checks that units are never mixed and that rows keep the
// order of first appearance.
func TestBuildUnits(t *testing.T) {
	rep := mustBuild(t, results(t,
		side{"A", "a", "Z", "insn/op", spread(4, 10, 1)},
		side{"A", "a", "Y", "ns/op", spread(4, 10, 1)},
		side{"B", "b", "Z", "insn/op", spread(4, 10, 1)},
		side{"B", "b", "Y", "insn/op", spread(4, 10, 1)},
	))
	var got []string
	for _, row := range rep.Rows {
		got = append(got, fmt.Sprintf("%s %s %d+%d", row.Benchmark, row.Unit, row.A.Boots, row.B.Boots))
	}
	want := []string{"Z insn/op 4+4", "Y sec/op 4+0", "Y insn/op 0+4"}
	if !slices.Equal(got, want) {
		t.Errorf("Build(…) rows = %q; want %q", got, want)
	}
}

func TestBuildErrors(t *testing.T) {
	good := side{"B", "b", bench, "insn/op", spread(4, 10, 1)}.text()
	for _, tc := range []struct {
		name, text, want string
	}{
		{"no results", "", "no results"},
		{"side A missing", good, "no results for side A"},
		{"side B missing", side{"A", "a", bench, "insn/op", spread(4, 10, 1)}.text(), "no results for side B"},
		{"no side key", "boot: 1\nBenchmarkX 1 5 insn/op\n" + good, `test.txt:2: result has no "side" key`},
		{"bad side", "side: C\nboot: 1\nBenchmarkX 1 5 insn/op\n" + good, `side is "C"`},
		{"no boot key", "side: A\nBenchmarkX 1 5 insn/op\n" + good, `no "boot" key`},
		{"two kernels", good + "kernel: c\nboot: 9\nBenchmarkX 1 5 insn/op\n", "side B has results from kernels b and c"},
	} {
		var rs []*benchfmt.Result
		if tc.text != "" {
			rs = parse(t, tc.text)
		}
		_, err := Build(rs, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Build(%s) = %v; want error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestBuildOptions(t *testing.T) {
	rs := results(t,
		side{"A", "a", bench, "insn/op", spread(4, 10, 1)},
		side{"B", "b", bench, "insn/op", spread(4, 20, 1)},
	)
	for _, opts := range []Options{{Alpha: 1.5}, {Alpha: -0.1}, {Confidence: 1}} {
		if _, err := Build(rs, opts); err == nil {
			t.Errorf("Build(…, %+v) = nil error; want an error", opts)
		}
	}
	// At α=0.01, 4+4 boots can never be significant (minimum p is 0.029).
	rep, err := Build(rs, Options{Alpha: 0.01})
	if err != nil {
		t.Fatalf("Build(…, α=0.01) = %v; want no error", err)
	}
	if row := rep.Rows[0]; row.Significant || row.Verdict != Unknown || !hasNote(row, "DIFFERENT out of reach at 4+4 boots") {
		t.Errorf("Build(4+4 boots, α=0.01).Rows[0] Significant, Verdict, Notes = %v, %v, %q; want false, UNKNOWN, \"DIFFERENT out of reach at 4+4 boots\"",
			row.Significant, row.Verdict, row.Notes)
	}
}

func TestMinBoots(t *testing.T) {
	for _, tc := range []struct {
		alpha float64
		want  int
	}{{0.05, 4}, {0.01, 5}, {0.11, 3}} {
		if got := minBoots(tc.alpha, true); got != tc.want {
			t.Errorf("minBoots(%v, two-sided) = %d; want %d", tc.alpha, got, tc.want)
		}
		if n := tc.want; !canBeSignificant(n, n, tc.alpha) || canBeSignificant(n-1, n-1, tc.alpha) {
			t.Errorf("canBeSignificant at α=%v: want first true at %d+%d boots", tc.alpha, n, n)
		}
	}
	if got, want := minBootsForInterval(0.95), 6; got != want {
		t.Errorf("MinBootsForInterval(0.95) = %d; want %d", got, want)
	}
}

// TestCanBeSignificantAgreesWithBenchmath checks the closed form behind
// canBeSignificant (uMinP) against the U test itself, over every n1, n2 up
// to maxBoots: benchmath's p for two perfectly separated samples (what
// canBeSignificant computed before) and moremath's one-sided p are the
// closed form's to 1e-9, and at every level canBeSignificant says what
// benchmath's p says under the verdicts' comparison (atMost). Compared
// strictly, the two differ only where the exact smallest p equals the level
// and the U test's sum lands an ulp above it.
func TestCanBeSignificantAgreesWithBenchmath(t *testing.T) {
	alphas := []float64{0.001, 0.005, 0.01, 0.02, 0.025, 0.05, 0.1, 0.2}
	for n1 := 0; n1 <= maxBoots; n1++ {
		for n2 := 0; n2 <= maxBoots; n2++ {
			two, one := separatedP(n1, n2)
			if got := uMinP(n1, n2, true); math.Abs(got-two) > 1e-9*two {
				t.Errorf("uMinP(%d, %d, two-sided) = %g; benchmath gives %g", n1, n2, got, two)
			}
			if got := uMinP(n1, n2, false); math.Abs(got-one) > 1e-9*one {
				t.Errorf("uMinP(%d, %d, one-sided) = %g; the one-sided U test gives %g", n1, n2, got, one)
			}
			for _, alpha := range alphas {
				got := canBeSignificant(n1, n2, alpha)
				if want := n1 > 0 && n2 > 0 && atMost(two, alpha); got != want {
					t.Errorf("canBeSignificant(%d, %d, %v) = %v; benchmath's p %g says %v", n1, n2, alpha, got, two, want)
				}
				if strict := n1 > 0 && n2 > 0 && two <= alpha; got != strict && uMinP(n1, n2, true) != alpha {
					t.Errorf("canBeSignificant(%d, %d, %v) = %v, benchmath's p %g <= α is %v, and the smallest p is not α", n1, n2, alpha, got, two, strict)
				}
			}
		}
	}
}

// separatedP returns the U test's two-sided p-value (benchmath's) and
// one-sided p-value for n1 values all below n2 others; 1 for an empty side.
func separatedP(n1, n2 int) (two, one float64) {
	if n1 == 0 || n2 == 0 {
		return 1, 1
	}
	lo, hi := make([]float64, n1), make([]float64, n2)
	for i := range lo {
		lo[i] = float64(i)
	}
	for i := range hi {
		hi[i] = float64(n1 + i)
	}
	thr := benchmath.Thresholds{CompareAlpha: 0.05}
	two = benchmath.AssumeNothing.Compare(benchmath.NewSample(lo, &thr), benchmath.NewSample(hi, &thr)).P
	res, err := stats.MannWhitneyUTest(lo, hi, stats.LocationLess)
	if err != nil {
		panic(err)
	}
	return two, res.P
}

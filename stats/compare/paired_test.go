package compare

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/wire"
	"golang.org/x/perf/benchfmt"
)

// pairedRun simulates a paired run: boot i of A and boot i of B run at the
// same time on one host CPU, so a host factor drawn per pair (uniform in
// [1−host, 1+host]) multiplies both alike, and only the noise of each boot
// (ratio/√2 per side, so ln(B/A) has about ratio) and of each sample
// separates them.
type pairedRun struct {
	benches []simBench
	unit    string
	host    float64
	ratio   float64
	// burst is the chance that one boot of a pair (either side, at random)
	// runs 2 % slow throughout: a symmetric heavy tail for ln(B/A).
	burst   float64
	samples int
}

// tcgPaired is TCG wall time on a shared host, paired: ±15 % host state
// per pair, 0.3 % left in the ratio.
var tcgPaired = pairedRun{benches: selfCompare, unit: "sec/op", host: 0.15, ratio: 0.003, samples: 5}

// pair returns the results of pair n, leaving out side skip if it is set.
func (r pairedRun) pair(rng *rand.Rand, n int, skip string) []*benchfmt.Result {
	h := 1 + r.host*(2*rng.Float64()-1)
	sides := []string{SideA, SideB}
	if rng.IntN(2) == 0 {
		sides[0], sides[1] = SideB, SideA
	}
	var out []*benchfmt.Result
	for _, side := range sides {
		slow := 0.0
		if rng.Float64() < r.burst {
			slow = math.Log(1.02)
		}
		for _, b := range r.benches {
			v := b.value * h
			if side == SideB {
				v *= b.change
			}
			boot := r.ratio/math.Sqrt2*rng.NormFloat64() + slow
			for range r.samples {
				x := v * math.Exp(boot+0.001*rng.NormFloat64())
				if side == skip {
					continue
				}
				out = append(out, result(side, strconv.Itoa(n), strconv.Itoa(n), b.name, r.unit, x))
			}
		}
	}
	return out
}

// result is one benchfmt result with the keys of a paired run; pair ""
// leaves the pair key out.
func result(side, boot, pair, bench, unit string, v float64) *benchfmt.Result {
	res := &benchfmt.Result{Name: benchfmt.Name(bench), Iters: 1000}
	res.SetConfig(wire.KeySide, side)
	res.SetConfig(wire.KeyKernel, "k")
	res.SetConfig(wire.KeyBoot, boot)
	if pair != "" {
		res.SetConfig(wire.KeyPair, pair)
	}
	res.Values = []benchfmt.Value{{Value: v, Unit: unit}}
	return res
}

// pairs returns n simulated pairs.
func (r pairedRun) pairs(rng *rand.Rand, n int) []*benchfmt.Result {
	var out []*benchfmt.Result
	for i := 1; i <= n; i++ {
		out = append(out, r.pair(rng, i, "")...)
	}
	return out
}

// run is an adaptive paired comparison from start pairs, adding step while
// a non-control row is undecided, up to max. It returns the last report and
// whether some row was DIFFERENT, or had p <= α, at some look.
func (r pairedRun) run(t testing.TB, rng *rand.Rand, start, step, max int) (final *Report, anyDifferent, anyRawSig bool) {
	t.Helper()
	opts := Options{MaxBoots: max}
	results := r.pairs(rng, start)
	n := start
	for {
		rep, err := Build(results, opts)
		if err != nil {
			t.Fatalf("Build(%d simulated pairs) = %v", n, err)
		}
		if !rep.Paired {
			t.Fatalf("Build(%d simulated pairs).Paired = false; want true", n)
		}
		for _, row := range rep.Rows {
			anyDifferent = anyDifferent || row.Verdict == Different
			anyRawSig = anyRawSig || row.Significant
		}
		if n >= max || !rep.NeedMoreBoots(nil) {
			return rep, anyDifferent, anyRawSig
		}
		opts.Previous = &rep.Look
		for range min(step, max-n) {
			n++
			results = append(results, r.pair(rng, n, "")...)
		}
	}
}

// unpair returns copies of results without the pair key.
func unpair(results []*benchfmt.Result) []*benchfmt.Result {
	out := make([]*benchfmt.Result, len(results))
	for i, r := range results {
		out[i] = r.Clone()
		out[i].SetConfig(wire.KeyPair, "")
	}
	return out
}

// TestPairedSame: a kernel compared with itself under ±15 % host state per
// pair and 0.3 % noise in the ratio is SAME within 6 to 10 pairs, where the
// same boots unpaired stay UNKNOWN.
func TestPairedSame(t *testing.T) {
	rng := rand.New(rand.NewPCG(2026, 11))
	for i := range 5 {
		rep, anyDifferent, _ := tcgPaired.run(t, rng, 6, 2, 10)
		if anyDifferent {
			t.Errorf("run %d: some row DIFFERENT at some look; want none", i)
		}
		for _, row := range rep.Rows {
			if row.Verdict != Same || row.DecidedBoots < 6 || row.DecidedBoots > 10 || !row.Paired {
				t.Errorf("run %d: %s Verdict, DecidedBoots, Paired = %v, %d, %v (notes %q); want SAME at 6 to 10 pairs",
					i, row.Benchmark, row.Verdict, row.DecidedBoots, row.Paired, row.Notes)
			}
		}
		if got := rep.Outcome(FailOnRegression); got != NoRegression {
			t.Errorf("run %d: Outcome = %v; want no regression", i, got)
		}
	}

	// The same kind of data, ten pairs at once, with and without the keys.
	results := tcgPaired.pairs(rand.New(rand.NewPCG(2026, 12)), 10)
	opts := Options{MaxBoots: 10}
	paired, err := Build(results, opts)
	if err != nil {
		t.Fatalf("Build(10 pairs) = %v", err)
	}
	unpaired, err := Build(unpair(results), opts)
	if err != nil {
		t.Fatalf("Build(10 pairs without pair keys) = %v", err)
	}
	if unpaired.Paired {
		t.Errorf("Build(no pair keys).Paired = true; want false")
	}
	for i := range paired.Rows {
		p, u := paired.Rows[i], unpaired.Rows[i]
		if p.Verdict != Same || p.Pairs != 10 {
			t.Errorf("paired %s Verdict, Pairs = %v, %d (PSame %.3g); want SAME, 10", p.Benchmark, p.Verdict, p.Pairs, p.PSame)
		}
		if u.Verdict != Unknown {
			t.Errorf("unpaired %s Verdict = %v (PSame %.3g); want UNKNOWN: ±15 %% host state hides 1 %%", u.Benchmark, u.Verdict, u.PSame)
		}
		if math.Abs(p.DeltaPct) > 0.5 {
			t.Errorf("paired %s DeltaPct = %.2f; want within ±0.5", p.Benchmark, p.DeltaPct)
		}
	}
}

// TestPairedDifferent: a 5 % change under the same host noise is DIFFERENT
// with the right sign at the first look where DIFFERENT is reachable.
func TestPairedDifferent(t *testing.T) {
	benches := slices.Clone(selfCompare)
	benches[0].change, benches[1].change = 1.05, 0.95
	run := tcgPaired
	run.benches = benches
	opts := Options{MaxBoots: 10}
	_, want, err := minPairsToDecide(opts, len(benches))
	if err != nil || want != 8 {
		t.Fatalf("MinPairsToDecide(%+v, 4) DIFFERENT = %d, %v; want 8", opts, want, err)
	}
	rng := rand.New(rand.NewPCG(2026, 13))
	for i := range 5 {
		rep, _, _ := run.run(t, rng, want, 1, 10)
		for j, wantDelta := range []float64{5, -5} {
			row := rep.Rows[j]
			if row.Verdict != Different || row.DecidedBoots != want || math.Abs(row.DeltaPct-wantDelta) > 0.5 {
				t.Errorf("run %d: %s Verdict, DecidedBoots, DeltaPct = %v, %d, %+.2f; want DIFFERENT, %d, about %+v",
					i, row.Benchmark, row.Verdict, row.DecidedBoots, row.DeltaPct, want, wantDelta)
			}
			if want := j == 0; row.Worse() != want {
				t.Errorf("run %d: %s Worse() = %v; want %v", i, row.Benchmark, row.Worse(), want)
			}
		}
		for _, row := range rep.Rows[2:] {
			if row.Verdict == Different {
				t.Errorf("run %d: control %s DIFFERENT (Δ %+.2f%%); want not", i, row.Benchmark, row.DeltaPct)
			}
		}
		if got := rep.Outcome(FailOnRegression); got != Regression {
			t.Errorf("run %d: Outcome = %v; want regression", i, got)
		}
		// Every one of 8 pairs falls: the signed-rank test's smallest p, 2/2^8.
		if row := rep.Rows[0]; row.P != 2.0/256 || row.Pairs != 8 {
			t.Errorf("run %d: Rows[0] P, Pairs = %v, %d; want 2/256 = 0.0078, 8", i, row.P, row.Pairs)
		}
	}
}

// pairedSide writes boots of one side with a pair per boot.
func pairedSide(name, bench, unit string, pairs []string, boots [][]float64) []*benchfmt.Result {
	var out []*benchfmt.Result
	for i, samples := range boots {
		for _, v := range samples {
			out = append(out, result(name, strconv.Itoa(i+1), pairs[i], bench, unit, v))
		}
	}
	return out
}

// numbered returns "1", "2", … "n".
func numbered(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(i + 1)
	}
	return out
}

func TestPairedIdentical(t *testing.T) {
	b := repeat(6, 980, 980, 981)
	rs := append(pairedSide(SideA, bench, "insn/op", numbered(6), b), pairedSide(SideB, bench, "insn/op", numbered(6), b)...)
	rep := mustBuild(t, rs)
	row := oneRow(t, rep)
	if row.Verdict != Same || row.P != 1 || row.DeltaPct != 0 || row.Pairs != 6 || row.PSame != 1.0/64 {
		t.Errorf("Build(identical pairs).Rows[0] Verdict, P, DeltaPct, Pairs, PSame = %v, %v, %v, %d, %v; want SAME, 1, 0, 6, 1/64",
			row.Verdict, row.P, row.DeltaPct, row.Pairs, row.PSame)
	}
}

func TestPairedTooFewPairs(t *testing.T) {
	a := [][]float64{{1000}, {1100}, {900}}
	b := [][]float64{{1200}, {1320}, {1080}} // +20 % in every pair
	rs := append(pairedSide(SideA, bench, "ns/op", numbered(3), a), pairedSide(SideB, bench, "ns/op", numbered(3), b)...)
	row := oneRow(t, mustBuild(t, rs))
	if row.Verdict != Unknown || row.Pairs != 3 {
		t.Errorf("Build(3 pairs).Rows[0] Verdict, Pairs = %v, %d; want UNKNOWN, 3", row.Verdict, row.Pairs)
	}
	if !hasNote(row, "DIFFERENT out of reach at 3 pairs (smallest possible p 0.25") {
		t.Errorf("Build(3 pairs).Rows[0].Notes = %q; want DIFFERENT out of reach at 3 pairs", row.Notes)
	}
	if !row.Undecided() || row.NeedFor != Different || row.BootsNeeded != 6 {
		t.Errorf("Build(3 pairs).Rows[0] Undecided, NeedFor, BootsNeeded = %v, %v, %d; want true, DIFFERENT, 6 pairs (the discrete floor)",
			row.Undecided(), row.NeedFor, row.BootsNeeded)
	}
	if math.Abs(row.DeltaPct-20) > 1e-9 {
		t.Errorf("Build(3 pairs).Rows[0].DeltaPct = %v; want 20 (every pair +20 %%)", row.DeltaPct)
	}
}

func TestPairedIncomplete(t *testing.T) {
	a := jitter(1, 7, 1000, 0.1)
	b := slices.Clone(a)
	b = append(b[:2], b[3:]...) // pair 3 lost its B boot
	pairsB := slices.Delete(numbered(7), 2, 3)
	rs := append(pairedSide(SideA, bench, "ns/op", numbered(7), a), pairedSide(SideB, bench, "ns/op", pairsB, b)...)
	rep := mustBuild(t, rs)
	row := oneRow(t, rep)
	if row.Pairs != 6 || row.A.Boots != 7 || row.B.Boots != 6 {
		t.Errorf("Build(pair 3 incomplete).Rows[0] Pairs, A.Boots, B.Boots = %d, %d, %d; want 6, 7, 6", row.Pairs, row.A.Boots, row.B.Boots)
	}
	if !slices.Contains(row.Notes, "pair 3: only side A delivered; left out") {
		t.Errorf("Build(pair 3 incomplete).Rows[0].Notes = %q; want \"pair 3: only side A delivered; left out\"", row.Notes)
	}
	if row.Verdict != Same || row.DeltaPct != 0 || rep.Look.Boots != 6 {
		t.Errorf("Build(pair 3 incomplete) Verdict, DeltaPct, Look.Boots = %v, %v, %d; want SAME, 0, 6", row.Verdict, row.DeltaPct, rep.Look.Boots)
	}
	if row.A.PerBoot[2].Pair != "3" || row.B.PerBoot[2].Pair != "4" {
		t.Errorf("Build(…) PerBoot[2].Pair = %q, %q; want 3, 4", row.A.PerBoot[2].Pair, row.B.PerBoot[2].Pair)
	}

	// Side B missing a benchmark in every pair: not compared.
	rs = append(pairedSide(SideA, bench, "ns/op", numbered(2), a[:2]), pairedSide(SideB, "other", "ns/op", numbered(2), a[:2])...)
	rep = mustBuild(t, rs)
	if row := rep.Rows[0]; row.Compared() || row.A.Boots != 2 || row.B.Boots != 0 || row.Undecided() {
		t.Errorf("Build(A-only benchmark) Compared, A.Boots, B.Boots, Undecided = %v, %d, %d, %v; want false, 2, 0, false",
			row.Compared(), row.A.Boots, row.B.Boots, row.Undecided())
	}
}

// TestPairedNonPositive: a pair with a median of zero is left out.
func TestPairedNonPositive(t *testing.T) {
	a := [][]float64{{0}, {10}, {10}, {10}, {10}, {10}, {10}}
	rs := append(pairedSide(SideA, bench, "B/op", numbered(7), a), pairedSide(SideB, bench, "B/op", numbered(7), a)...)
	row := oneRow(t, mustBuild(t, rs))
	if row.Pairs != 6 || !hasNote(row, "pair 1: a median is not positive") || row.Verdict != Same {
		t.Errorf("Build(a zero median).Rows[0] Pairs, Verdict, Notes = %d, %v, %q; want 6, SAME, a note on pair 1", row.Pairs, row.Verdict, row.Notes)
	}
}

func TestPairedErrors(t *testing.T) {
	pairs := numbered(6)
	good := append(pairedSide(SideA, bench, "ns/op", pairs, spread(6, 100, 1)), pairedSide(SideB, bench, "ns/op", pairs, spread(6, 100, 1))...)
	mixed := slices.Clone(good)
	mixed[0] = unpair(mixed[:1])[0]
	twoPairs := slices.Clone(good)
	twoPairs[1] = good[1].Clone()
	twoPairs[1].SetConfig(wire.KeyPair, "9") // boot 1 of A has samples in pairs 1 and 9
	twoBoots := slices.Clone(good)
	twoBoots[3] = good[3].Clone()
	twoBoots[3].SetConfig(wire.KeyPair, "1") // boots 1 and 2 of A in pair 1
	for _, tc := range []struct {
		name    string
		results []*benchfmt.Result
		opts    Options
		want    string
	}{
		{"mixed", mixed, Options{}, "mixed paired and unpaired input"},
		{"boot in two pairs", twoPairs, Options{}, "boot 1 of side A is in pair 1 and in pair 9"},
		{"pair with two boots", twoBoots, Options{}, "pair 1 has boots 1 and 2 of side A"},
		{"unpaired previous look", good, Options{MaxBoots: 10, Previous: &Look{Number: 1, MaxBoots: 10}}, "previous look was unpaired"},
		{"paired previous look", unpair(good), Options{MaxBoots: 10, Previous: &Look{Number: 1, MaxBoots: 10, Paired: true}}, "previous look was paired"},
	} {
		_, err := Build(tc.results, tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Build(%s) = %v; want an error containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := Build(good, Options{}); err != nil {
		t.Errorf("Build(6 good pairs) = %v; want no error", err)
	}
}

// TestPairedLooks: verdicts stay final and notes speak of pairs.
func TestPairedLooks(t *testing.T) {
	opts := Options{MaxBoots: 10}
	rng := rand.New(rand.NewPCG(7, 7))
	results := tcgPaired.pairs(rng, 6)
	rep1, err := Build(results, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !rep1.Look.Paired || rep1.Look.Boots != 6 || rep1.Rows[0].Verdict != Same {
		t.Fatalf("look 1 Paired, Boots, Verdict = %v, %d, %v; want true, 6, SAME", rep1.Look.Paired, rep1.Look.Boots, rep1.Rows[0].Verdict)
	}
	if l := rep1.Look; l.Number != 1 || l.MaxBoots != 10 {
		t.Errorf("look 1 Look.Number, Look.MaxBoots = %d, %d; want 1, 10 (pairs)", l.Number, l.MaxBoots)
	}
	opts.Previous = &rep1.Look
	rep2, err := Build(append(results, tcgPaired.pair(rng, 7, "")...), opts)
	if err != nil {
		t.Fatal(err)
	}
	if row := rep2.Rows[0]; row.Verdict != Same || !hasNote(row, "SAME since look 1 at 6 pairs") || row.DecidedBoots != 6 {
		t.Errorf("look 2 Verdict, DecidedBoots, Notes = %v, %d, %q; want SAME since look 1 at 6 pairs", row.Verdict, row.DecidedBoots, row.Notes)
	}
	if !slices.Equal(rep2.Look.History, []int{6, 7}) {
		t.Errorf("look 2 History = %v; want [6 7]", rep2.Look.History)
	}
}

func TestMinPairsToDecide(t *testing.T) {
	for _, tc := range []struct {
		opts                Options
		rows                int
		wantSame, wantDiffs int
	}{
		{Options{}, 1, 5, 6},
		{Options{MaxBoots: 10}, 4, 6, 8}, // the values in the doc comment
		{Options{MaxBoots: 20}, 4, 6, 9},
		{Options{MaxBoots: 12, Alpha: 0.01}, 4, 8, 10},
	} {
		same, diff, err := minPairsToDecide(tc.opts, tc.rows)
		if err != nil || same != tc.wantSame || diff != tc.wantDiffs {
			t.Errorf("MinPairsToDecide(%+v, %d) = %d, %d, %v; want %d, %d, nil", tc.opts, tc.rows, same, diff, err, tc.wantSame, tc.wantDiffs)
		}
	}
}

// TestSimulatedPairedSelfCompare: many seeded paired self-compares with
// adaptive looks; a false DIFFERENT in any row at any look counts, and the
// rate must stay at most α. The ratio has a heavy tail (a boot 2 % slow
// now and then) so that the test is not only checked on normal noise.
func TestSimulatedPairedSelfCompare(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  pairedRun
	}{
		{"TCG wall paired", tcgPaired},
		{"TCG wall paired, bursts", pairedRun{benches: selfCompare, unit: "sec/op", host: 0.15, ratio: 0.01, burst: 0.2, samples: 5}},
	} {
		rng := rand.New(rand.NewPCG(2026, 14))
		runs := simRuns(400)
		different, raw := 0, 0
		for range runs {
			_, anyDifferent, anyRawSig := tc.run.run(t, rng, 6, 2, 12)
			if anyDifferent {
				different++
			}
			if anyRawSig {
				raw++
			}
		}
		rate, rawRate := float64(different)/float64(runs), float64(raw)/float64(runs)
		t.Logf("%s: false DIFFERENT in %d of %d self-compares (%.1f%%); uncorrected p<=α in %.1f%%", tc.name, different, runs, 100*rate, 100*rawRate)
		if rate > defaultAlpha {
			t.Errorf("%s: false DIFFERENT rate = %.3f; want <= α = %v", tc.name, rate, defaultAlpha)
		}
		if rawRate <= defaultAlpha {
			t.Errorf("%s: uncorrected significance rate = %.3f; want > α = %v, or the simulation is too tame to test the rule", tc.name, rawRate, defaultAlpha)
		}
	}
}

// TestPairedTooManyPairs: past 50 pairs the exact test is not computed; the
// row says so and stays UNKNOWN instead of failing the report.
func TestPairedTooManyPairs(t *testing.T) {
	a, b := jitter(5, maxBoots+1, 1000, 0.01), jitter(6, maxBoots+1, 1000, 0.01)
	rs := append(pairedSide(SideA, bench, "ns/op", numbered(maxBoots+1), a), pairedSide(SideB, bench, "ns/op", numbered(maxBoots+1), b)...)
	row := oneRow(t, mustBuild(t, rs))
	if row.Verdict != Unknown || row.P != 1 || !hasNote(row, "signed-rank test stops at 50") {
		t.Errorf("Build(51 pairs).Rows[0] Verdict, P, Notes = %v, %v, %q; want UNKNOWN, 1, a note on the limit", row.Verdict, row.P, row.Notes)
	}
}

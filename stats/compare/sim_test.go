package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/lpmbisect/lpmbisect/wire"
	"golang.org/x/perf/benchfmt"
)

// noise describes how a simulated benchmark varies. Values are multiplied by
// exp(N(0, σ)) factors, so σ is about the coefficient of variation.
type noise struct {
	host    float64 // per boot, shared by every benchmark of the boot (host load)
	burst   float64 // chance that a boot lands in a burst of host load
	layout  float64 // per boot and benchmark (memory layout, KASLR)
	sample  float64 // per sample within a boot
	samples int     // samples per boot
	drift   float64 // per boot step of a random walk of the host's speed
}

// tcgWall is TCG wall time as measured on the team's shared 2-core host:
// boot-to-boot noise of a few percent with occasional bursts of +5…25 % when
// another engineer's job runs, 1-4 % within a boot.
var tcgWall = noise{host: 0.03, burst: 0.1, layout: 0.02, sample: 0.02, samples: 5}

// icount is TCG with -icount: instruction counts agree to ~0.03 %.
var icount = noise{layout: 0.0003, sample: 0.0002, samples: 5}

// simBench is a simulated benchmark: its name, its true value on A, and the
// factor B multiplies it by.
type simBench struct {
	name   string
	value  float64
	change float64 // B/A; 1 for no change
}

// selfCompare is what the lead's acceptance test runs: lookups plus the two
// controls, one kernel on both sides.
var selfCompare = []simBench{
	{"LPMTrie/op=lookup/keys=random/entries=10000", 410e-9, 1},
	{"LPMTrie/op=lookup/keys=sequential/entries=10000", 360e-9, 1},
	{"LPMTrie/op=noop/entries=10000", 25e-9, 1},
	{"LPMTrie/op=baseline/entries=10000", 60e-9, 1},
}

// simRun is an adaptive comparison: start at start boots per side, add step
// while a non-control row is undecided, stop at max.
type simRun struct {
	benches          []simBench
	noise            noise
	unit             string
	start, step, max int
}

// simResult is what one run did.
type simResult struct {
	final         *Report
	anyDifferent  bool // some row was DIFFERENT at some look
	anyRawSig     bool // some row had p <= α at some look (benchstat's "significant")
	boots         int  // boots per side at the end
	looks         int
	differentRows int // rows DIFFERENT in the final report
}

// boot returns the results of one simulated boot.
func (r simRun) boot(rng *rand.Rand, side string, n int, drift float64) []*benchfmt.Result {
	host := drift + r.noise.host*rng.NormFloat64()
	if rng.Float64() < r.noise.burst {
		host += math.Log1p(0.05 + 0.2*rng.Float64())
	}
	var out []*benchfmt.Result
	for _, b := range r.benches {
		v := b.value
		if side == SideB {
			v *= b.change
		}
		layout := r.noise.layout * rng.NormFloat64()
		for range r.noise.samples {
			res := &benchfmt.Result{Name: benchfmt.Name(b.name), Iters: 1000}
			res.SetConfig(wire.KeySide, side)
			res.SetConfig(wire.KeyKernel, "k")
			res.SetConfig(wire.KeyBoot, strconv.Itoa(n))
			x := v * math.Exp(host+layout+r.noise.sample*rng.NormFloat64())
			res.Values = []benchfmt.Value{{Value: x, Unit: r.unit}}
			out = append(out, res)
		}
	}
	return out
}

func (r simRun) run(t testing.TB, rng *rand.Rand) simResult {
	var results []*benchfmt.Result
	opts := Options{MaxBoots: r.max}
	var res simResult
	boots := 0
	target := r.start
	drift := 0.0
	boot := func(side string) []*benchfmt.Result {
		drift += r.noise.drift * rng.NormFloat64()
		return r.boot(rng, side, boots, drift)
	}
	for {
		// Interleave in a random order within each pair, as the lead's
		// measure loop does.
		for boots < target {
			boots++
			if rng.IntN(2) == 0 {
				results = append(results, boot(SideA)...)
				results = append(results, boot(SideB)...)
			} else {
				results = append(results, boot(SideB)...)
				results = append(results, boot(SideA)...)
			}
		}
		rep, err := Build(results, opts)
		if err != nil {
			t.Fatalf("Build(simulated, %+v) = %v", opts, err)
		}
		res.looks++
		for _, row := range rep.Rows {
			if row.Verdict == Different {
				res.anyDifferent = true
			}
			if row.Significant {
				res.anyRawSig = true
			}
		}
		res.final, res.boots = rep, boots
		if boots >= r.max || !rep.NeedMoreBoots(nil) {
			break
		}
		opts.Previous = &rep.Look
		target = min(boots+r.step, r.max)
	}
	for _, row := range res.final.Rows {
		if row.Verdict == Different {
			res.differentRows++
		}
	}
	return res
}

// simRuns returns n, or a fifth of it in -short mode.
func simRuns(n int) int {
	if testing.Short() {
		return n / 5
	}
	return n
}

// TestSimulatedSelfCompare is the acceptance test of the decision rule on
// synthetic data: a kernel compared with itself, four rows (two lookups and
// the two controls), adaptive looks, many seeds. A false DIFFERENT in any row
// at any look counts against the rule; the rate must stay below α. It also
// checks that the simulation has teeth: benchstat's uncorrected p <= α
// would have flagged far more of the same runs.
func TestSimulatedSelfCompare(t *testing.T) {
	noisy := noise{host: 0.05, burst: 0.15, layout: 0.03, sample: 0.03, samples: 5}
	drifting := noise{host: 0.02, burst: 0.1, layout: 0.02, sample: 0.02, samples: 5, drift: 0.02}
	for _, tc := range []struct {
		name  string
		run   simRun
		runs  int
		check func(t *testing.T, name string, res simResult)
	}{
		{"TCG wall, 6→12 boots", simRun{selfCompare, tcgWall, "sec/op", 6, 2, 12}, 1000, nil},
		{"TCG wall noisy, 4→16 boots", simRun{selfCompare, noisy, "sec/op", 4, 2, 16}, 500, nil},
		{"TCG wall drifting host, 6→12 boots", simRun{selfCompare, drifting, "sec/op", 6, 2, 12}, 500, nil},
		{"icount, 4→10 boots", simRun{selfCompare, icount, "insn/op", 4, 2, 10}, 200, func(t *testing.T, name string, res simResult) {
			// Instruction counts agree to 0.03 %: SAME for every row
			// at the first look.
			if res.boots != 4 || res.final.Outcome(FailOnRegression) != NoRegression {
				t.Errorf("%s: stopped at %d boots with %v; want 4, no regression", name, res.boots, res.final.Outcome(FailOnRegression))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(2026, 4))
			runs := simRuns(tc.runs)
			different, raw := 0, 0
			for i := range runs {
				res := tc.run.run(t, rng)
				if res.anyDifferent {
					different++
				}
				if res.anyRawSig {
					raw++
				}
				if tc.check != nil {
					tc.check(t, fmt.Sprintf("run %d", i), res)
				}
			}
			rate, rawRate := float64(different)/float64(runs), float64(raw)/float64(runs)
			t.Logf("false DIFFERENT in %d of %d self-compares (%.1f%%); uncorrected p<=α in %.1f%%", different, runs, 100*rate, 100*rawRate)
			if rate > defaultAlpha {
				t.Errorf("self-compare (%s): false DIFFERENT rate = %.3f; want <= α = %v", tc.name, rate, defaultAlpha)
			}
			if tc.run.noise.host > 0 && rawRate < 2*defaultAlpha {
				t.Errorf("self-compare (%s): uncorrected significance rate = %.3f; want > %v, or the simulation is too tame to test the rule", tc.name, rawRate, 2*defaultAlpha)
			}
		})
	}
}

// TestSimulatedLargeEffect: a large change is called at the first look at
// which DIFFERENT is reachable, with the right sign, and the controls are
// flagged no more often than α allows. (Holm tests the controls at a looser
// level once the lookups are rejected; the family-wise rate still holds.)
func TestSimulatedLargeEffect(t *testing.T) {
	debian := slices.Clone(selfCompare)
	debian[0].change, debian[1].change = 0.81, 0.70 // 6.1 → 6.12 under TCG
	noisy := noise{host: 0.05, burst: 0.15, layout: 0.03, sample: 0.03, samples: 5}
	for _, tc := range []struct {
		name    string
		run     simRun
		minStop float64 // fraction of runs that must stop at the first look
	}{
		{"TCG wall", simRun{debian, noisy, "sec/op", 6, 2, 12}, 0.7},
		{"icount", simRun{debian, icount, "insn/op", 6, 2, 12}, 1},
	} {
		rng := rand.New(rand.NewPCG(2026, 5))
		runs := 200 // cheap: the runs stop early
		first, drift := 0, 0
		for range runs {
			res := tc.run.run(t, rng)
			if res.boots == tc.run.start {
				first++
			}
			for _, row := range res.final.Rows[:2] {
				if row.Verdict == Different && row.DeltaPct > 0 {
					t.Errorf("%s: %s DIFFERENT with Δ=%+.1f%%; want a decrease", tc.name, row.Benchmark, row.DeltaPct)
				}
			}
			if res.final.EnvironmentDrift {
				drift++
			}
		}
		t.Logf("%s: stopped at the first look (%d boots) in %d of %d runs; false drift in %d", tc.name, tc.run.start, first, runs, drift)
		if got := float64(drift) / float64(runs); got > defaultAlpha {
			t.Errorf("%s: false EnvironmentDrift rate = %.3f; want <= α = %v (controls unchanged)", tc.name, got, defaultAlpha)
		}
		if got := float64(first) / float64(runs); got < tc.minStop {
			t.Errorf("%s: stopped at the first look in %.2f of runs; want >= %v", tc.name, got, tc.minStop)
		}
	}
}

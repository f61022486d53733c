package calibrate

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/wire"
)

// TestFloorHoldsForAdaptiveRuns checks the floor against the rule that
// uses it: fresh comparisons of one image, run as compare runs them (an
// adaptive run to 10 boots per side at the calibrated floor), must say SAME
// about as often as the calibration promised. A floor from one look with
// all of α (MaxBoots 0) is what the self-compares used to compute; an
// adaptive run spends α over its looks, and at that floor it says SAME
// less often. Then a real change inside the floor: never SAME.
func TestFloorHoldsForAdaptiveRuns(t *testing.T) {
	rows := []synthRow{
		{name: "Noise5", median: noisy(500e-9, 0.05), within: 0.1},
		{name: "Noise12", median: noisy(500e-9, 0.12), within: 0.1},
	}
	const maxBoots = 10
	adaptive := mustCompute(t, synthBoots(2*maxBoots, 5, "tcg", rows, 11), Options{Seed: 5, MaxBoots: maxBoots})
	oneLook := mustCompute(t, synthBoots(2*maxBoots, 5, "tcg", rows, 11), Options{Seed: 5})
	if adaptive.Method.MaxBoots != maxBoots || oneLook.Method.MaxBoots != 0 {
		t.Fatalf("Method.MaxBoots = %d, %d; want %d, 0", adaptive.Method.MaxBoots, oneLook.Method.MaxBoots, maxBoots)
	}
	// The share of fresh adaptive self-compares that say SAME at a row's
	// floor.
	sameShare := func(c *Calibration, name string) float64 {
		if _, ok := c.Floor(name, "sec/op"); !ok {
			t.Fatalf("%s: no floor; rows %+v", name, c.Benchmarks)
		}
		// As compare --min-effect auto sets them: the default 1 %,
		// raised to each benchmark's floor.
		opts := compare.Options{MinEffect: 0.01, MaxBoots: maxBoots}
		c.bounds("the test host").apply(&opts, true)
		const runs = 40
		same := 0
		for run := range runs {
			sides := labelSides(synthBoots(2*maxBoots, 5, "tcg", rows, 100+uint64(run)))
			sp := split{a: seq(maxBoots), b: seq(2 * maxBoots)[maxBoots:]}
			start, err := compare.StartBoots(opts, len(rows), false, false)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := compare.Decide(context.Background(), &splitSource{sides: sides, split: sp}, opts, start, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, row := range rep.Rows {
				if row.Benchmark == name && row.Verdict == compare.Same {
					same++
				}
				if row.Verdict == compare.Different {
					t.Errorf("run %d: %s DIFFERENT for one image against itself", run, row.Benchmark)
				}
			}
		}
		return float64(same) / runs
	}
	for _, name := range []string{"Noise5", "Noise12"} {
		fa, _ := adaptive.Floor(name, "sec/op")
		f1, _ := oneLook.Floor(name, "sec/op")
		sa, s1 := sameShare(adaptive, name), sameShare(oneLook, name)
		t.Logf("%s: adaptive floor %g: %.0f%% SAME in fresh runs; one-look floor %g: %.0f%%", name, fa, 100*sa, f1, 100*s1)
		if fa < f1 {
			t.Errorf("%s: adaptive floor %g below the one-look floor %g: spending α over looks cannot rule out smaller changes", name, fa, f1)
		}
		if sa < 0.8 {
			t.Errorf("%s: %.0f%% of fresh adaptive runs said SAME at the calibrated floor %g; want at least 80%%", name, 100*sa, fa)
		}
	}
}

// TestOneLookFloorsSayStale: a wall-time calibration whose floors came
// from one look (MaxBoots 0, as files from before the adaptive floors are)
// says so where a comparison names its statistics.
func TestOneLookFloorsSayStale(t *testing.T) {
	rows := []synthRow{{name: "Noise5", median: noisy(500e-9, 0.05), within: 0.1}}
	for _, tc := range []struct {
		maxBoots int
		stale    bool
	}{{0, true}, {10, false}} {
		c := mustCompute(t, synthBoots(12, 5, "tcg", rows, 11), Options{MaxBoots: tc.maxBoots})
		if got := strings.Contains(c.bounds("h").Source, "calibrate again"); got != tc.stale {
			t.Errorf("MaxBoots %d: Source %q; want it to ask for a new calibration: %v", tc.maxBoots, c.bounds("h").Source, tc.stale)
		}
	}
}

// pairedBoots makes n pairs of boots of one image whose medians share the
// pair's host factor (relative noise host) and differ within a pair by
// relative noise own: what pairs on a shared host look like. Boots 1..n
// are the pairs' A, n+1..2n their B, labelled as a paired runner labels
// them.
func pairedBoots(n int, host, own float64, seed uint64) [][]*benchfmt.Result {
	rng := rand.New(rand.NewPCG(seed, 2))
	factors := make([]float64, n)
	for i := range factors {
		factors[i] = math.Exp(host * rng.NormFloat64())
	}
	row := synthRow{name: "Lookup", within: 0.05, median: func(boot int, rng *rand.Rand) float64 {
		return 900e-9 * factors[(boot-1)%n] * math.Exp(own*rng.NormFloat64())
	}}
	boots := synthBoots(2*n, 5, "tcg", []synthRow{row}, seed)
	for i, b := range boots {
		side, pair := compare.SideA, i+1
		if i >= n {
			side, pair = compare.SideB, i+1-n
		}
		for _, r := range b {
			r.SetConfig(wire.KeySide, side)
			r.SetConfig(wire.KeyBoot, strconv.Itoa(pair))
			r.SetConfig(wire.KeyPair, strconv.Itoa(pair))
		}
	}
	return boots
}

// TestPairedFloors: boots that ran in pairs are calibrated by paired
// self-compares over subsets of the pairs, so host noise that pairs cancel
// does not enter the floor; the same medians without their pairs leave
// nothing up to 50 %.
func TestPairedFloors(t *testing.T) {
	boots := pairedBoots(20, 0.4, 0.03, 7)
	paired := mustCompute(t, boots, Options{Seed: 1, MaxBoots: 10, Paired: true})
	if !paired.Method.Paired || paired.Method.SplitBoots != 10 || paired.Method.Splits != 200 {
		t.Errorf("Method = %+v; want paired self-compares of 10 of the 20 pairs, 200 drawn", paired.Method)
	}
	f, ok := paired.Floor("Lookup", "sec/op")
	if !ok || f > 0.10 {
		t.Errorf("paired floor = %g (reached %v); want at most 10%% with 3%% noise within pairs", f, ok)
	}
	var unpaired [][]*benchfmt.Result
	for _, b := range boots {
		var rs []*benchfmt.Result
		for _, r := range b {
			r = r.Clone()
			r.SetConfig(wire.KeyPair, "") // "" deletes it
			r.SetConfig(wire.KeySide, compare.SideA)
			rs = append(rs, r)
		}
		unpaired = append(unpaired, rs)
	}
	u := mustCompute(t, unpaired, Options{Seed: 1, MaxBoots: 10})
	if u.Method.Paired {
		t.Errorf("unpaired boots: Method.Paired = true")
	}
	if uf, ok := u.Floor("Lookup", "sec/op"); ok && uf <= f {
		t.Errorf("unpaired floor %g not above the paired %g: the host noise should show", uf, f)
	}
	t.Logf("paired floor %g, shares %v; unpaired %v", f, row(t, paired, "Lookup", "sec/op").SameShare, row(t, u, "Lookup", "sec/op").SameShare)
}

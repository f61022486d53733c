package calibrate

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"
)

var testHost = &Host{Name: "testhost", CPU: "Test CPU", CPUs: 2}

// synthRow is a benchmark of synthetic boots: median gives each boot's
// median, within the relative noise of the boot's samples.
type synthRow struct {
	name, unit string
	median     func(boot int, rng *rand.Rand) float64
	within     float64 // relative range of the samples within a boot
	skip       int     // a boot (from 1) that does not run it, 0 for none
}

// synthBoots makes n boots of rows, each with samples samples per row,
// labelled as the runner labels boots of one kernel.
func synthBoots(n, samples int, accel string, rows []synthRow, seed uint64) [][]*benchfmt.Result {
	rng := rand.New(rand.NewPCG(seed, 1))
	unitOf := map[string]string{"icount": "insn/op", "tcg": "sec/op"}
	var boots [][]*benchfmt.Result
	for i := 1; i <= n; i++ {
		var boot []*benchfmt.Result
		for _, row := range rows {
			m := row.median(i, rng)
			if row.skip == i {
				continue
			}
			unit := row.unit
			if unit == "" {
				unit = unitOf[accel]
			}
			for s := range samples {
				// Samples spread evenly around m, so m stays the median.
				v := m
				if samples > 1 {
					v = m * (1 + row.within*(float64(s)/float64(samples-1)-0.5))
				}
				r := &benchfmt.Result{Name: benchfmt.Name(row.name), Iters: 1, Values: []benchfmt.Value{{Value: v, Unit: unit}}}
				for _, kv := range [][2]string{{"kernel", "6.12.117"}, {"accel", accel}, {"qemu", "7.2.22"}, {"cpu-model", "Westmere-v1"},
					{"samples", strconv.Itoa(samples)}, {"rounds", "20"}, {"side", "A"}, {"boot", strconv.Itoa(i)}, {"image", "391d229a7c64"}} {
					r.SetConfig(kv[0], kv[1])
				}
				boot = append(boot, r)
			}
		}
		boots = append(boots, boot)
	}
	return boots
}

// values returns a median function that gives boot i the value vs[i-1].
func values(vs ...float64) func(int, *rand.Rand) float64 {
	return func(boot int, _ *rand.Rand) float64 { return vs[boot-1] }
}

// noisy returns a median function of relative normal noise sigma around m.
func noisy(m, sigma float64) func(int, *rand.Rand) float64 {
	return func(_ int, rng *rand.Rand) float64 { return m * math.Exp(sigma*rng.NormFloat64()) }
}

func mustCompute(t *testing.T, boots [][]*benchfmt.Result, o Options) *Calibration {
	t.Helper()
	if o.Host == nil {
		o.Host = testHost
	}
	c, err := compute(boots, o)
	if err != nil {
		t.Fatalf("Compute: %v", err)
	}
	return c
}

func row(t *testing.T, c *Calibration, name, unit string) *Benchmark {
	t.Helper()
	b, ok := c.Benchmark(name, unit)
	if !ok {
		t.Fatalf("Benchmark(%q, %q) not found; rows %v", name, unit, c.Benchmarks)
	}
	return b
}

func near(got, want float64) bool { return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want)) }

var icountRows = []synthRow{
	{name: "Exact", median: values(500, 500, 500, 500, 500, 500, 500, 500)},
	// One boot 0.01 % off: 7 of the 28 pairs differ by 1e-4.
	{name: "Jitter", median: values(1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000.1), within: 0.0003},
	// Evenly spread over 0.07 %: no gap stands out.
	{name: "Spread", median: values(1000, 1000.4, 1000.1, 1000.5, 1000.2, 1000.6, 1000.3, 1000.7)},
	// Evenly spread over 0.35 %: under the 0.5 % limit, but its bound is not.
	{name: "Loose", median: values(1000, 1002, 1000.5, 1002.5, 1001, 1003, 1001.5, 1003.5)},
	// One boot 2 % off: a rare second mode.
	{name: "Outlier", median: values(1000, 1000, 1000, 1020, 1000, 1000, 1000, 1000)},
	// Two groups 0.3 % apart: under the 0.5 % limit, but two modes.
	{name: "TwoModes", median: values(1000, 1003, 1000, 1003, 1003, 1000, 1000.01, 1003)},
	// Up to 1.4 % apart.
	{name: "Wide", median: values(1000, 1002, 1004, 1006, 1008, 1010, 1012, 1014)},
	{name: "Flaky", median: values(700, 700, 700, 700, 700, 700, 700, 700), skip: 3},
}

func TestComputeIcount(t *testing.T) {
	c := mustCompute(t, synthBoots(8, 5, "icount", icountRows, 1), Options{})
	if c.Boots != 8 || c.Kernel != "6.12.117" || c.Image != "391d229a7c64" || c.Key.Accel != "icount" || c.Key.Samples != 5 || c.Key.Rounds != 20 {
		t.Errorf("Compute: boots %d, kernel %q, image %q, key %+v; want 8, 6.12.117, 391d229a7c64, icount 5 × 20", c.Boots, c.Kernel, c.Image, c.Key)
	}
	for _, tc := range []struct {
		name          string
		deterministic bool
		maxDiff       float64
		bound         float64 // 0: not checked
		why           string
	}{
		{"Exact", true, 0, math.Max(defaultBoundFloor, 2*defaultQuantum/500), ""},
		{"Jitter", true, 1e-4, 3e-4, ""},
		{"Spread", true, 0.7 / 1000, 0, ""},
		{"Loose", false, 3.5 / 1000, 0, "is not below 0.5%"},
		{"Outlier", false, 0.02, 0, "two modes"},
		{"TwoModes", false, 3 / 1000.0, 0, "two modes"},
		{"Wide", false, 14 / 1000.0, 0, "differ by up to 1.4%"},
		{"Flaky", false, 0, 0, "ran in 7 of 8 boots"},
	} {
		b := row(t, c, tc.name, "insn/op")
		if b.Deterministic != tc.deterministic || !strings.Contains(b.Why, tc.why) {
			t.Errorf("%s: Deterministic = %v (%q); want %v (%q)", tc.name, b.Deterministic, b.Why, tc.deterministic, tc.why)
		}
		if !near(b.MaxDiff, tc.maxDiff) {
			t.Errorf("%s: MaxDiff = %g; want %g", tc.name, b.MaxDiff, tc.maxDiff)
		}
		if tc.bound != 0 && !near(b.Bound, tc.bound) {
			t.Errorf("%s: Bound = %g; want %g", tc.name, b.Bound, tc.bound)
		}
		bound, ok := c.Bound(tc.name, "insn/op")
		if ok != tc.deterministic || ok && bound != b.Bound {
			t.Errorf("Bound(%s) = %g, %v; want %g, %v", tc.name, bound, ok, b.Bound, tc.deterministic)
		}
		if b.Bound < b.MaxDiff && tc.deterministic {
			t.Errorf("%s: Bound %g below the largest difference seen %g", tc.name, b.Bound, b.MaxDiff)
		}
	}
	var modes []string
	for _, m := range c.TwoModes {
		if m.Kernel == "6.12.117" && m.Date.Equal(c.Date) {
			modes = append(modes, m.Benchmark)
		}
	}
	if slices.Sort(modes); !slices.Equal(modes, []string{"Outlier", "TwoModes"}) {
		t.Errorf("TwoModes = %+v; want records of Outlier and TwoModes", c.TwoModes)
	}
	// Deterministic rows rule out the grid's smallest change at 4 boots
	// per side: every one of the 35 splits says SAME at 1 %.
	if c.Method.SplitBoots != 4 || c.Method.Splits != 35 || !c.Method.Exhaustive {
		t.Errorf("Method = %+v; want 35 exhaustive splits of 4 boots", c.Method)
	}
	if f, ok := c.Floor("Jitter", "insn/op"); !ok || f != 0.01 {
		t.Errorf("Floor(Jitter) = %g, %v; want 0.01, true", f, ok)
	}
	if _, ok := c.Bound("Missing", "insn/op"); ok {
		t.Errorf("Bound(Missing) ok; want not ok")
	}
}

func TestComputeWallTimeIsNeverDeterministic(t *testing.T) {
	c := mustCompute(t, synthBoots(8, 5, "tcg", icountRows, 1), Options{})
	for _, b := range c.Benchmarks {
		if _, ok := c.Bound(b.Name, b.Unit); ok || b.Deterministic || b.TwoModes {
			t.Errorf("%s under tcg: deterministic %v, two modes %v; want neither", b.Name, b.Deterministic, b.TwoModes)
		}
	}
	if len(c.TwoModes) != 0 {
		t.Errorf("TwoModes under tcg = %v; want none", c.TwoModes)
	}
}

func TestComputeWallTimeFloor(t *testing.T) {
	rows := []synthRow{
		{name: "Quiet", median: noisy(500e-9, 0.0005), within: 0.01},
		{name: "Noise3", median: noisy(500e-9, 0.03), within: 0.05},
		{name: "Noise10", median: noisy(500e-9, 0.10), within: 0.1},
		{name: "Noise30", median: noisy(500e-9, 0.30), within: 0.1},
	}
	// 12 boots: 6 per side, 462 splits, of which 200 are drawn.
	c := mustCompute(t, synthBoots(12, 5, "tcg", rows, 7), Options{Seed: 3})
	if c.Method.SplitBoots != 6 || c.Method.Splits != 200 || c.Method.Exhaustive {
		t.Errorf("Method = %+v; want 200 drawn splits of 6 boots", c.Method)
	}
	floor := func(name string) float64 {
		f, ok := c.Floor(name, "sec/op")
		if !ok {
			return math.Inf(1)
		}
		return f
	}
	for _, name := range []string{"Quiet", "Noise3", "Noise10", "Noise30"} {
		b := row(t, c, name, "sec/op")
		t.Logf("%s: floor %g (reached %v), same share %v, false different %g", name, b.Floor, b.FloorReached, b.SameShare, b.FalseDifferent)
		if b.FalseDifferent > 0.1 {
			t.Errorf("%s: FalseDifferent = %g; want at most 0.1 for a kernel against itself", name, b.FalseDifferent)
		}
	}
	if f := floor("Quiet"); f != 0.01 {
		t.Errorf("Floor(Quiet, 0.05%% noise) = %g; want 0.01", f)
	}
	// A floor below the boots' own noise would claim what the host cannot
	// see; far above it, the method would waste the boots.
	if f := floor("Noise3"); f < 0.03 || f > 0.10 {
		t.Errorf("Floor(Noise3, 3%% noise) = %g; want between 0.03 and 0.10", f)
	}
	if f3, f10 := floor("Noise3"), floor("Noise10"); !(f10 > f3) || f10 < 0.10 {
		t.Errorf("Floor(Noise10, 10%% noise) = %g; want above Floor(Noise3) = %g and at least 0.10", f10, f3)
	}
	b := row(t, c, "Noise30", "sec/op")
	if _, ok := c.Floor("Noise30", "sec/op"); ok || b.FloorReached || !math.IsNaN(b.Floor) {
		t.Errorf("Floor(Noise30, 30%% noise) = %g, reached %v; want NaN, not reached at 50%%", b.Floor, b.FloorReached)
	}
	// A comparison with auto is told which benchmarks kept the default.
	bs := c.bounds("this host")
	if _, ok := bs.Floors["Noise30"]; ok || bs.Floors["Quiet"] != 0.01 {
		t.Errorf("bounds().Floors = %v; want Quiet's 1%% and no floor for Noise30", bs.Floors)
	}
	if !strings.Contains(bs.Source, "no floor up to ±50% for Noise30 ") || strings.Contains(bs.Source, "Noise10") {
		t.Errorf("bounds().Source = %q; want it to name Noise30 alone as without a floor up to ±50%%", bs.Source)
	}
}

func TestComputeErrors(t *testing.T) {
	rows := icountRows[:1]
	if _, err := compute(synthBoots(1, 3, "icount", rows, 1), Options{Host: testHost}); err == nil || !strings.Contains(err.Error(), ErrTooFewBoots.Error()) {
		t.Errorf("Compute(1 boot) = %v; want %v", err, ErrTooFewBoots)
	}
	boots := synthBoots(3, 3, "icount", rows, 1)
	for _, r := range boots[2] {
		r.SetConfig("rounds", "5")
	}
	if _, err := compute(boots, Options{Host: testHost}); err == nil || !strings.Contains(err.Error(), "disagree on rounds") {
		t.Errorf("Compute(boots with two rounds) = %v; want an error about rounds", err)
	}
	boots = synthBoots(3, 3, "icount", rows, 1)
	for _, b := range boots {
		for _, r := range b {
			r.SetConfig("accel", "")
		}
	}
	if _, err := compute(boots, Options{Host: testHost}); err == nil || !strings.Contains(err.Error(), ErrNoAccel.Error()) {
		t.Errorf("Compute(boots without accel) = %v; want %v", err, ErrNoAccel)
	}
	if _, err := compute(synthBoots(3, 3, "icount", rows, 1), Options{Host: testHost, Grid: []float64{0.02, 0.01}}); err == nil {
		t.Errorf("Compute(decreasing grid) = nil; want an error")
	}
}

func TestTwoModes(t *testing.T) {
	for _, tc := range []struct {
		medians []float64
		want    bool
	}{
		{[]float64{100, 100, 101, 101}, true},
		{[]float64{100, 100.1, 101, 101.1}, true},              // gap 0.9 > 3 × 0.1
		{[]float64{100, 100.4, 101, 101.4}, false},             // gap 0.6 < 3 × 0.4
		{[]float64{100, 100, 100, 100.4}, false},               // one boot 0.4 % off is no mode
		{[]float64{100, 100, 100, 101}, true},                  // one boot 1 % off is
		{[]float64{100, 100.4, 100.8, 101}, false},             // spread evenly
		{[]float64{100, 100.1}, false},                         // too few boots
		{[]float64{1000, 1000, 1000.01, 1000.01}, false},       // below the resolution
		{[]float64{100, 100.5, 101, 101.5, 102, 102.5}, false}, // even spread
	} {
		if got, _ := twoModes(tc.medians, defaultModeGap, defaultBoundFloor, defaultMaxJitter); got != tc.want {
			t.Errorf("twoModes(%v) = %v; want %v", tc.medians, got, tc.want)
		}
	}
}

func TestQuantile(t *testing.T) {
	s := []float64{0, 1, 2, 3, 4}
	for _, tc := range []struct{ q, want float64 }{{0, 0}, {0.5, 2}, {0.95, 3.8}, {1, 4}} {
		if got := quantile(s, tc.q); !near(got, tc.want) {
			t.Errorf("quantile(%v, %g) = %g; want %g", s, tc.q, got, tc.want)
		}
	}
	if got := quantile([]float64{0, 1, math.Inf(1)}, 0.95); !math.IsInf(got, 1) {
		t.Errorf("quantile with +Inf near the top = %g; want +Inf", got)
	}
}

func TestMakeSplits(t *testing.T) {
	for _, tc := range []struct {
		n, k, want int
		exhaustive bool
	}{{8, 4, 35, true}, {4, 2, 3, true}, {5, 2, 15, true}, {9, 4, 200, false}, {12, 6, 200, false}} {
		splits, exhaustive := makeSplits(tc.n, tc.k, 200, 1)
		if len(splits) != tc.want || exhaustive != tc.exhaustive {
			t.Errorf("makeSplits(%d, %d) = %d splits, exhaustive %v; want %d, %v", tc.n, tc.k, len(splits), exhaustive, tc.want, tc.exhaustive)
		}
		seen := map[string]bool{}
		for _, s := range splits {
			used := map[int]bool{}
			for _, i := range append(append([]int(nil), s.a...), s.b...) {
				if used[i] || i < 0 || i >= tc.n {
					t.Fatalf("makeSplits(%d, %d): split %v uses boot %d twice or out of range", tc.n, tc.k, s, i)
				}
				used[i] = true
			}
			if len(s.a) != tc.k || len(s.b) != tc.k {
				t.Fatalf("makeSplits(%d, %d): split %v; want %d boots per side", tc.n, tc.k, s, tc.k)
			}
			id := strings.Trim(strings.Join(strings.Fields(strings.Trim(strconvInts(s.a)+"|"+strconvInts(s.b), "[]")), ","), ",")
			if tc.exhaustive && seen[id] {
				t.Errorf("makeSplits(%d, %d): split %v twice", tc.n, tc.k, s)
			}
			seen[id] = true
		}
	}
}

func strconvInts(is []int) string {
	var s []string
	for _, i := range is {
		s = append(s, strconv.Itoa(i))
	}
	return strings.Join(s, " ")
}

func TestKeyOfPaired(t *testing.T) {
	boots := synthBoots(2, 1, "icount", icountRows[:1], 1)
	if k, err := keyOf(boots[0], *testHost, true); err != nil || k.Paired {
		t.Errorf("KeyOf(icount, paired) = %+v, %v; want unpaired (icount needs no pairs)", k, err)
	}
	boots = synthBoots(2, 1, "tcg", icountRows[:1], 1)
	if k, err := keyOf(boots[0], *testHost, true); err != nil || !k.Paired {
		t.Errorf("KeyOf(tcg, paired) = %+v, %v; want paired", k, err)
	}
	a, _ := keyOf(boots[0], *testHost, true)
	b, _ := keyOf(boots[0], *testHost, false)
	if a.fileName() == b.fileName() {
		t.Errorf("paired and unpaired keys share the file %s", a.fileName())
	}
}

// TestKeyNamesBootArgs: a calibration measured with other fixed kernel
// parameters (one stored before the icount boots skipped the APIC timer's
// calibration has none) is another key, so its bounds are not used.
func TestKeyNamesBootArgs(t *testing.T) {
	icount, err := keyOf(synthBoots(2, 1, "icount", icountRows[:1], 1)[0], *testHost, false)
	if err != nil {
		t.Fatal(err)
	}
	tcg, err := keyOf(synthBoots(2, 1, "tcg", icountRows[:1], 1)[0], *testHost, false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(icount.BootArgs, "noapictimer") || strings.Contains(tcg.BootArgs, "noapictimer") || tcg.BootArgs == "" {
		t.Errorf("BootArgs: icount %q, tcg %q; want both with the skipped boot work, noapictimer under icount only", icount.BootArgs, tcg.BootArgs)
	}
	older := icount
	older.BootArgs = ""
	if older.ID() == icount.ID() {
		t.Errorf("a key without boot arguments has the ID %s of today's", icount.ID())
	}
}

func TestDateIsUTC(t *testing.T) {
	when := time.Date(2025, 3, 1, 12, 0, 0, 0, time.FixedZone("X", 3600))
	c := mustCompute(t, synthBoots(2, 1, "icount", icountRows[:1], 1), Options{Date: when})
	if !c.Date.Equal(when) || c.Date.Location() != time.UTC {
		t.Errorf("Date = %v; want %v in UTC", c.Date, when)
	}
}

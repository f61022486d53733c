package nightly

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lpmbisect/lpmbisect/config"
	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/testbed/testseries"
)

// nightFile writes one night of synthetic results: boots boots of samples
// samples of a lookup at value, and of a reference at ref (0: none).
func nightFile(t testing.TB, dir string, night int, value, ref float64, rng *rand.Rand, noise float64) string {
	t.Helper()
	date := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, night).Format(time.DateOnly)
	var b strings.Builder
	fmt.Fprintf(&b, "accel: tcg\ndate: %s\ncommit: %040x\n", date, night+1)
	boot := func(side string, v float64) {
		for i := 1; i <= 2; i++ {
			m := v * (1 + noise*rng.NormFloat64())
			fmt.Fprintf(&b, "side: %s\nboot: %d\n", side, i)
			for s := 0; s < 3; s++ {
				fmt.Fprintf(&b, "BenchmarkLPMTrie/op=lookup/keys=random/entries=10000 1 %g ns/op\n", m*(1+noise/10*rng.NormFloat64()))
			}
		}
	}
	if ref > 0 {
		boot("A", ref)
		boot("B", value)
	} else {
		boot("A", value)
	}
	path := filepath.Join(dir, date+".txt")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func openTestDB(t testing.TB) *history.DB {
	t.Helper()
	db, err := history.Open(context.Background(), filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// detection is where a synthetic series' pass put its change points.
type detection struct {
	found    []int // nights of live kernel-line change points, at the end
	detected int   // the night the step's change point first appeared (-1: never)
}

// importNightly imports a synthetic series night by night, as nightly
// would run, with a step of stepPct at night step (-1 for none).
func importNightly(t testing.TB, seed uint64, nights, step int, stepPct, noise float64) detection {
	t.Helper()
	ctx := context.Background()
	db := openTestDB(t)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(seed, 1))
	s := history.Series{Name: "synthetic", Kind: history.ImageSeries, Source: "imported"}
	d := detection{detected: -1}
	for n := range nights {
		v := 500.0
		if step >= 0 && n >= step {
			v *= 1 + stepPct/100
		}
		imp, err := Import(ctx, db, s, compare.Options{MinEffect: 0.01}, []string{nightFile(t, dir, n, v, 400, rng, noise)})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range imp.Changes {
			if c.Point.Line == history.LineKernel && c.What != "withdrawn" && d.detected < 0 && abs(c.Point.NightIndex-step) <= 1 {
				d.detected = n
			}
		}
	}
	cps, err := db.ChangePoints(ctx, 0, history.ChangeOpen)
	if err != nil {
		t.Fatal(err)
	}
	for _, cp := range cps {
		if cp.Line == history.LineKernel {
			d.found = append(d.found, cp.NightIndex)
		}
	}
	return d
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// Steps of 3 % and 10 % under 1 % noise at known nights, imported night by
// night: the pass finds them (recall), at the right night within one
// (precision), soon after they happen (delay), and finds nothing else.
func TestImportFindsSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("imports a few hundred nights")
	}
	const series, nights, step = 6, 40, 25
	fmt.Fprintf(os.Stderr, "%-6s %-9s %-7s %-7s %s\n", "step", "recall", "precision", "false", "delay (nights)")
	for _, pct := range []float64{3, 10} {
		hits, located, falses, delay := 0, 0, 0, 0
		for i := range series {
			d := importNightly(t, uint64(i), nights, step, pct, 0.01)
			for _, f := range d.found {
				if abs(f-step) <= 1 {
					located++
				} else {
					falses++
				}
			}
			if d.detected >= 0 {
				hits++
				delay += d.detected - step
			}
		}
		recall := float64(hits) / series
		precision := float64(located) / math.Max(1, float64(located+falses))
		fmt.Fprintf(os.Stderr, "%-6s %-9.2f %-9.2f %-7d %.1f\n", fmt.Sprintf("%g%%", pct), recall, precision, falses, float64(delay)/math.Max(1, float64(hits)))
		if recall < 0.8 || precision < 0.8 {
			t.Errorf("steps of %g%% under 1%% noise: recall %.2f, precision %.2f; want both ≥ 0.8", pct, recall, precision)
		}
		if hits > 0 && float64(delay)/float64(hits) > 6 {
			t.Errorf("steps of %g%%: detected %.1f nights late on average; want within 6", pct, float64(delay)/float64(hits))
		}
	}
}

func TestImportNullSeriesHasNoChangePoints(t *testing.T) {
	for seed := range uint64(3) {
		if d := importNightly(t, seed+100, 30, -1, 0, 0.01); len(d.found) > 0 {
			t.Errorf("null series %d: change points at nights %v; want none", seed, d.found)
		}
	}
}

func TestImportNeedsDateAndCommit(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte("side: A\nboot: 1\nBenchmarkX 1 1 ns/op\n"), 0o644)
	_, err := Import(context.Background(), openTestDB(t), history.Series{Name: "s", Kind: history.ImageSeries, Source: "x"}, compare.Options{MinEffect: 0.01}, []string{bad})
	if err == nil || !strings.Contains(err.Error(), "date") || !strings.Contains(err.Error(), "bad.txt:") {
		t.Errorf("Import(no date) = %v; want ErrImport naming the file and the keys", err)
	}
}

// Import is idempotent: the same file twice stores its boots once.
func TestImportTwiceStoresOnce(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	dir := t.TempDir()
	f := nightFile(t, dir, 0, 500, 400, rand.New(rand.NewPCG(1, 1)), 0.01)
	s := history.Series{Name: "s", Kind: history.ImageSeries, Source: "x"}
	first, err := Import(ctx, db, s, compare.Options{MinEffect: 0.01}, []string{f})
	if err != nil {
		t.Fatal(err)
	}
	again, err := Import(ctx, db, s, compare.Options{MinEffect: 0.01}, []string{f})
	if err != nil || first.Boots != 4 || again.Boots != 0 {
		t.Errorf("Import twice: %d then %d boots stored (%v); want 4 then 0", first.Boots, again.Boots, err)
	}
}

func TestCandidatesOrder(t *testing.T) {
	dir := t.TempDir()
	base := time.Now().Add(-time.Hour)
	// Names that sort against the order CI made them in.
	bzImage := make([]byte, 0x206)
	copy(bzImage[0x202:], "HdrS") // an x86 setup header
	content := map[string][]byte{"vmlinuz-b": bzImage, "linux-image-6.1.0-9.deb": []byte("!<arch>\n"), "vmlinuz-a": bzImage, "notes.txt": []byte("x")}
	for i, n := range []string{"vmlinuz-b", "linux-image-6.1.0-9.deb", "vmlinuz-a", "notes.txt"} {
		p := filepath.Join(dir, n)
		os.WriteFile(p, content[n], 0o644)
		os.Chtimes(p, base.Add(time.Duration(i)*time.Minute), base.Add(time.Duration(i)*time.Minute))
	}
	got, err := candidates(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range got {
		names = append(names, filepath.Base(p))
	}
	if strings.Join(names, " ") != "vmlinuz-b linux-image-6.1.0-9.deb vmlinuz-a" {
		t.Errorf("Candidates(dir) = %v; want the kernels by modification time, newest last", names)
	}
	list := filepath.Join(t.TempDir(), "list")
	os.WriteFile(list, []byte(filepath.Join(dir, "vmlinuz-a")+"\n"+filepath.Join(dir, "vmlinuz-b")+"\n"), 0o644)
	if got, err := candidates(list); err != nil || len(got) != 2 || filepath.Base(got[1]) != "vmlinuz-b" {
		t.Errorf("Candidates(list) = %v, %v; want the list's order", got, err)
	}
}

// TestImportSeriesUsesItsMinEffect imports a 10 % step into a series
// whose own min_effect is 50 %: no change point, where the default 1 %
// finds one.
func TestImportSeriesUsesItsMinEffect(t *testing.T) {
	for _, c := range []struct {
		minEffect float64
		want      bool
	}{{0, true}, {50, false}} {
		dir := t.TempDir()
		rng := rand.New(rand.NewPCG(7, 1))
		var files []string
		for n := range 30 {
			v := 500.0
			if n >= 15 {
				v *= 1.1
			}
			files = append(files, nightFile(t, dir, n, v, 400, rng, 0.005))
		}
		cfg := config.Defaults()
		cfg.Series = []config.Series{{Name: "s", Images: "/k", Reference: "/r", MinEffect: c.minEffect}}
		imp, err := ImportSeries(context.Background(), openTestDB(t), &cfg, "s", files)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, ch := range imp.Changes {
			found = found || (ch.Point.Line == history.LineKernel && ch.What != "withdrawn")
		}
		if found != c.want {
			t.Errorf("series min_effect %g: change point found %v; want %v (%+v)", c.minEffect, found, c.want, imp.Changes)
		}
	}
}

// The series, imported at once as lpmbisect history import does
// with --min-effect 5: its change points are the two steps, at their
// nights, and the bad night is stored as an excursion, not a change point.
func TestImportOneBadNightHidesNoStep(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(26, 1))
	var files []string
	for i := range 60 {
		files = append(files, testseries.WriteBadNight(t, dir, i, rng))
	}
	s := history.Series{Name: "public", Kind: history.ImageSeries, Source: "imported"}
	imp, err := Import(ctx, db, s, compare.Options{MinEffect: 0.05}, files)
	if err != nil {
		t.Fatal(err)
	}
	cps, err := db.ChangePoints(ctx, imp.Series.ID, history.ChangeOpen)
	if err != nil {
		t.Fatal(err)
	}
	var nights []string
	for _, cp := range cps {
		nights = append(nights, fmt.Sprintf("%s %s %+.1f%%", cp.Night, cp.Line, cp.DeltaPct))
	}
	if len(cps) != 2 || cps[0].NightIndex != 15 || cps[1].NightIndex != 45 || cps[0].Provisional || cps[0].BeforeNight != "2026-01-15" {
		t.Errorf("change points %v; want the −12 %% step on 2026-01-16 (after 2026-01-15) and the +19 %% one on 2026-02-15, none on 2026-01-11", nights)
	}
	exc, err := db.Excursions(ctx, imp.Series.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(exc) != 1 || exc[0].Night != "2026-01-11" || exc[0].Line != history.LineKernel || math.Abs(exc[0].DeltaPct+41) > 1.5 {
		t.Fatalf("excursions %+v; want the bad night 2026-01-11 on the kernel line, −41 %%", exc)
	}
	if len(imp.Excursions) != 1 {
		t.Errorf("Import says %d new excursions; want 1", len(imp.Excursions))
	}
	boots, err := db.Boots(ctx, exc[0].NightID)
	if err != nil || len(boots) != 1 || !strings.Contains(boots[0].Results, "BenchmarkPublic/lookup") {
		t.Errorf("the bad night's boots = %+v, %v; want its raw results kept", boots, err)
	}
}

// The same series imported night by night, as nightly runs: the step is
// reported on its night or the next, the bad night is never a confirmed
// change point, and becomes an excursion the night after it.
func TestImportNightlyOneBadNight(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(26, 1))
	s := history.Series{Name: "public", Kind: history.ImageSeries, Source: "imported"}
	reported, excursionNight := -1, -1
	for i := range 30 {
		imp, err := Import(ctx, db, s, compare.Options{MinEffect: 0.05}, []string{testseries.WriteBadNight(t, dir, i, rng)})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range imp.Changes {
			p := c.Point
			switch {
			case c.What == "withdrawn":
			case abs(p.NightIndex-15) <= 1 && reported < 0:
				reported = i
			case p.NightIndex == 10 && !p.Provisional:
				t.Errorf("night %d: the bad night is a confirmed change point (%s %+.1f%%)", i, c.What, p.DeltaPct)
			}
		}
		for _, e := range imp.Excursions {
			if e.Night == "2026-01-11" && excursionNight < 0 {
				excursionNight = i
			}
		}
	}
	if reported < 15 || reported > 16 {
		t.Errorf("the −12 %% step at night 15 was first reported on night %d; want 15 or 16", reported)
	}
	if excursionNight != 11 {
		t.Errorf("the bad night 10 became an excursion on night %d; want 11, the night after it", excursionNight)
	}
	cps, _ := db.ChangePoints(ctx, 0, history.ChangeOpen)
	if len(cps) != 1 || cps[0].NightIndex != 15 || cps[0].Provisional {
		t.Errorf("live change points %+v; want the step at night 15 alone, confirmed", cps)
	}
}

// An imported night is judged as a measured night is: under icount, its
// lookup's instruction counts by the deterministic rule against the last
// tip (SAME on a flat night, DIFFERENT on the step's), the first night of
// a later import against the last night stored; a night that cannot be
// decided (one boot a night under wall time) says why in its note.
func TestImportJudgesNights(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	dir := t.TempDir()
	write := func(night int, accel, unit string, values ...float64) string {
		date := testseries.Date(night)
		text := fmt.Sprintf("accel: %s\ndate: %s\ncommit: %040x\n", accel, date, night+1)
		for i, v := range values {
			text += fmt.Sprintf("boot: %d\nBenchmarkLPMTrie/op=lookup/keys=random/entries=10000 1 %g %s\n", i+1, v, unit)
		}
		path := filepath.Join(dir, accel+date+".txt")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	s := history.Series{Name: "icount", Kind: history.ImageSeries, Source: "imported"}
	opts := compare.Options{MinEffect: 0.01}
	icount, err := Import(ctx, db, s, opts, []string{write(0, "icount", "insn/op", 1065.1, 1065.2), write(1, "icount", "insn/op", 1065.3, 1065.1)})
	if err != nil {
		t.Fatal(err)
	}
	// The next night, imported on its own: compared with night 1 in the
	// history.
	if _, err := Import(ctx, db, s, opts, []string{write(2, "icount", "insn/op", 937.2, 937.3)}); err != nil {
		t.Fatal(err)
	}
	tcg, err := Import(ctx, db, history.Series{Name: "tcg", Kind: history.ImageSeries, Source: "imported"}, opts,
		[]string{write(0, "tcg", "ns/op", 26700), write(1, "tcg", "ns/op", 23500)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		series   history.Series
		unit     string
		verdicts []string // vs previous, night by night ("" for none)
		note     string   // in the last night's note
	}{
		{icount.Series, "insn/op", []string{"", "SAME", "DIFFERENT"}, "imported"},
		{tcg.Series, "sec/op", []string{"", "UNKNOWN"}, "vs the last tip UNKNOWN: DIFFERENT out of reach at 1+1 boots"},
	} {
		id := c.series.ID
		nights, err := db.Nights(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		trend, err := db.Trend(ctx, id, history.Metric{Benchmark: "LPMTrie/op=lookup/keys=random/entries=10000", Unit: c.unit})
		if err != nil || len(trend) != len(c.verdicts) {
			t.Fatalf("%s: trend of %d nights, %v; want %d", c.series.Name, len(trend), err, len(c.verdicts))
		}
		for i, p := range trend {
			got := ""
			if p.Row.VsPrevious != nil {
				got = p.Row.VsPrevious.Verdict.String()
			}
			if got != c.verdicts[i] {
				t.Errorf("%s night %s: vs previous %q; want %q", c.series.Name, p.Night.Date, got, c.verdicts[i])
			}
		}
		if last := nights[len(nights)-1]; !strings.Contains(last.Note, c.note) {
			t.Errorf("%s, the last night's note %q; want it to say %q", c.series.Name, last.Note, c.note)
		}
	}
}

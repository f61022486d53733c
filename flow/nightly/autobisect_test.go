package nightly

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/testbed/testseries"
)

// A change-point mail tells the excursions inside a change point's range
// of the same metric and line (a bad night may hide which kernel moved)
// and the night's new ones, and no other.
func TestMailExcursions(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(26, 1))
	var files []string
	for i := range 30 {
		files = append(files, testseries.WriteBadNight(t, dir, i, rng))
	}
	imp, err := Import(ctx, db, history.Series{Name: "public", Kind: history.ImageSeries, Source: "imported"}, compare.Options{MinEffect: 0.05}, files)
	if err != nil {
		t.Fatal(err)
	}
	exc, err := db.Excursions(ctx, imp.Series.ID)
	if err != nil || len(exc) != 1 {
		t.Fatalf("excursions %+v, %v; want the bad night alone", exc, err)
	}
	bad := exc[0]
	r := &seriesRun{db: db, n: &Night{Series: imp.Series}}
	around := history.ChangePoint{Metric: bad.Metric, Line: history.LineKernel, BeforeNight: "2026-01-10", Night: "2026-01-12"}
	for _, c := range []struct {
		name  string
		cps   []history.ChangePoint
		fresh []history.Excursion
		want  int
	}{
		{"a range around the bad night", []history.ChangePoint{around}, nil, 1},
		{"the host line's range around it", []history.ChangePoint{{Metric: bad.Metric, Line: history.LineHost, BeforeNight: "2026-01-10", Night: "2026-01-12"}}, nil, 0},
		{"a range after it", []history.ChangePoint{{Metric: bad.Metric, Line: history.LineKernel, BeforeNight: "2026-01-15", Night: "2026-01-16"}}, nil, 0},
		{"a range after it, the bad night new tonight", []history.ChangePoint{{Metric: bad.Metric, Line: history.LineKernel, BeforeNight: "2026-01-15", Night: "2026-01-16"}}, exc, 1},
	} {
		r.n.Excursions = c.fresh
		got, err := r.mailExcursions(ctx, c.cps)
		if err != nil || len(got) != c.want || c.want == 1 && got[0].Night != "2026-01-11" {
			t.Errorf("%s: mail excursions %+v, %v; want %d", c.name, got, err, c.want)
		}
	}
}

// TestWorseFollowsTheUnit checks that a change point's direction is its
// unit's: a rise of a cost per operation and a fall of a rate are worse.
func TestWorseFollowsTheUnit(t *testing.T) {
	for _, tc := range []struct {
		unit  string
		delta float64
		want  bool
	}{
		{"insn/op", +3, true},
		{"insn/op", -3, false},
		{"sec/op", +3, true},
		{"ops/s", -3, true},
		{"ops/s", +3, false},
		{"widgets", -3, true}, // no known direction: bisected, as --fail-on regression counts it
	} {
		cp := history.ChangePoint{Metric: history.Metric{Benchmark: "X", Unit: tc.unit}, DeltaPct: tc.delta}
		if got := worse(cp); got != tc.want {
			t.Errorf("worse(%+g%% %s) = %v; want %v", tc.delta, tc.unit, got, tc.want)
		}
	}
}

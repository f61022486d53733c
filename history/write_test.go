package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lpmbisect/lpmbisect/stats/compare"
)

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, location string) {
		db := openFresh(t, location)
		f := nightFixture("bpf-next", 0)
		// Values a backend might not keep: infinite intervals (too few
		// boots), NaN (SQLite has none), no comparison at all.
		f.rows[0].Tip.Lo, f.rows[0].Tip.Hi = math.Inf(-1), math.Inf(1)
		f.rows[0].VsPrevious = &Comparison{Verdict: compare.Unknown, DeltaPct: math.NaN(), P: math.NaN()}
		f.rows[1].VsReference = nil
		f.night.Note = "toolchain changed: gcc 12.2.0 → 13.1.0; CONFIG_X=y"
		before := time.Now().Add(-time.Second)
		seriesID, nightID, inserted, err := f.store(ctx, db)
		if err != nil {
			t.Fatalf("store = %v", err)
		}
		if inserted != len(f.boots) {
			t.Errorf("store inserted %d boots; want %d", inserted, len(f.boots))
		}

		s, err := db.SeriesNamed(ctx, "bpf-next")
		if err != nil {
			t.Fatalf("SeriesNamed = %v", err)
		}
		want := f.series
		want.ID, want.TipCommit, want.TipImageSHA256 = seriesID, f.night.Tip.Commit, f.night.Tip.ImageSHA256
		want.Created, want.Updated = s.Created, s.Updated
		if !reflect.DeepEqual(s, want) {
			t.Errorf("SeriesNamed = %+v;\nwant %+v", s, want)
		}
		if s.Created.Before(before) || s.Created.After(time.Now()) || s.Created.Location() != time.UTC {
			t.Errorf("series created %v; want a UTC time in the last second", s.Created)
		}

		n, err := db.Night(ctx, seriesID, f.night.Date)
		if err != nil {
			t.Fatalf("Night = %v", err)
		}
		wantNight := f.night
		wantNight.ID, wantNight.SeriesID = nightID, seriesID
		wantNight.Started = wantNight.Started.Truncate(time.Microsecond)
		wantNight.Finished = wantNight.Finished.Truncate(time.Microsecond)
		if !reflect.DeepEqual(n, wantNight) {
			t.Errorf("Night = %+v;\nwant %+v", n, wantNight)
		}

		boots, err := db.Boots(ctx, nightID)
		if err != nil {
			t.Fatalf("Boots = %v", err)
		}
		if len(boots) != len(f.boots) {
			t.Fatalf("Boots returned %d; want %d", len(boots), len(f.boots))
		}
		// Boots come by role, then index: reference before tip.
		for i, b := range boots {
			w := f.boots[(i+3)%6]
			w.ID, w.NightID, w.Recorded = b.ID, nightID, b.Recorded
			if !reflect.DeepEqual(b, w) {
				t.Errorf("Boots[%d] = %+v;\nwant %+v", i, b, w)
			}
			if b.Recorded.Before(before) {
				t.Errorf("Boots[%d].Recorded = %v; want when it was stored", i, b.Recorded)
			}
		}

		rows, err := db.NightRows(ctx, nightID)
		if err != nil {
			t.Fatalf("NightRows = %v", err)
		}
		if len(rows) != 2 {
			t.Fatalf("NightRows returned %d rows; want 2", len(rows))
		}
		for i := range rows {
			w := f.rows[i]
			w.NightID = nightID
			if !equalRows(rows[i], w) {
				t.Errorf("NightRows[%d] = %s;\nwant %s", i, fmtRow(rows[i]), fmtRow(w))
			}
		}
	})
}

// equalRows compares rows with NaN equal to NaN.
func equalRows(a, b NightRow) bool {
	return reflect.DeepEqual(fmtRow(a), fmtRow(b))
}

// fmtRow prints a row with its comparisons, NaN as NaN.
func fmtRow(r NightRow) string {
	c := func(c *Comparison) string {
		if c == nil {
			return "none"
		}
		return fmt.Sprintf("%+v", *c)
	}
	return fmt.Sprintf("%d %v tip %+v ref %+v ratio %v prev %s vs-ref %s",
		r.NightID, r.Metric, r.Tip, r.Reference, r.Ratio, c(r.VsPrevious), c(r.VsReference))
}

func TestPutSeriesUpdatesConfigKeepsTip(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, location string) {
		db := openFresh(t, location)
		f := nightFixture("s", 0)
		seriesID, _, _, err := f.store(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		first, _ := db.SeriesNamed(ctx, "s")
		changed := f.series
		changed.Bench, changed.Accel, changed.Kind, changed.Source = "update", "tcg", ImageSeries, "/ci/drops"
		var got Series
		if err := db.Write(ctx, func(tx *Tx) error {
			got, err = tx.PutSeries(ctx, changed)
			return err
		}); err != nil {
			t.Fatalf("PutSeries(changed) = %v", err)
		}
		if got.ID != seriesID || got.Bench != "update" || got.Kind != ImageSeries || got.Source != "/ci/drops" ||
			got.TipCommit != f.night.Tip.Commit || !got.Created.Equal(first.Created) {
			t.Errorf("PutSeries(changed) = %+v; want ID %d, the new config, the old tip and creation time", got, seriesID)
		}
		all, err := db.AllSeries(ctx)
		if err != nil || len(all) != 1 {
			t.Errorf("AllSeries = %d series, %v; want 1", len(all), err)
		}
		err = db.Write(ctx, func(tx *Tx) error { return tx.SetTip(ctx, seriesID+100, "x", "") })
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("SetTip(no such series) = %v; want ErrNotFound", err)
		}
		err = db.Write(ctx, func(tx *Tx) error {
			_, err := tx.PutSeries(ctx, Series{Name: "bad", Kind: "svn"})
			return err
		})
		if err == nil {
			t.Errorf("PutSeries(kind svn) = nil; want an error")
		}
	})
}

func TestKilledNightStoresNothingTwice(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, location string) {
		db := openFresh(t, location)
		f := nightFixture("s", 0)
		killed := errors.New("killed half way")

		// The first run dies after the night and half of its boots: the
		// transaction is rolled back, nothing of the night is stored.
		err := db.Write(ctx, func(tx *Tx) error {
			s, err := tx.PutSeries(ctx, f.series)
			if err != nil {
				return err
			}
			n := f.night
			n.SeriesID = s.ID
			id, err := tx.PutNight(ctx, n)
			if err != nil {
				return err
			}
			for _, b := range f.boots[:3] {
				b.NightID = id
				if _, err := tx.PutBoot(ctx, b); err != nil {
					return err
				}
			}
			return killed
		})
		if !errors.Is(err, killed) {
			t.Fatalf("Write = %v; want the function's error", err)
		}
		if _, err := db.SeriesNamed(ctx, "s"); !errors.Is(err, ErrNotFound) {
			t.Errorf("SeriesNamed after a rolled-back write = %v; want ErrNotFound", err)
		}
		for _, table := range []string{"lpmbisect_nights", "lpmbisect_boots", "lpmbisect_boot_summaries"} {
			if n := count(t, db, table); n != 0 {
				t.Errorf("%s has %d rows after a rolled-back write; want 0", table, n)
			}
		}

		// A panic rolls back too.
		func() {
			defer func() { recover() }()
			db.Write(ctx, func(tx *Tx) error {
				tx.PutSeries(ctx, f.series)
				panic("boom")
			})
		}()
		if n := count(t, db, "lpmbisect_series"); n != 0 {
			t.Errorf("%d series after a write that panicked; want 0", n)
		}

		// The re-run stores the night; running it yet again (or a second
		// process doing the same night) changes no count.
		for run := 1; run <= 3; run++ {
			_, nightID, inserted, err := f.store(ctx, db)
			if err != nil {
				t.Fatalf("run %d: store = %v", run, err)
			}
			wantInserted := 0
			if run == 1 {
				wantInserted = len(f.boots)
			}
			if inserted != wantInserted {
				t.Errorf("run %d: %d boots inserted; want %d", run, inserted, wantInserted)
			}
			want := map[string]int{"lpmbisect_series": 1, "lpmbisect_nights": 1, "lpmbisect_boots": 6,
				"lpmbisect_boot_summaries": 12, "lpmbisect_night_rows": 2}
			for table, n := range want {
				if got := count(t, db, table); got != n {
					t.Errorf("run %d: %s has %d rows; want %d", run, table, got, n)
				}
			}
			// A boot stored again with other results keeps the first.
			if run == 3 {
				other := f.boots[0]
				other.NightID, other.Results = nightID, "BenchmarkX 1 1 ns/op\n"
				var ok bool
				db.Write(ctx, func(tx *Tx) error { ok, err = tx.PutBoot(ctx, other); return err })
				boots, _ := db.Boots(ctx, nightID)
				if ok || err != nil || boots[3].Results != f.boots[0].Results {
					t.Errorf("PutBoot(stored key, other results) = %v, %v; the stored results are %q; want false, nil, the first", ok, err, boots[3].Results)
				}
			}
		}
	})
}

func TestKilledProcessMidWrite(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, location string) {
		openFresh(t, location).Close()
		h := startHelper(t, "hang-in-write", location, "writing")
		h.kill()

		db := openFresh(t, location)
		if _, err := db.SeriesNamed(ctx, "killed"); !errors.Is(err, ErrNotFound) {
			t.Errorf("SeriesNamed after the writer was killed = %v; want ErrNotFound", err)
		}
		if n := count(t, db, "lpmbisect_boots"); n != 0 {
			t.Errorf("%d boots after the writer was killed; want 0", n)
		}
		// The night runs again, to completion, and the database is whole.
		if _, _, inserted, err := nightFixture("killed", 0).store(ctx, db); err != nil || inserted != 6 {
			t.Errorf("store after the kill = %d boots, %v; want 6, nil", inserted, err)
		}
		checkIntegrity(t, db)
	})
}

func TestConcurrentWriters(t *testing.T) {
	forEachBackend(t, func(t *testing.T, location string) {
		openFresh(t, location).Close()
		// Two processes write the same ten nights, boots, rows and change
		// point at the same time, as two nightly runs without the lock
		// would.
		const nights = 30
		helpers := []*helper{
			startHelper(t, fmt.Sprint("write-nights:", nights), location, "ready"),
			startHelper(t, fmt.Sprint("write-nights:", nights), location, "ready"),
		}
		var wg sync.WaitGroup
		errs := make([]error, len(helpers))
		for i, h := range helpers {
			h.stdin.Write([]byte("go\n"))
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = h.cmd.Wait()
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("writer %d: %v", i, err)
			}
		}
		db := openFresh(t, location)
		want := map[string]int{"lpmbisect_series": 1, "lpmbisect_nights": nights, "lpmbisect_boots": 6 * nights,
			"lpmbisect_boot_summaries": 12 * nights, "lpmbisect_night_rows": 2 * nights, "lpmbisect_change_points": 1}
		for table, n := range want {
			if got := count(t, db, table); got != n {
				t.Errorf("%s has %d rows; want %d", table, got, n)
			}
		}
		checkIntegrity(t, db)
	})
}

func checkIntegrity(t *testing.T, db *DB) {
	t.Helper()
	if db.Backend() != "sqlite" {
		return
	}
	var result string
	if err := db.sql.QueryRow("PRAGMA integrity_check").Scan(&result); err != nil || result != "ok" {
		t.Errorf("integrity_check = %q, %v; want ok", result, err)
	}
	var fk int
	if err := db.sql.QueryRow("SELECT COUNT(*) FROM pragma_foreign_key_check").Scan(&fk); err != nil || fk != 0 {
		t.Errorf("foreign_key_check found %d violations, %v; want 0", fk, err)
	}
}

func TestPutBootRefusesUntrustedResults(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, location string) {
		db := openFresh(t, location)
		f := nightFixture("s", 0)
		_, nightID, _, err := f.store(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		cases := map[string]Boot{
			"too large":    {Role: RoleTip, Index: 9, Results: strings.Repeat("x", maxResultsBytes+1)},
			"NUL byte":     {Role: RoleTip, Index: 9, Results: "Benchmark\x00"},
			"bad role":     {Role: "Tip; DROP", Index: 9},
			"NaN median":   {Role: RoleTip, Index: 9, Summaries: []BootSummary{{Benchmark: "b", Unit: "ns/op", Median: math.NaN()}}},
			"negative idx": {Role: RoleTip, Index: -1},
		}
		for name, b := range cases {
			b.NightID = nightID
			err := db.Write(ctx, func(tx *Tx) error { _, err := tx.PutBoot(ctx, b); return err })
			if err == nil {
				t.Errorf("PutBoot(%s) = nil; want an error", name)
			}
		}
		if n := count(t, db, "lpmbisect_boots"); n != 6 {
			t.Errorf("%d boots after the refusals; want 6", n)
		}
	})
}

func TestManyRowsAndReplace(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, location string) {
		db := openFresh(t, location)
		_, nightID, _, err := nightFixture("s", 0).store(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		// More rows and summaries than one INSERT statement takes.
		var rows []NightRow
		var sums []BootSummary
		for i := 0; i < 123; i++ {
			m := Metric{fmt.Sprintf("Bench%03d", i), "insn/op"}
			rows = append(rows, NightRow{Metric: m, Tip: Estimate{Center: float64(i), Boots: 5}, Ratio: float64(i) / 100})
			sums = append(sums, BootSummary{Benchmark: m.Benchmark, Unit: m.Unit, Median: float64(i), Samples: 5, Min: float64(i), Max: float64(i)})
		}
		err = db.Write(ctx, func(tx *Tx) error {
			if _, err := tx.PutBoot(ctx, Boot{NightID: nightID, Role: RoleRebuiltPrevious, Index: 0, Summaries: sums}); err != nil {
				return err
			}
			return tx.SetNightRows(ctx, nightID, rows)
		})
		if err != nil {
			t.Fatalf("store 123 rows and summaries: %v", err)
		}
		got, err := db.NightRows(ctx, nightID)
		if err != nil || len(got) != len(rows) {
			t.Fatalf("NightRows = %d rows, %v; want %d", len(got), err, len(rows))
		}
		for i := range got {
			rows[i].NightID = nightID
			if !equalRows(got[i], rows[i]) {
				t.Errorf("NightRows[%d] = %s; want %s", i, fmtRow(got[i]), fmtRow(rows[i]))
				break
			}
		}
		boots, _ := db.Boots(ctx, nightID) // by role: rebuilt-previous, reference, tip
		if b := boots[0]; b.Role != RoleRebuiltPrevious || !reflect.DeepEqual(b.Summaries, sums) {
			t.Errorf("Boots[0] = %s with %d summaries; want rebuilt-previous with the 123 stored", b.Role, len(b.Summaries))
		}
		// Analysed again with fewer benchmarks: exactly the new rows.
		if err := db.Write(ctx, func(tx *Tx) error { return tx.SetNightRows(ctx, nightID, rows[:3]) }); err != nil {
			t.Fatal(err)
		}
		if got, _ := db.NightRows(ctx, nightID); len(got) != 3 {
			t.Errorf("after replacing with 3 rows NightRows = %d rows; want 3", len(got))
		}
	})
}

// SeriesNamed returns the series called name, or ErrNotFound.
func (db *DB) SeriesNamed(ctx context.Context, name string) (Series, error) {
	c := conn{q: db.sql, db: db}
	s, err := scanSeries(c.queryRow(ctx, `SELECT `+seriesColumns+` FROM lpmbisect_series WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return Series{}, fmt.Errorf("series %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return Series{}, db.errorf(err, "read series %s", name)
	}
	return s, nil
}

// Backend is "sqlite" or "postgres".
func (db *DB) Backend() string { return db.d.name }

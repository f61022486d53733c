package history

import (
	"context"
	"errors"
	"math"
	"reflect"
	"testing"
)

func TestExcursions(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, location string) {
		db := openFresh(t, location)
		var nights []int64
		var seriesID int64
		for i := range 3 {
			f := nightFixture("bpf-next", i)
			s, n, _, err := f.store(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			seriesID, nights = s, append(nights, n)
		}
		other, otherNight, _, err := nightFixture("other", 0).store(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		lookup := nightFixture("", 0).rows[0].Metric
		set := func(line Line, excs ...Excursion) error {
			return db.Write(ctx, func(tx *Tx) error { return tx.SetExcursions(ctx, seriesID, lookup, line, excs) })
		}
		exc := func(night int, line Line, deltaPct float64) Excursion {
			return Excursion{NightID: nights[night], Night: nightFixture("", night).night.Date, Metric: lookup, Line: line, Level: 1.17, DeltaPct: deltaPct}
		}
		read := func() []Excursion {
			t.Helper()
			got, err := db.Excursions(ctx, seriesID)
			if err != nil {
				t.Fatalf("Excursions = %v", err)
			}
			return got
		}

		if err := set(LineKernel, exc(1, LineKernel, -41)); err != nil {
			t.Fatalf("SetExcursions = %v", err)
		}
		if err := set(LineHost, exc(2, LineHost, 12.5), exc(0, LineHost, math.NaN())); err != nil {
			t.Fatalf("SetExcursions(host) = %v", err)
		}
		want := []Excursion{exc(0, LineHost, math.NaN()), exc(1, LineKernel, -41), exc(2, LineHost, 12.5)}
		if got := read(); len(got) != 3 || !reflect.DeepEqual(got[1:], want[1:]) || !math.IsNaN(got[0].DeltaPct) || got[0].NightID != nights[0] {
			t.Errorf("Excursions = %+v;\nwant %+v", got, want)
		}

		// A pass replaces one line's set and leaves the other's.
		if err := set(LineKernel, exc(2, LineKernel, 30)); err != nil {
			t.Fatal(err)
		}
		want = []Excursion{exc(2, LineHost, 12.5), exc(2, LineKernel, 30)}
		if got := read(); len(got) != 3 || !reflect.DeepEqual(got[1:], want) {
			t.Errorf("Excursions after a new kernel-line set = %+v; want the host line's and %+v", got, want)
		}

		// New rows for a night take its excursions with them.
		if err := db.Write(ctx, func(tx *Tx) error { return tx.SetNightRows(ctx, nights[2], nightFixture("", 2).rows) }); err != nil {
			t.Fatal(err)
		}
		if got := read(); len(got) != 1 || got[0].NightID != nights[0] {
			t.Errorf("Excursions after night 2's rows were replaced = %+v; want night 0's alone", got)
		}

		// Another series' night, or a night without that metric's row,
		// is refused, and the set it was part of is not half written.
		err = set(LineKernel, exc(0, LineKernel, 20), Excursion{NightID: otherNight, Metric: lookup, Line: LineKernel})
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("SetExcursions(another series' night) = %v; want ErrNotFound", err)
		}
		if err := set(LineKernel, exc(0, LineKernel, 20)); err != nil {
			t.Fatal(err)
		}
		missing := Metric{Benchmark: "LPMTrie/op=delete", Unit: "insn/op"}
		err = db.Write(ctx, func(tx *Tx) error {
			return tx.SetExcursions(ctx, seriesID, missing, LineKernel, []Excursion{{NightID: nights[1], Metric: missing, Line: LineKernel}})
		})
		if err == nil {
			t.Errorf("SetExcursions(a night without a row for %s) = nil; want an error", missing)
		}
		err = db.Write(ctx, func(tx *Tx) error {
			if err := tx.SetExcursions(ctx, seriesID, lookup, LineKernel, nil); err != nil {
				return err
			}
			return tx.SetExcursions(ctx, seriesID, lookup, "neither", nil)
		})
		if err == nil {
			t.Errorf("SetExcursions(line %q) = nil; want an error", "neither")
		}
		if got := read(); len(got) != 2 {
			t.Errorf("Excursions after refused writes = %+v; want the 2 stored before", got)
		}
		if got, err := db.Excursions(ctx, other); err != nil || len(got) != 0 {
			t.Errorf("Excursions(other series) = %+v, %v; want none", got, err)
		}
	})
}

// A database of the first schema keeps its nights when migrated, and takes
// excursions after.
func TestMigrateFromVersion1(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, location string) {
		if _, _, err := migrateWith(ctx, location, migrations[:1]); err != nil {
			t.Fatalf("migrate to version 1: %v", err)
		}
		v1, err := open(ctx, location, migrations[:1])
		if err != nil {
			t.Fatal(err)
		}
		f := nightFixture("old", 0)
		seriesID, nightID, _, err := f.store(ctx, v1)
		v1.Close()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Open(ctx, location); !errors.Is(err, ErrNeedsMigration) {
			t.Fatalf("Open(version 1 database) = %v; want ErrNeedsMigration", err)
		}
		from, to, err := Migrate(ctx, location)
		if err != nil || from != 1 || to != schemaVersion {
			t.Fatalf("Migrate(version 1) = %d, %d, %v; want 1, %d, nil", from, to, err, schemaVersion)
		}
		db := openFresh(t, location)
		if rows, err := db.NightRows(ctx, nightID); err != nil || len(rows) != len(f.rows) {
			t.Errorf("NightRows after migrating = %d rows, %v; want the %d stored before", len(rows), err, len(f.rows))
		}
		err = db.Write(ctx, func(tx *Tx) error {
			return tx.SetExcursions(ctx, seriesID, f.rows[0].Metric, LineKernel, []Excursion{{NightID: nightID, Metric: f.rows[0].Metric, Line: LineKernel, Level: 1, DeltaPct: 9}})
		})
		if got, _ := db.Excursions(ctx, seriesID); err != nil || len(got) != 1 || got[0].Night != f.night.Date {
			t.Errorf("an excursion after migrating: %+v, %v; want it stored on %s", got, err, f.night.Date)
		}
	})
}

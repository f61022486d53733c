package history

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// storeSeries stores nights 0..len(statuses)-1 of a series with the given
// statuses and returns the series ID.
func storeSeries(t *testing.T, db *DB, name string, statuses ...NightStatus) int64 {
	t.Helper()
	ctx := context.Background()
	var seriesID int64
	for i, st := range statuses {
		f := nightFixture(name, i)
		f.night.Status = st
		if st != StatusMeasured {
			f.boots, f.rows = nil, nil
			f.night.Reason = string(st) + " for a reason"
		}
		id, _, _, err := f.store(ctx, db)
		if err != nil {
			t.Fatalf("store night %d: %v", i, err)
		}
		seriesID = id
	}
	return seriesID
}

func TestNightQueries(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, location string) {
		db := openFresh(t, location)
		// Nights 0..5 of 2026-03-01..06; stored out of order to show
		// that reads order by date.
		id := storeSeries(t, db, "s", StatusMeasured, StatusNoChange, StatusBuildFailed, StatusMeasured, StatusInconclusive)
		f5 := nightFixture("s", 5)
		if _, _, _, err := f5.store(ctx, db); err != nil {
			t.Fatal(err)
		}
		f5.night.Date = "2026-02-27" // an earlier night, stored last
		f5.night.Tip.Commit = strings.Repeat("e", 40)
		if _, _, _, err := f5.store(ctx, db); err != nil {
			t.Fatal(err)
		}
		storeSeries(t, db, "other", StatusMeasured, StatusMeasured) // must never show up in "s"

		nights, err := db.Nights(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var dates []string
		for _, n := range nights {
			dates = append(dates, n.Date+":"+string(n.Status))
		}
		want := "2026-02-27:measured 2026-03-01:measured 2026-03-02:no-change 2026-03-03:build-failed 2026-03-04:measured 2026-03-05:inconclusive 2026-03-06:measured"
		if got := strings.Join(dates, " "); got != want {
			t.Errorf("Nights = %s;\nwant %s", got, want)
		}

		lastTests := []struct{ before, want string }{
			{"", "2026-03-06"},
			{"2026-03-06", "2026-03-04"}, // re-running night 6 compares with night 4
			{"2026-03-04", "2026-03-01"},
			{"2026-03-01", "2026-02-27"},
			{"2026-02-27", ""},
		}
		for _, c := range lastTests {
			n, err := db.LastMeasured(ctx, id, c.before)
			if c.want == "" {
				if !errors.Is(err, ErrNotFound) {
					t.Errorf("LastMeasured(before %s) = %s, %v; want ErrNotFound", c.before, n.Date, err)
				}
				continue
			}
			if err != nil || n.Date != c.want {
				t.Errorf("LastMeasured(before %s) = %s, %v; want %s", c.before, n.Date, err, c.want)
			}
		}

		measured := nightFixture("s", 3).night.Tip
		failed := nightFixture("s", 2).night.Tip // only on a build-failed night
		tipTests := []struct {
			commit, image, want string
		}{
			{measured.Commit, "", "2026-03-04"},
			{"", measured.ImageSHA256, "2026-03-04"},
			{"unknown", measured.ImageSHA256, "2026-03-04"},
			{measured.Commit, "unknown", "2026-03-04"},
			{failed.Commit, failed.ImageSHA256, ""},
			{"", "", ""},
			{"unknown", "", ""},
		}
		for _, c := range tipTests {
			n, err := db.MeasuredTip(ctx, id, c.commit, c.image)
			if c.want == "" {
				if !errors.Is(err, ErrNotFound) {
					t.Errorf("MeasuredTip(%.8s, %.8s) = %s, %v; want ErrNotFound", c.commit, c.image, n.Date, err)
				}
				continue
			}
			if err != nil || n.Date != c.want {
				t.Errorf("MeasuredTip(%.8s, %.8s) = %s, %v; want %s", c.commit, c.image, n.Date, err, c.want)
			}
		}

		if _, err := db.Night(ctx, id, "2026-03-03"); err != nil {
			t.Errorf("Night(2026-03-03) = %v", err)
		}
		if _, err := db.Night(ctx, id, "2026-04-01"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Night(no such night) = %v; want ErrNotFound", err)
		}

		metrics, err := db.Metrics(ctx, id)
		if err != nil || fmt.Sprint(metrics) != "[LPMTrie/op=lookup insn/op LPMTrie/op=noop insn/op]" {
			t.Errorf("Metrics = %v, %v; want lookup and noop in insn/op", metrics, err)
		}
		trend, err := db.Trend(ctx, id, metrics[0])
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range trend {
			if p.Row.Metric != metrics[0] || p.Row.NightID != p.Night.ID {
				t.Errorf("Trend point %s has row %v of night %d", p.Night.Date, p.Row.Metric, p.Row.NightID)
			}
			got = append(got, fmt.Sprintf("%s=%g", p.Night.Date, p.Row.Tip.Center))
		}
		if g, w := strings.Join(got, " "), "2026-02-27=986 2026-03-01=981 2026-03-04=984 2026-03-06=986"; g != w {
			t.Errorf("Trend = %s;\nwant %s", g, w)
		}
		if trend, err := db.Trend(ctx, id, Metric{"LPMTrie/op=lookup", "ns/op"}); err != nil || len(trend) != 0 {
			t.Errorf("Trend(unit never measured) = %d points, %v; want none", len(trend), err)
		}
		if _, err := db.SeriesNamed(ctx, "nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("SeriesNamed(nope) = %v; want ErrNotFound", err)
		}
		all, _ := db.AllSeries(ctx)
		if len(all) != 2 || all[0].Name != "other" || all[1].Name != "s" {
			t.Errorf("AllSeries = %v; want other, s", all)
		}
	})
}

func TestChangePoints(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, location string) {
		db := openFresh(t, location)
		id := storeSeries(t, db, "s", StatusMeasured, StatusMeasured, StatusMeasured)
		otherID := storeSeries(t, db, "other", StatusMeasured)
		put := func(cp ChangePoint) (int64, error) {
			var out int64
			err := db.Write(ctx, func(tx *Tx) error {
				var err error
				out, err = tx.PutChangePoint(ctx, cp)
				return err
			})
			return out, err
		}
		lookup := Metric{"LPMTrie/op=lookup", "insn/op"}
		cp := ChangePoint{SeriesID: id, Metric: lookup, Line: LineKernel, Night: "2026-03-02", NightIndex: 1,
			BeforeNight: "2026-03-01", BeforeCommit: "aaaa", AfterCommit: "bbbb", DeltaPct: -21.3, P: 0.0004, Provisional: true}
		first, err := put(cp)
		if err != nil {
			t.Fatalf("PutChangePoint(new) = %v", err)
		}
		stored, _ := db.ChangePoint(ctx, first)
		if stored.Status != ChangeOpen || stored.FirstReported.IsZero() || !stored.Mailed.IsZero() || !stored.Provisional ||
			stored.BeforeCommit != "aaaa" || stored.AfterCommit != "bbbb" || stored.DeltaPct != -21.3 || stored.P != 0.0004 {
			t.Errorf("new change point = %+v; want it as stored: open, provisional, reported now, not mailed", stored)
		}

		// The mail goes out and someone acknowledges it.
		stored.Status, stored.Mailed = ChangeAcknowledged, time.Now()
		if _, err := put(stored); err != nil {
			t.Fatalf("PutChangePoint(acknowledge) = %v", err)
		}
		// Detected again the next night with a new magnitude: the same
		// change point, still acknowledged and mailed.
		time.Sleep(5 * time.Millisecond)
		again := cp
		again.DeltaPct, again.P, again.NightIndex, again.Provisional = -21.9, 0.0001, 1, false
		second, err := put(again)
		if err != nil || second != first {
			t.Fatalf("PutChangePoint(same place again) = %d, %v; want the stored %d", second, err, first)
		}
		got, _ := db.ChangePoint(ctx, first)
		if got.DeltaPct != -21.9 || got.Provisional || got.Status != ChangeAcknowledged || got.Mailed.IsZero() ||
			!got.FirstReported.Equal(stored.FirstReported) || !got.Updated.After(stored.FirstReported) {
			t.Errorf("change point detected again = %+v; want the new magnitude, still acknowledged and mailed, first reported kept", got)
		}

		// The host line at the same night is another change point.
		host := cp
		host.Line = LineHost
		hostID, err := put(host)
		if err != nil || hostID == first {
			t.Errorf("PutChangePoint(host line) = %d, %v; want a new change point", hostID, err)
		}

		// Later analysis moves it by a night, with its bisection.
		got.Night, got.NightIndex, got.BeforeNight = "2026-03-03", 2, "2026-03-02"
		got.Bisect = Bisection{State: BisectFound, Culprit: "cccc", Subject: "bpf: inline longest_prefix_match"}
		if _, err := put(got); err != nil {
			t.Fatalf("PutChangePoint(moved) = %v", err)
		}
		moved, _ := db.ChangePoint(ctx, first)
		if moved.Night != "2026-03-03" || moved.Bisect != got.Bisect {
			t.Errorf("moved change point = %+v; want night 2026-03-03 and the culprit", moved)
		}
		// Moving the host one onto the kernel one's place is a duplicate.
		hostCP, _ := db.ChangePoint(ctx, hostID)
		hostCP.Line = LineKernel
		hostCP.Night = "2026-03-03"
		if _, err := put(hostCP); err == nil {
			t.Errorf("PutChangePoint(onto another live change point) = nil; want an error")
		}

		// Withdrawn, it no longer blocks its place: a new one may sit there.
		moved.Status = ChangeWithdrawn
		if _, err := put(moved); err != nil {
			t.Fatalf("PutChangePoint(withdraw) = %v", err)
		}
		fresh := cp
		fresh.Night = "2026-03-03"
		newID, err := put(fresh)
		if err != nil || newID == first {
			t.Errorf("PutChangePoint(where a withdrawn one was) = %d, %v; want a new change point", newID, err)
		}

		if _, err := put(ChangePoint{SeriesID: otherID, Metric: lookup, Line: LineKernel, Night: "2026-03-01", Status: ChangeMuted}); err != nil {
			t.Fatal(err)
		}

		listTests := []struct {
			series   int64
			statuses []ChangeStatus
			want     int
		}{
			{id, nil, 3},
			{id, []ChangeStatus{ChangeOpen}, 2},
			{id, []ChangeStatus{ChangeOpen, ChangeAcknowledged, ChangeMuted}, 2},
			{id, []ChangeStatus{ChangeWithdrawn}, 1},
			{otherID, nil, 1},
			{0, nil, 4},
			{0, []ChangeStatus{ChangeMuted}, 1},
		}
		for _, c := range listTests {
			cps, err := db.ChangePoints(ctx, c.series, c.statuses...)
			if err != nil || len(cps) != c.want {
				t.Errorf("ChangePoints(%d, %v) = %d, %v; want %d", c.series, c.statuses, len(cps), err, c.want)
			}
		}

		bad := []ChangePoint{
			{SeriesID: id, Metric: lookup, Line: "tip", Night: "2026-03-01"},
			{SeriesID: id, Metric: lookup, Line: LineKernel, Night: "yesterday"},
			{SeriesID: id, Metric: lookup, Line: LineKernel, Night: "2026-03-01", Status: "closed"},
			{SeriesID: id, Line: LineKernel, Night: "2026-03-01"},
		}
		for _, b := range bad {
			if _, err := put(b); err == nil {
				t.Errorf("PutChangePoint(%+v) = nil; want an error", b)
			}
		}
		if _, err := put(ChangePoint{ID: 9999, SeriesID: id, Metric: lookup, Line: LineKernel, Night: "2026-03-01"}); !errors.Is(err, ErrNotFound) {
			t.Errorf("PutChangePoint(no such ID) = %v; want ErrNotFound", err)
		}
		if _, err := db.ChangePoint(ctx, 9999); !errors.Is(err, ErrNotFound) {
			t.Errorf("ChangePoint(9999) = %v; want ErrNotFound", err)
		}
	})
}

func TestPutNightValidates(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, location string) {
		db := openFresh(t, location)
		id := storeSeries(t, db, "s", StatusMeasured)
		for _, n := range []Night{
			{SeriesID: id, Date: "2026-3-1", Status: StatusMeasured},
			{SeriesID: id, Date: "2026-02-30", Status: StatusMeasured},
			{SeriesID: id, Date: "2026-03-02", Status: "great"},
			{SeriesID: id + 99, Date: "2026-03-02", Status: StatusMeasured}, // no such series
		} {
			err := db.Write(ctx, func(tx *Tx) error { _, err := tx.PutNight(ctx, n); return err })
			if err == nil {
				t.Errorf("PutNight(%s, %s, series %d) = nil; want an error", n.Date, n.Status, n.SeriesID)
			}
		}
		// A re-run replaces what the night said and keeps its ID.
		f := nightFixture("s", 0)
		f.night.Status, f.night.Reason = StatusRunning, ""
		_, first, _, _ := f.store(ctx, db)
		f.night.Status, f.night.Reason = StatusBootFailed, "6.13 panics at boot"
		_, second, _, err := f.store(ctx, db)
		n, _ := db.Night(ctx, id, f.night.Date)
		if err != nil || first != second || n.Status != StatusBootFailed || n.Reason != "6.13 panics at boot" {
			t.Errorf("re-run night = %d→%d, %+v, %v; want the same ID with the new status and reason", first, second, n, err)
		}
	})
}

// TestTrendKeepsUnitsApart checks that a series whose nights changed
// accelerator (wall time under the old auto, icount now) never puts a
// wall-time row and an instruction count in one trend: a trend, which the
// change-point pass runs on, is one benchmark in one unit.
func TestTrendKeepsUnitsApart(t *testing.T) {
	forEachBackend(t, func(t *testing.T, location string) {
		db := openFresh(t, location)
		ctx := context.Background()
		var seriesID int64
		for i := range 3 {
			f := nightFixture("units", i)
			if i == 1 { // a wall-time night between two icount nights
				f.night.Accel = "tcg"
				for j := range f.rows {
					f.rows[j].Metric.Unit = "sec/op"
				}
				for j := range f.boots {
					for k := range f.boots[j].Summaries {
						f.boots[j].Summaries[k].Unit = "sec/op"
					}
				}
			}
			id, _, _, err := f.store(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			seriesID = id
		}
		for unit, nights := range map[string]int{"insn/op": 2, "sec/op": 1} {
			trend, err := db.Trend(ctx, seriesID, Metric{"LPMTrie/op=lookup", unit})
			if err != nil || len(trend) != nights {
				t.Fatalf("Trend(lookup, %s) = %d nights, %v; want %d", unit, len(trend), err, nights)
			}
			for _, p := range trend {
				if p.Row.Unit != unit || (unit == "sec/op") != (p.Night.Accel == "tcg") {
					t.Errorf("Trend(lookup, %s) holds a %s row of a %s night", unit, p.Row.Unit, p.Night.Accel)
				}
			}
		}
	})
}

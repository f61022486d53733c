package history

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// The triage rule, on both backends: every state can be set and set back,
// each decision lands in the audit log with who, when and why, bisect is
// asked once and only on the kernel line, and a withdrawn change point
// or a refused decision changes nothing.
func TestTriage(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, location string) {
		db, seriesID, metric := triageFixture(t, location)
		var kernel, host, gone int64
		var err error
		err = db.Write(ctx, func(tx *Tx) error {
			put := func(line Line, night string, status ChangeStatus) int64 {
				id, perr := tx.PutChangePoint(ctx, ChangePoint{SeriesID: seriesID, Metric: metric, Line: line,
					Night: night, NightIndex: 3, DeltaPct: 7, P: 1e-5, Status: status})
				if perr != nil && err == nil {
					err = perr
				}
				return id
			}
			kernel, host, gone = put(LineKernel, "2026-03-04", ChangeOpen), put(LineHost, "2026-03-04", ChangeOpen), put(LineKernel, "2026-03-05", ChangeWithdrawn)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		steps := []struct {
			id     int64
			action TriageAction
			want   ChangeStatus
			bisect BisectState
			err    error
		}{
			{kernel, ActionAcknowledge, ChangeAcknowledged, BisectNone, nil},
			{kernel, ActionInvalid, ChangeInvalid, BisectNone, nil},
			{kernel, ActionMute, ChangeMuted, BisectNone, nil},
			{kernel, ActionOpen, ChangeOpen, BisectNone, nil},
			{kernel, ActionBisect, ChangeOpen, BisectRequested, nil},
			{kernel, ActionBisect, ChangeOpen, BisectRequested, ErrBadTriage}, // asked already
			{host, ActionBisect, ChangeOpen, BisectNone, ErrBadTriage},        // the host line
			{gone, ActionAcknowledge, ChangeWithdrawn, BisectNone, ErrBadTriage},
			{kernel, "shrug", ChangeOpen, BisectRequested, ErrBadTriage},
			{99999, ActionAcknowledge, "", BisectNone, ErrNotFound},
		}
		gen, err := db.Generation(ctx)
		if err != nil {
			t.Fatal(err)
		}
		logged := 0
		for _, s := range steps {
			_, changed, err := db.Triage(ctx, s.id, s.action, "looked at it <b>", "alice@example")
			if changed != (err == nil) {
				t.Errorf("Triage(%d, %s) = changed %v, %v", s.id, s.action, changed, err)
			}
			if !errors.Is(err, s.err) || (s.err == nil) != (err == nil) {
				t.Fatalf("Triage(%d, %s) = %v; want %v", s.id, s.action, err, s.err)
			}
			if err == nil {
				logged++
			}
			if s.err == ErrNotFound {
				continue
			}
			cp, err := db.ChangePoint(ctx, s.id)
			if err != nil || cp.Status != s.want || cp.Bisect.State != s.bisect {
				t.Errorf("after Triage(%d, %s): status %s, bisection %q, %v; want %s, %q", s.id, s.action, cp.Status, cp.Bisect.State, err, s.want, s.bisect)
			}
		}
		if now, err := db.Generation(ctx); err != nil || now != gen+int64(logged) {
			t.Errorf("Generation = %d, %v after %d triages from %d; want one more a write, none for a refused one", now, err, logged, gen)
		}
		log, err := db.TriageLog(ctx, seriesID)
		if err != nil || len(log) != logged {
			t.Fatalf("TriageLog = %d rows, %v; want %d", len(log), err, logged)
		}
		last := log[len(log)-1]
		if last.Action != ActionBisect || last.Who != "alice@example" || last.Comment != "looked at it <b>" || last.At.IsZero() ||
			last.StatusBefore != ChangeOpen || last.StatusAfter != ChangeOpen {
			t.Errorf("last triage = %+v", last)
		}
		if _, _, err := db.Triage(ctx, kernel, ActionAcknowledge, string(make([]byte, MaxTriageComment+1)), "bob"); !errors.Is(err, ErrBadTriage) {
			t.Errorf("Triage with a long comment = %v; want ErrBadTriage", err)
		}
		for _, who := range []string{" ", "bob\nmuted by admin from 10.0.0.1", "\x1b[31mbob", "bob\u202e", strings.Repeat("x", 201)} {
			if _, _, err := db.Triage(ctx, kernel, ActionAcknowledge, "", who); !errors.Is(err, ErrBadTriage) {
				t.Errorf("Triage by %q = %v; want ErrBadTriage", who, err)
			}
		}
		if n := count(t, db, "lpmbisect_triage"); n != logged {
			t.Errorf("%d triage rows after refused decisions; want %d", n, logged)
		}
	})
}

// A decision that sets the state a change point has, without a comment,
// changes nothing and leaves no row in the audit log; with a comment it
// is recorded. An audit log written before the action was named "open"
// reads as open.
func TestTriageUnchanged(t *testing.T) {
	ctx := context.Background()
	db, seriesID, metric := triageFixture(t, backends[0].location(t))
	var id int64
	err := db.Write(ctx, func(tx *Tx) error {
		var err error
		id, err = tx.PutChangePoint(ctx, ChangePoint{SeriesID: seriesID, Metric: metric, Line: LineKernel,
			Night: "2026-03-04", NightIndex: 3, DeltaPct: -12, P: 1e-5, Status: ChangeOpen})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	gen, _ := db.Generation(ctx)
	for _, s := range []struct {
		action  TriageAction
		comment string
		changed bool
	}{
		{ActionOpen, "", false},
		{ActionAcknowledge, "", true},
		{ActionAcknowledge, "", false},
		{ActionAcknowledge, " ", false},
		{ActionAcknowledge, "the bisection agrees", true},
	} {
		cp, changed, err := db.Triage(ctx, id, s.action, s.comment, "alice")
		if err != nil || changed != s.changed || cp.ID != id {
			t.Errorf("Triage(%s, %q) = #%d, changed %v, %v; want changed %v", s.action, s.comment, cp.ID, changed, err, s.changed)
		}
	}
	log, _ := db.TriageLog(ctx, seriesID)
	if now, _ := db.Generation(ctx); len(log) != 2 || now != gen+2 {
		t.Errorf("%d rows in the audit log, generation +%d; want 2 and 2 (the decisions that changed something)", len(log), now-gen)
	}
	err = db.Write(ctx, func(tx *Tx) error {
		_, err := tx.c.exec(ctx, `INSERT INTO lpmbisect_triage (change_point_id, action, status_before, status_after, comment, who, at)
			VALUES (?, 'untriaged', 'acknowledged', 'open', '', 'bob', ?)`, id, dbTime(time.Now()))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if log, _ := db.TriageLog(ctx, seriesID); len(log) != 3 || log[2].Action != ActionOpen {
		t.Errorf("an audit log row written as untriaged reads as %+v; want open", log[len(log)-1])
	}
}

// A nightly run writes back only what it found of a change point (the
// pass its range, a bisection its outcome, a mail its time): a triage made
// since it read the change point stays.
func TestChangeWritesKeepTriage(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, location string) {
		db, seriesID, metric := triageFixture(t, location)
		read := ChangePoint{SeriesID: seriesID, Metric: metric, Line: LineKernel, Night: "2026-03-04", NightIndex: 3,
			BeforeNight: "2026-03-03", DeltaPct: -12, P: 1e-5, Provisional: true, Status: ChangeOpen}
		err := db.Write(ctx, func(tx *Tx) error {
			var err error
			read.ID, err = tx.PutChangePoint(ctx, read)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		// A person triages it after the nightly run read it.
		if _, _, err := db.Triage(ctx, read.ID, ActionAcknowledge, "seen", "alice"); err != nil {
			t.Fatal(err)
		}
		found := read
		found.Night, found.BeforeNight, found.DeltaPct, found.Provisional = "2026-03-05", "2026-03-04", -12.1, false
		mailed := time.Date(2026, 3, 6, 2, 0, 0, 0, time.UTC)
		err = db.Write(ctx, func(tx *Tx) error {
			if err := tx.UpdateChangeRange(ctx, found); err != nil {
				return err
			}
			if err := tx.SetChangeBisection(ctx, read.ID, Bisection{State: BisectSkipped, Reason: "below what this host resolves"}); err != nil {
				return err
			}
			return tx.SetChangeMailed(ctx, read.ID, mailed)
		})
		if err != nil {
			t.Fatal(err)
		}
		cp, err := db.ChangePoint(ctx, read.ID)
		if err != nil || cp.Status != ChangeAcknowledged || cp.Night != "2026-03-05" || cp.DeltaPct != -12.1 || cp.Provisional ||
			cp.Bisect.State != BisectSkipped || !cp.Mailed.Equal(mailed) {
			t.Errorf("after the run's writes: %+v, %v; want the triage kept and the run's findings stored", cp, err)
		}
		err = db.Write(ctx, func(tx *Tx) error { return tx.WithdrawChange(ctx, read.ID) })
		if cp, _ := db.ChangePoint(ctx, read.ID); err != nil || cp.Status != ChangeWithdrawn || cp.Bisect.State != BisectSkipped {
			t.Errorf("withdrawn: %+v, %v", cp, err)
		}
		err = db.Write(ctx, func(tx *Tx) error { return tx.SetChangeMailed(ctx, 999999, mailed) })
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("SetChangeMailed(unknown) = %v; want ErrNotFound", err)
		}
	})
}

// triageFixture opens a fresh database at location with a series and a
// night stored, and returns it, the series' ID and the night's metric.
func triageFixture(t *testing.T, location string) (*DB, int64, Metric) {
	t.Helper()
	db := openFresh(t, location)
	f := nightFixture("bpf-next", 0)
	seriesID, _, _, err := f.store(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return db, seriesID, f.rows[0].Metric
}

// Triages of one change point at the same instant are applied one after
// the other: each audit row's state before is the state the row before it
// left, and the change point ends in the last row's state (PostgreSQL's
// read committed would otherwise let two read the same state).
func TestConcurrentTriagesChain(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, location string) {
		db, seriesID, metric := triageFixture(t, location)
		cp := ChangePoint{SeriesID: seriesID, Metric: metric, Line: LineKernel, Night: "2026-03-04", NightIndex: 3,
			BeforeNight: "2026-03-03", DeltaPct: -12, P: 1e-5, Status: ChangeOpen}
		err := db.Write(ctx, func(tx *Tx) error {
			var err error
			cp.ID, err = tx.PutChangePoint(ctx, cp)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		actions := []TriageAction{ActionAcknowledge, ActionMute, ActionInvalid, ActionOpen}
		var wg sync.WaitGroup
		errs := make(chan error, 4*len(actions))
		for i := 0; i < 4*len(actions); i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, err := db.Triage(ctx, cp.ID, actions[i%len(actions)], fmt.Sprintf("triage %d", i), "alice")
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		log, err := db.TriageLog(ctx, seriesID)
		if err != nil || len(log) != 4*len(actions) {
			t.Fatalf("triage log: %d rows, %v; want %d", len(log), err, 4*len(actions))
		}
		state := ChangeOpen
		for _, row := range log {
			if row.StatusBefore != state {
				t.Errorf("row %d (%s) says the state before was %s; the row before it left %s", row.ID, row.Action, row.StatusBefore, state)
			}
			state = row.StatusAfter
		}
		if got, _ := db.ChangePoint(ctx, cp.ID); got.Status != state {
			t.Errorf("change point's state %s; the log's last row left %s", got.Status, state)
		}
	})
}

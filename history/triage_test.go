package history

import (
	"context"
	"errors"
	"testing"
)

// The triage rule, on both backends: every state can be set and set back,
// each decision lands in the audit log with who, when and why, bisect is
// asked once and only on the kernel line, and a withdrawn change point
// or a refused decision changes nothing.
func TestTriage(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, location string) {
		db := openFresh(t, location)
		f := nightFixture("bpf-next", 0)
		seriesID, _, _, err := f.store(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		var kernel, host, gone int64
		err = db.Write(ctx, func(tx *Tx) error {
			put := func(line Line, night string, status ChangeStatus) int64 {
				id, perr := tx.PutChangePoint(ctx, ChangePoint{SeriesID: seriesID, Metric: f.rows[0].Metric, Line: line,
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
			{kernel, ActionUntriage, ChangeOpen, BisectNone, nil},
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
			_, err := db.Triage(ctx, s.id, s.action, "looked at it <b>", "alice@example")
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
		if _, err := db.Triage(ctx, kernel, ActionAcknowledge, string(make([]byte, MaxTriageComment+1)), "bob"); !errors.Is(err, ErrBadTriage) {
			t.Errorf("Triage with a long comment = %v; want ErrBadTriage", err)
		}
		if _, err := db.Triage(ctx, kernel, ActionAcknowledge, "", " "); !errors.Is(err, ErrBadTriage) {
			t.Errorf("Triage by nobody = %v; want ErrBadTriage", err)
		}
		if n := count(t, db, "lpmbisect_triage"); n != logged {
			t.Errorf("%d triage rows after refused decisions; want %d", n, logged)
		}
	})
}

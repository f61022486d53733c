package history

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A night's insight block is stored with the night, replaced when the
// night is run again, bounded, and goes with its night; patch-series runs
// are listed newest first and read back whole.
func TestStoredDocuments(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, location string) {
		db := openFresh(t, location)
		_, nightID, _, err := nightFixture("net-next", 1).store(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.NightInsight(ctx, nightID); !errors.Is(err, ErrNotFound) {
			t.Errorf("NightInsight before any = %v; want ErrNotFound", err)
		}
		for _, doc := range []string{`{"a":{},"b":{}}`, `{"a":{"source":"vmlinux"},"b":{}}`} {
			err := db.Write(ctx, func(tx *Tx) error {
				return tx.PutNightInsight(ctx, NightInsight{NightID: nightID, Against: "the tip of 2026-01-01", Document: doc})
			})
			if err != nil {
				t.Fatal(err)
			}
			got, err := db.NightInsight(ctx, nightID)
			if err != nil || got.Document != doc || got.Against != "the tip of 2026-01-01" || got.Recorded.IsZero() {
				t.Errorf("NightInsight = %+v, %v; want %s", got, err, doc)
			}
		}
		for _, bad := range []string{"", strings.Repeat("x", MaxDocumentBytes+1), "a\x00b"} {
			err := db.Write(ctx, func(tx *Tx) error { return tx.PutNightInsight(ctx, NightInsight{NightID: nightID, Document: bad}) })
			if err == nil {
				t.Errorf("PutNightInsight(%d bytes of bad text) = nil; want refused", len(bad))
			}
		}
		if got, _ := db.NightInsight(ctx, nightID); !strings.Contains(got.Document, "vmlinux") {
			t.Errorf("a refused insight block changed the stored one: %q", got.Document)
		}

		var ids []int64
		for _, tip := range []string{"v1", "v2"} {
			err := db.Write(ctx, func(tx *Tx) error {
				id, err := tx.PutPatchSeriesRun(ctx, PatchSeriesRun{Repo: "linux", Base: "base", Tip: tip, Title: "bpf: " + tip, Patches: 3,
					Outcome: "quiet", Command: "lpmbisect series base.." + tip, Host: "h", Document: `{"tip":"` + tip + `"}`, Report: "report " + tip})
				ids = append(ids, id)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		runs, err := db.PatchSeriesRuns(ctx)
		if err != nil || len(runs) != 2 || runs[0].ID != ids[1] || runs[0].Document != "" || runs[1].Tip != "v1" || runs[1].Patches != 3 {
			t.Errorf("PatchSeriesRuns = %+v, %v; want v2 then v1, without documents", runs, err)
		}
		run, err := db.PatchSeriesRun(ctx, ids[0])
		if err != nil || run.Document != `{"tip":"v1"}` || run.Report != "report v1" || run.Title != "bpf: v1" || run.Recorded.IsZero() {
			t.Errorf("PatchSeriesRun(%d) = %+v, %v", ids[0], run, err)
		}
		if _, err := db.PatchSeriesRun(ctx, 999); !errors.Is(err, ErrNotFound) {
			t.Errorf("PatchSeriesRun(999) = %v; want ErrNotFound", err)
		}
		err = db.Write(ctx, func(tx *Tx) error {
			_, err := tx.PutPatchSeriesRun(ctx, PatchSeriesRun{Base: "base", Document: "{}"})
			return err
		})
		if err == nil {
			t.Error("PutPatchSeriesRun without a report = nil; want refused")
		}
	})
}

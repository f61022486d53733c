package history_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// One night of a nightly driver: take the lock, skip a tip measured before,
// and store the night, its boots and its rows in one transaction.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "history-example")
	defer os.RemoveAll(dir)
	db, err := history.Open(ctx, filepath.Join(dir, "history.db")) // a new SQLite file: created
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	lock, err := db.Lock(ctx, "nightly", time.Minute)
	if errors.Is(err, history.ErrLocked) {
		log.Fatal(err) // history lock "nightly" is held by pid 4242 on ci-1 since …
	}
	defer lock.Unlock()

	var s history.Series
	err = db.Write(ctx, func(tx *history.Tx) error {
		s, err = tx.PutSeries(ctx, history.Series{Name: "bpf-next", Kind: history.GitSeries,
			Source: "/src/bpf-next", Branch: "master", Reference: "/boot/vmlinuz-6.12", Accel: "icount"})
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	for i, center := range []float64{1065, 1066, 838} {
		date := fmt.Sprintf("2026-03-0%d", i+1)
		tip := history.Kernel{Commit: fmt.Sprintf("%07d", i), ImageSHA256: fmt.Sprintf("%064d", i), Release: "6.13.0"}
		if _, err := db.MeasuredTip(ctx, s.ID, tip.Commit, tip.ImageSHA256); err == nil {
			continue // measured already: a "no-change" night, no boot
		}
		// Everything the night found, in one transaction.
		err := db.Write(ctx, func(tx *history.Tx) error {
			night, err := tx.PutNight(ctx, history.Night{SeriesID: s.ID, Date: date,
				Status: history.StatusMeasured, Tip: tip, Accel: "tcg-icount", QEMUVersion: "7.2.19", CPUModel: "Haswell-v4"})
			if err != nil {
				return err
			}
			for boot := 0; boot < 2; boot++ {
				results := fmt.Sprintf("boot: %d\nBenchmarkLPMTrie/op=lookup 2000 %g insn/op\n", boot, center)
				if _, err := tx.PutBoot(ctx, history.Boot{NightID: night, Role: history.RoleTip, Index: boot,
					Outcome: "ok", Results: results}); err != nil {
					return err
				}
			}
			return tx.SetNightRows(ctx, night, []history.NightRow{{
				Metric: history.Metric{Benchmark: "LPMTrie/op=lookup", Unit: "insn/op"},
				Tip:    history.Estimate{Center: center, Lo: center, Hi: center, Boots: 2},
				Ratio:  center / 1000,
				VsReference: &history.Comparison{Verdict: compare.Different,
					DeltaPct: 100 * (center/1000 - 1), P: 0.002},
			}})
		})
		if err != nil {
			log.Fatal(err)
		}
	}

	trend, _ := db.Trend(ctx, s.ID, history.Metric{Benchmark: "LPMTrie/op=lookup", Unit: "insn/op"})
	for _, p := range trend {
		fmt.Printf("%s %s %g %s %+.1f%%\n", p.Night.Date, p.Night.Tip.Commit, p.Row.Tip.Center,
			p.Row.VsReference.Verdict, p.Row.VsReference.DeltaPct)
	}
	// Output:
	// 2026-03-01 0000000 1065 DIFFERENT +6.5%
	// 2026-03-02 0000001 1066 DIFFERENT +6.6%
	// 2026-03-03 0000002 838 DIFFERENT -16.2%
}

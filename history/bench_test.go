package history

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkTrend reads one metric's trend out of a history of 1000 nights
// × 100 metrics: what the change-point pass reads for each metric every
// night.
func BenchmarkTrend(b *testing.B) {
	const nights, metrics = 1000, 100
	ctx := context.Background()
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			location := be.location(b)
			if IsPostgres(location) {
				if _, _, err := Migrate(ctx, location); err != nil {
					b.Fatal(err)
				}
			}
			db, err := Open(ctx, location)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			start := time.Now()
			err = db.Write(ctx, func(tx *Tx) error {
				s, err := tx.PutSeries(ctx, Series{Name: "s", Kind: GitSeries})
				if err != nil {
					return err
				}
				rows := make([]NightRow, metrics)
				for i := 0; i < nights; i++ {
					date := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i).Format(time.DateOnly)
					id, err := tx.PutNight(ctx, Night{SeriesID: s.ID, Date: date, Status: StatusMeasured})
					if err != nil {
						return err
					}
					for m := range rows {
						rows[m] = NightRow{Metric: Metric{fmt.Sprintf("Bench%03d", m), "insn/op"},
							Tip: Estimate{Center: 1000 + float64(i%7), Boots: 5}, Reference: Estimate{Center: 1000, Boots: 5}, Ratio: 1}
					}
					if err := tx.SetNightRows(ctx, id, rows); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("%s: stored %d nights × %d metrics in %v", be.name, nights, metrics, time.Since(start).Round(time.Millisecond))
			s, _ := db.SeriesNamed(ctx, "s")
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				trend, err := db.Trend(ctx, s.ID, Metric{fmt.Sprintf("Bench%03d", i%metrics), "insn/op"})
				if err != nil || len(trend) != nights {
					b.Fatalf("Trend = %d points, %v; want %d", len(trend), err, nights)
				}
			}
		})
	}
}

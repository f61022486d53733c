package serve

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lpmbisect/lpmbisect/flow/nightly"
	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/internal/testbed/testseries"
	"github.com/lpmbisect/lpmbisect/present/report"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// TestLoad reads the series' page with LPMBISECT_SERVE_LOAD readers (200
// is the figure docs/serve.md gives) for LPMBISECT_SERVE_LOAD_FOR (30s) on
// loopback while a writer adds nights to the same SQLite history, one
// transaction a night, through nightly's import (the write path of history
// import; a night's write is one transaction, as a nightly run's is), at
// most one night every 100 ms. It fails on any error answer and on a lost
// night, and prints the page's latency percentiles. Off unless
// LPMBISECT_SERVE_LOAD is set: it keeps both cores busy for its duration.
//
//	LPMBISECT_SERVE_LOAD=200 go test -run TestLoad -v ./present/serve
func TestLoad(t *testing.T) {
	readers, _ := strconv.Atoi(os.Getenv("LPMBISECT_SERVE_LOAD"))
	if readers <= 0 {
		t.Skip("LPMBISECT_SERVE_LOAD=READERS runs the load test")
	}
	duration := 30 * time.Second
	if d, err := time.ParseDuration(os.Getenv("LPMBISECT_SERVE_LOAD_FOR")); err == nil {
		duration = d
	}
	const firstNights, maxNights = 60, 400
	ctx := context.Background()
	loc := filepath.Join(t.TempDir(), "history.db")
	importSeries(t, loc, "public", firstNights)
	db, base := serveLoopback(t, loc)
	page := base + report.SeriesPath("public")

	// The writer: its own connection to the history, as a nightly process
	// has.
	wdb, err := history.Open(ctx, db.Location())
	if err != nil {
		t.Fatal(err)
	}
	defer wdb.Close()
	deadline := time.Now().Add(duration)
	written := make(chan int)
	go func() {
		dir := t.TempDir()
		rng := rand.New(rand.NewPCG(37, 1))
		for i := range firstNights { // the same draws as the nights before
			testseries.BadNightValue(i, rng)
		}
		n := 0
		for i := firstNights; i < maxNights && time.Now().Before(deadline); i++ {
			f := testseries.WriteBadNight(t, dir, i, rng)
			if _, err := nightly.Import(ctx, wdb, history.Series{Name: "public", Kind: history.ImageSeries, Source: "imported"}, compare.Options{MinEffect: 0.05}, []string{f}); err != nil {
				t.Errorf("writer, night %d: %v", i, err)
				break
			}
			n++
			time.Sleep(100 * time.Millisecond)
		}
		written <- n
	}()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: readers}, Timeout: 30 * time.Second}
	var mu sync.Mutex
	var latencies []time.Duration
	errs := map[string]int{}
	var wg sync.WaitGroup
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				start := time.Now()
				resp, err := client.Get(page)
				what := ""
				if err != nil {
					what = err.Error()
				} else {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 || err != nil {
						what = fmt.Sprintf("status %d, %v", resp.StatusCode, err)
					}
				}
				took := time.Since(start)
				mu.Lock()
				if what != "" {
					errs[what]++
				} else {
					latencies = append(latencies, took)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	nights := <-written
	stored, err := db.Nights(ctx, mustSeries(t, db, "public"))
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != firstNights+nights {
		t.Errorf("the history holds %d nights; want %d + %d written: a night was lost", len(stored), firstNights, nights)
	}
	for what, n := range errs {
		t.Errorf("%d requests failed: %s", n, what)
	}
	slices.Sort(latencies)
	pct := func(p float64) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[min(len(latencies)-1, int(p*float64(len(latencies))))].Round(time.Millisecond)
	}
	t.Logf("%d readers, %v: %d pages (%.1f/s), %d errors; latency p50 %v, p90 %v, p99 %v, max %v; %d nights written beside them, %d in the history",
		readers, duration, len(latencies), float64(len(latencies))/duration.Seconds(), len(errs), pct(.5), pct(.9), pct(.99), pct(1), nights, len(stored))
}

func mustSeries(t *testing.T, db *history.DB, name string) int64 {
	t.Helper()
	all, err := db.AllSeries(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		if s.Name == name {
			return s.ID
		}
	}
	t.Fatalf("no series %s", name)
	return 0
}

package serve

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lpmbisect/lpmbisect/flow/nightly"
	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/present/report"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/testbed/testseries"
)

// TestLoad reads the served pages with LPMBISECT_SERVE_LOAD readers (200
// is the figure docs/serve.md gives) for LPMBISECT_SERVE_LOAD_FOR (30s) on
// loopback, each reader taking the pages in turn: the series' page (its
// newest nights), its second page of nights, the front page's JSON (a
// page of nights), a night's page (with its neighbours), the alerts. Beside
// them a writer adds nights to the same SQLite history, one transaction a
// night, through nightly's import (the write path of history import; a
// night's write is one transaction, as a nightly run's is), at most one
// night every 100 ms, and a script triages a change point over HTTP with
// the bearer token every 100 ms, back and forth. It fails on any error
// answer, a lost night or a lost triage, and prints each page's rate and
// latency percentiles. Off unless LPMBISECT_SERVE_LOAD is set: it keeps
// both cores busy for its duration.
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
	cps, err := db.ChangePoints(ctx, 0, history.ChangeOpen)
	if err != nil || len(cps) == 0 {
		t.Fatalf("change points %v, %v", cps, err)
	}
	pages := []struct{ name, path string }{
		{"series", report.SeriesPath("public")},
		{"series, page 2", report.SeriesPath("public") + "?page=2"},
		{"front page JSON", "/?format=json"},
		{"night", report.NightPath("public", cps[0].Night)},
		{"alerts", report.AlertsPath},
	}

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
	// The triage script: the bearer token, no session.
	triaged := make(chan int)
	go func() {
		n := 0
		for i := 0; time.Now().Before(deadline); i++ {
			action := []string{"acknowledged", "open"}[i%2]
			req, _ := http.NewRequest("POST", base+report.TriagePath, strings.NewReader(url.Values{"id": {fmt.Sprint(cps[0].ID)}, "action": {action}, "who": {"load"}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Authorization", "Bearer "+testToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil || resp.StatusCode != 200 {
				t.Errorf("triage %d: %v %v", i, resp, err)
				break
			}
			resp.Body.Close()
			n++
			time.Sleep(100 * time.Millisecond)
		}
		triaged <- n
	}()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: readers}, Timeout: 30 * time.Second}
	var mu sync.Mutex
	latencies := make([][]time.Duration, len(pages))
	bytes := make([]atomic.Int64, len(pages))
	errs := map[string]int{}
	var wg sync.WaitGroup
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := r; time.Now().Before(deadline); i++ {
				k := i % len(pages)
				start := time.Now()
				resp, err := client.Get(base + pages[k].path)
				what := ""
				if err != nil {
					what = err.Error()
				} else {
					n, err := io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					bytes[k].Add(n)
					if resp.StatusCode != 200 || err != nil {
						what = fmt.Sprintf("%s: status %d, %v", pages[k].name, resp.StatusCode, err)
					}
				}
				took := time.Since(start)
				mu.Lock()
				if what != "" {
					errs[what]++
				} else {
					latencies[k] = append(latencies[k], took)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	nights, triages := <-written, <-triaged
	stored, err := db.Nights(ctx, mustSeries(t, db, "public"))
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != firstNights+nights {
		t.Errorf("the history holds %d nights; want %d + %d written: a night was lost", len(stored), firstNights, nights)
	}
	if log, err := db.TriageLog(ctx, 0); err != nil || len(log) != triages {
		t.Errorf("the triage log holds %d rows, %v; want the %d triages made", len(log), err, triages)
	}
	for what, n := range errs {
		t.Errorf("%d requests failed: %s", n, what)
	}
	total := 0
	for k, p := range pages {
		l := latencies[k]
		slices.Sort(l)
		pct := func(p float64) time.Duration {
			if len(l) == 0 {
				return 0
			}
			return l[min(len(l)-1, int(p*float64(len(l))))].Round(time.Millisecond)
		}
		total += len(l)
		size := int64(0)
		if len(l) > 0 {
			size = bytes[k].Load() / int64(len(l))
		}
		t.Logf("%-16s %6d pages (%6.1f/s), %7d bytes each; latency p50 %v, p90 %v, p99 %v, max %v", p.name, len(l), float64(len(l))/duration.Seconds(), size, pct(.5), pct(.9), pct(.99), pct(1))
	}
	t.Logf("%d readers, %v: %d pages (%.1f/s), %d errors; %d nights written beside them, %d in the history; %d triages over HTTP",
		readers, duration, total, float64(total)/duration.Seconds(), len(errs), nights, len(stored), triages)
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

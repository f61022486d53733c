package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/present/report"
	"github.com/lpmbisect/lpmbisect/testbed/testseries"
)

// lpmbisect history import of a public series shaped like the one a single
// bad night blinded (issue 26): one value a night with a 5 % minimum
// effect, 15 nights near 26.7k, then a −12 % step, each night within about
// ±1 %, one −41 % night five nights before the step and a +19 % step 30
// nights after it. Both steps are change points, at their nights; the bad
// night is an excursion and no change point.
func TestHistoryImportOneBadNight(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "history.db")
	cfg := filepath.Join(dir, "kernels.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[nightly]\ndb = %q\n[[series]]\nname = \"public\"\nimages = \"/k\"\nreference = \"/r\"\nmin_effect = 5.0\n", db)), 0o644)
	rng := rand.New(rand.NewPCG(26, 2))
	args := []string{"history", "import", "--config", cfg, "--series", "public"}
	for i := range 60 {
		args = append(args, testseries.WriteBadNight(t, dir, i, rng))
	}
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 || !strings.Contains(stdout, "imported 60 nights") || !strings.Contains(stdout, "1 new excursions") {
		t.Fatalf("history import = exit %d, %q, %q; want 60 nights and 1 new excursion", code, stdout, stderr)
	}
	h, err := history.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	cps, err := h.ChangePoints(context.Background(), 0, history.ChangeOpen)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, cp := range cps {
		got = append(got, fmt.Sprintf("%s after %s %s %+.0f%%", cp.Night, cp.BeforeNight, cp.Line, cp.DeltaPct))
	}
	if want := "2026-01-16 after 2026-01-15 kernel -12%, 2026-02-15 after 2026-02-14 kernel +19%"; strings.Join(got, ", ") != want {
		t.Errorf("change points: %s; want %s", strings.Join(got, ", "), want)
	}
	all, err := h.AllSeries(context.Background())
	if err != nil || len(all) != 1 {
		t.Fatalf("series %+v, %v; want public alone", all, err)
	}
	exc, err := h.Excursions(context.Background(), all[0].ID)
	if err != nil || len(exc) != 1 || exc[0].Night != "2026-01-11" {
		t.Errorf("excursions %+v, %v; want the bad night, 2026-01-11", exc, err)
	}

	// lpmbisect history shows the bad night as an excursion, apart from
	// the change points: in text, in JSON, and ringed on the HTML page's
	// trend plot.
	page := filepath.Join(dir, "history.html")
	code, stdout, stderr = runCLI(t, "history", "--config", cfg, "--html", page)
	if code != 0 {
		t.Fatalf("history = exit %d, %s", code, stderr)
	}
	for _, want := range []string{"2 change points: 2 open; 1 excursion", "excursions of public (", "  2026-01-11  Public/lookup ns/op  kernel line  -40.7%",
		"a bad night, left out of the change-point statistics"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("history lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, stderr = runCLI(t, "history", "--config", cfg, "--format", "json")
	var doc report.HistoryDocument
	if err := json.Unmarshal([]byte(stdout), &doc); code != 0 || err != nil {
		t.Fatalf("history --format json = exit %d, %v, %s", code, err, stderr)
	}
	if s := doc.Series[0]; len(s.Excursions) != 1 || s.Excursions[0].Night != "2026-01-11" || s.Excursions[0].Line != "kernel" ||
		len(s.ChangePoints) != 2 || s.ChangePoints[0].Night != "2026-01-16" {
		t.Errorf("history JSON: excursions %+v, change points %+v; want the bad night and the two steps", s.Excursions, s.ChangePoints)
	}
	html, err := os.ReadFile(page)
	if err != nil || !strings.Contains(string(html), "<h3>Excursions</h3>") ||
		!strings.Contains(string(html), "excursion: left out of the change points") {
		t.Errorf("the HTML history lists no excursion or its plot rings none (err %v)", err)
	}
}

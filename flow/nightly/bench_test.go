package nightly

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lpmbisect/lpmbisect/config"
	"github.com/lpmbisect/lpmbisect/flow/bisect"
	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// countingMeasurer counts the boots a night asks for and boots nothing.
type countingMeasurer struct{ boots *int }

func (m countingMeasurer) Measure(_ context.Context, kernels []campaign.Candidate, boots int) ([][]campaign.BootResults, error) {
	*m.boots += boots * len(kernels)
	return nil, fmt.Errorf("the benchmark's night asked for %d boots", boots*len(kernels))
}

// BenchmarkNightNoChange runs nights whose git tip was measured before:
// each must record "no change" and boot nothing, not even the reference
// (boots/night, which must be 0), and costs the fetch of the tip and a few
// history queries.
func BenchmarkNightNoChange(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("no git")
	}
	ctx := context.Background()
	dir := b.TempDir()
	repo := filepath.Join(dir, "repo")
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@example.invalid", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@example.invalid")
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	os.MkdirAll(repo, 0o755)
	git("init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(repo, "kernel.conf"), []byte("tip\n"), 0o644)
	git("add", "-A")
	git("commit", "-q", "-m", "tip")
	tip := git("rev-parse", "HEAD")

	cfg := config.Defaults()
	cfg.Nightly.DB, cfg.Nightly.State = filepath.Join(dir, "history.db"), filepath.Join(dir, "state")
	cfg.Series = []config.Series{{Name: "bench", Repo: repo, Branch: "main", Reference: filepath.Join(dir, "reference.deb"), Bench: "lookup"}}
	results := filepath.Join(dir, "night.txt")
	var text strings.Builder
	fmt.Fprintf(&text, "accel: icount\ndate: 2026-01-01\ncommit: %s\n", tip)
	for _, side := range []string{"A", "B"} {
		for boot := 1; boot <= 2; boot++ {
			fmt.Fprintf(&text, "side: %s\nboot: %d\nBenchmarkLPMTrie/op=lookup/keys=random/entries=10000 1 650.5 insn/op\n", side, boot)
		}
	}
	os.WriteFile(results, []byte(text.String()), 0o644)
	db, err := OpenHistory(ctx, &cfg)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := Import(ctx, db, seriesFor(&cfg, "bench"), compare.Options{MinEffect: 0.01}, []string{results}); err != nil {
		b.Fatal(err)
	}
	db.Close()

	boots := 0
	o := Options{Config: &cfg, SetupFor: func(*config.File, string, string) (*bisect.Bisector, error) {
		return &bisect.Bisector{Setup: &campaign.Setup{Bench: &campaign.Bench{Measurer: countingMeasurer{&boots}}}}, nil
	}}
	start := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	night := 0
	for b.Loop() {
		o.Date = start.AddDate(0, 0, night).Format(time.DateOnly)
		night++
		nights, err := Run(ctx, o)
		if err != nil {
			b.Fatal(err)
		}
		if len(nights) != 1 || nights[0].Night.Status != history.StatusNoChange {
			b.Fatalf("night %s: %+v; want one night of no change", o.Date, nights)
		}
	}
	b.ReportMetric(float64(boots)/float64(night), "boots/night")
	if boots != 0 {
		b.Errorf("nights with nothing new booted %d kernels; want none", boots)
	}
}

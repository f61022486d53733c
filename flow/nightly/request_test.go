package nightly

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/config"
	"github.com/lpmbisect/lpmbisect/flow/bisect"
	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/testbed/testseries"
)

// A bisection asked for by triage (history.ActionBisect) is taken up by the
// next night's run of its series, even with [nightly] bisect off and a night
// that measures nothing, and its outcome is recorded where the pages and
// history show it: here a failure, because the images series' kernels are
// gone, with the reason.
func TestBisectRequested(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := config.Defaults()
	cfg.Nightly.DB, cfg.Nightly.State, cfg.Nightly.Bisect = filepath.Join(dir, "history.db"), filepath.Join(dir, "state"), false
	cfg.Series = []config.Series{{Name: "public", Images: filepath.Join(dir, "gone"), Reference: filepath.Join(dir, "reference.deb"), MinEffect: 5}}
	rng := rand.New(rand.NewPCG(26, 2))
	var files []string
	for i := range 30 {
		files = append(files, testseries.WriteBadNight(t, dir, i, rng))
	}
	db, err := OpenHistory(ctx, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := ImportSeries(ctx, db, &cfg, "public", files); err != nil {
		t.Fatal(err)
	}
	cps, err := db.ChangePoints(ctx, 0, history.ChangeOpen)
	if err != nil || len(cps) != 1 {
		t.Fatalf("change points %+v, %v; want the step", cps, err)
	}
	if _, _, err := db.Triage(ctx, cps[0].ID, history.ActionBisect, "find it", "alice"); err != nil {
		t.Fatal(err)
	}
	nights, err := Run(ctx, Options{Config: &cfg, Date: "2026-02-01", SetupFor: func(*config.File, string, string) (*bisect.Bisector, error) {
		return &bisect.Bisector{Setup: &campaign.Setup{Bench: &campaign.Bench{}}}, nil
	}})
	if err != nil || len(nights) != 1 {
		t.Fatalf("Run = %+v, %v", nights, err)
	}
	cp, err := db.ChangePoint(ctx, cps[0].ID)
	if err != nil || cp.Bisect.State != history.BisectFailed || !strings.Contains(cp.Bisect.Reason, "gone") {
		t.Errorf("after the night: bisection %+v, %v; want failed, saying the images are gone", cp.Bisect, err)
	}
	alerted := false
	for _, a := range nights[0].Alerts {
		alerted = alerted || strings.Contains(a, "bisected on request")
	}
	if !alerted {
		t.Errorf("the night's alerts %q do not tell the bisection on request", nights[0].Alerts)
	}
	// Asked again after a failure, it is taken up again, by nightly run
	// again on the night already recorded: a request waits for no new
	// night.
	if _, _, err := db.Triage(ctx, cps[0].ID, history.ActionBisect, "", "alice"); err != nil {
		t.Fatalf("bisect again after a failure: %v", err)
	}
	setups := 0
	again, err := Run(ctx, Options{Config: &cfg, Date: "2026-02-01", SetupFor: func(_ *config.File, _, reference string) (*bisect.Bisector, error) {
		setups++
		// The series' reference kernel probes KVM when its accelerator
		// is auto: the setup is given it.
		if reference != cfg.Series[0].Reference || reference == "" {
			t.Errorf("SetupFor got reference %q; want the series' %q", reference, cfg.Series[0].Reference)
		}
		return &bisect.Bisector{Setup: &campaign.Setup{Bench: &campaign.Bench{}}}, nil
	}})
	if err != nil || len(again) != 1 {
		t.Fatalf("Run again on the recorded night = %+v, %v", again, err)
	}
	if cp, err := db.ChangePoint(ctx, cps[0].ID); err != nil || cp.Bisect.State != history.BisectFailed {
		t.Errorf("after the night run again: bisection %+v, %v; want it taken up (failed again)", cp.Bisect, err)
	}
	if a := strings.Join(again[0].Alerts, "\n"); !strings.Contains(a, "recorded before") || !strings.Contains(a, "bisected on request") {
		t.Errorf("the recorded night's alerts %q; want it recorded before and the bisection on request", a)
	}
	// Run once more with nothing asked for: no setup is made.
	if _, err := Run(ctx, Options{Config: &cfg, Date: "2026-02-01", SetupFor: func(*config.File, string, string) (*bisect.Bisector, error) {
		setups++
		return nil, nil
	}}); err != nil || setups != 1 {
		t.Errorf("a recorded night with no request made %d boot setups, %v; want none", setups-1, err)
	}
}

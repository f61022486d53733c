package main

// A kernel that was different for one night, under icount: an images
// series of real Debian kernels, 6.1 builds every night but one, when CI
// dropped a 6.12 build (its LPM lookups take 17 % fewer instructions).
// nightly reports that night as a provisional change point while it is
// the newest, then as an excursion of the kernel line when the next 6.1
// build is back at the level: never a confirmed change point.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/internal/testguest"
	"github.com/lpmbisect/lpmbisect/internal/testkernels"
)

func TestNightlyKernelExcursion(t *testing.T) {
	bootsInParallel(t)
	vmArgs(t)
	// The 6.1 builds differ by up to about 1.6 % (fortnightMinEffect).
	nights := []string{testkernels.Fortnight[0], testkernels.Fortnight[1], testkernels.Fortnight[2],
		testkernels.Fortnight[7], testkernels.Fortnight[3], testkernels.Fortnight[4]}
	const odd = 3 // the 6.12 night
	var debs []string
	for _, pkg := range nights {
		debs = append(debs, testkernels.Deb(t, pkg))
	}
	dir := t.TempDir()
	list := filepath.Join(dir, "images.list")
	db := filepath.Join(dir, "history.db")
	cfg := filepath.Join(dir, "kernels.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`[measure]
cache_dir = %q
guest = %q
boot_timeout = "120s"
[bench]
entries = 1000
[nightly]
db = %q
state = %q
boots = 2
[[series]]
name = "ci"
images = %q
reference = %q
bench = "lookup"
min_effect = %d.0
`, sharedCache(t), testguest.Path(t), db, filepath.Join(dir, "state"), list, testkernels.Deb(t, testkernels.Debian61), fortnightMinEffect)), 0o644)

	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	date := func(night int) string { return start.AddDate(0, 0, night).Format(time.DateOnly) }
	for night := range debs {
		// CI's list: every kernel so far, the newest last.
		os.WriteFile(list, []byte(strings.Join(debs[:night+1], "\n")+"\n"), 0o644)
		code, stdout, stderr := runCLI(t, "nightly", "--config", cfg, "--date", date(night), "--no-insight") // the mail's insight: TestNightlyFortnight
		t.Logf("night %d (%s): exit %d\n%s", night, date(night), code, stdout)
		want := exitOK
		if night == odd+1 {
			want = exitRegression // back at 6.1: 20 % more instructions than last night's tip
		}
		if code != want {
			t.Fatalf("night %d: exit %d; want %d\n%s", night, code, want, stderr)
		}
		if night == odd && !strings.Contains(stdout, "provisional") {
			t.Errorf("night %d, the 6.12 build: no provisional change point that night", night)
		}
		if night == odd+1 && (!strings.Contains(stdout, "excursion on "+date(odd)) || !strings.Contains(stdout, "a kernel that was different that night")) {
			t.Errorf("night %d: no alert of the excursion on %s, a kernel that was different that night", night, date(odd))
		}
	}

	h, err := history.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	series, err := h.AllSeries(context.Background())
	if err != nil || len(series) != 1 {
		t.Fatalf("series %+v, %v; want ci alone", series, err)
	}
	cps, err := h.ChangePoints(context.Background(), series[0].ID, history.ChangeOpen)
	if err != nil {
		t.Fatal(err)
	}
	for _, cp := range cps {
		if strings.Contains(cp.Benchmark, "op=lookup") {
			t.Errorf("a live change point of %s on the %s line at %s; want none: the 6.12 night is an excursion", cp.Benchmark, cp.Line, cp.Night)
		}
	}
	exc, err := h.Excursions(context.Background(), series[0].ID)
	if err != nil || len(exc) == 0 {
		t.Fatalf("excursions %+v, %v; want the 6.12 night's", exc, err)
	}
	lookups := 0
	for _, e := range exc {
		t.Logf("excursion: %s %s %s line %+.2f%% from %.4g", e.Night, e.Metric, e.Line, e.DeltaPct, e.Level)
		if e.Night != date(odd) {
			t.Errorf("an excursion on %s (%s); want only the 6.12 night, %s", e.Night, e.Metric, date(odd))
		}
		if strings.Contains(e.Benchmark, "op=lookup") && e.Line == history.LineKernel && e.DeltaPct < -10 {
			lookups++
		}
	}
	if lookups == 0 {
		t.Errorf("no kernel-line excursion of the lookups on %s, about −17 %%", date(odd))
	}
	if boots, err := h.Boots(context.Background(), exc[0].NightID); err != nil || len(boots) == 0 {
		t.Errorf("the excursion's night has boots %d, %v; want its boots kept", len(boots), err)
	}
	assertNoQEMULeft(t)
}

package main

// The simulated fortnight of nightly tracking on real kernels: a throwaway
// git repository gets one commit per night whose build command yields a
// different real Debian image each night, and lpmbisect nightly runs once
// per night under icount beside a fixed reference kernel. The nights build
// Debian 6.1's LPM trie code, but for one night when a 6.12 build slipped
// in (its lookups take 17 % fewer instructions), until 6.12 comes for good.
// nightly reports the odd night as a provisional change point while it is
// the newest, then as an excursion of the kernel line when the next 6.1
// build is back at the level: never a confirmed change point. The step to
// 6.12 for good is confirmed, bisected and mailed.

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lpmbisect/lpmbisect/config"
	"github.com/lpmbisect/lpmbisect/flow/nightly"
	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/present/report"
	"github.com/lpmbisect/lpmbisect/present/serve"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/testbed/testguest"
	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
)

// fortnightMinEffect is the series' minimum effect. The seven 6.1 builds
// do not count their LPM lookups alike: Debian's 6.1 stable updates moved
// the path by about 1.3–1.6 % (6.1.0-50 → -53: 778.5 → 788.4 insn/op with
// 1000 entries), a real change that nightly reports as a regression at the
// default 1 %. The test asks for steps beyond 3 %, which only the 6.1 →
// 6.12 step (−17 %) is.
const fortnightMinEffect = 3

// fortnightRepo makes the repository: night i's commit names the .deb its
// build command prints (a .deb is a kernel lpmbisect boots).
func fortnightRepo(t *testing.T, debs []string) (dir string, commits []string) {
	t.Helper()
	dir = t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE=2026-11-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-11-01T00:00:00Z")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "master")
	git("config", "user.email", "nightly@example.org")
	git("config", "user.name", "nightly")
	os.WriteFile(filepath.Join(dir, "build.sh"), []byte("#!/bin/sh\ncat KERNEL\n"), 0o755)
	for i, deb := range debs {
		os.WriteFile(filepath.Join(dir, "KERNEL"), []byte(deb+"\n"), 0o644)
		git("add", "-A")
		git("commit", "-q", "-m", fmt.Sprintf("night %d: %s", i+1, strings.SplitN(filepath.Base(deb), "_", 2)[0]))
		commits = append(commits, git("rev-parse", "HEAD"))
	}
	return dir, commits
}

// The fortnight's nights: indexes into testkernels.Fortnight, the 6.1
// builds in order with the first 6.12 build as night 4, the odd night, and
// the other 6.12 builds from night 9, the step.
// nightlyConfig writes dir/kernels.toml for a nightly test and returns its
// path: the shared cache, the test guest, 1000 entries, two boots a night,
// the history and state in dir, then more: keys of [nightly], then the
// sections.
func nightlyConfig(t *testing.T, dir, more string) string {
	t.Helper()
	cfg := filepath.Join(dir, "kernels.toml")
	text := fmt.Sprintf(`[measure]
cache_dir = %q
guest = %q
boot_timeout = "120s"
[bench]
entries = 1000
[nightly]
db = %q
state = %q
boots = 2
`, sharedCache(t), testguest.Path(t), filepath.Join(dir, "history.db"), filepath.Join(dir, "state")) + more
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

var fortnightNights = []int{0, 1, 2, 7, 3, 4, 5, 6, 8, 9, 10, 11}

const (
	fortnightOdd  = 4 // the 6.12 build of one night
	fortnightStep = 9 // the first of the 6.12 builds for good
)

func TestNightlyFortnight(t *testing.T) {
	bootsInParallel(t)
	vmArgs(t)
	var debs []string
	for _, i := range fortnightNights {
		debs = append(debs, testkernels.Deb(t, testkernels.Fortnight[i]))
	}
	repo, commits := fortnightRepo(t, debs)
	dir := t.TempDir()
	cfg := nightlyConfig(t, dir, fmt.Sprintf(`notify = "cat >> %s/mails.txt"
keep_runs = 4
[bisect]
recheck_boots = 2
[[series]]
name = "fortnight"
repo = %q
branch = "master"
build_command = "./build.sh"
reference = %q
bench = "lookup"
min_effect = %d.0
`, dir, repo, debs[len(debs)-1], fortnightMinEffect))

	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	date := func(night int) string { return start.AddDate(0, 0, night-1).Format(time.DateOnly) }
	for night := 1; night <= len(debs); night++ {
		if out, err := exec.Command("git", "-C", repo, "reset", "-q", "--hard", commits[night-1]).CombinedOutput(); err != nil {
			t.Fatalf("git reset: %v %s", err, out)
		}
		began := time.Now()
		nightArgs := []string{"nightly", "--config", cfg, "--date", date(night)}
		if night != fortnightStep-1 && night != fortnightStep {
			// The mail of the step's change point explains the tips of
			// the nights before and of the step: only their first boots
			// need the guest's pass.
			nightArgs = append(nightArgs, "--no-insight")
		}
		code, stdout, stderr := runCLI(t, nightArgs...)
		t.Logf("night %d (%s): exit %d in %s\n%s", night, date(night), code, time.Since(began).Round(time.Second), stdout)
		switch {
		case night == fortnightOdd+1:
			// Back at 6.1: 20 % more instructions than last night's tip.
			if code != exitRegression {
				t.Fatalf("night %d, back at 6.1 after the odd night: exit %d; want %d\n%s", night, code, exitRegression, stderr)
			}
			if !strings.Contains(stdout, "excursion on "+date(fortnightOdd)) || !strings.Contains(stdout, "a kernel that was different that night") {
				t.Errorf("night %d: no alert of the excursion on %s, a kernel that was different that night", night, date(fortnightOdd))
			}
		case code != 0:
			t.Fatalf("night %d: exit %d; want 0 (nothing new, or an improvement)\n%s", night, code, stderr)
		case night == fortnightOdd && !strings.Contains(stdout, "provisional"):
			t.Errorf("night %d, the odd 6.12 build: no provisional change point that night", night)
		case night < fortnightStep && night != fortnightOdd && strings.Contains(stdout, "change point"):
			t.Errorf("night %d: a change point among the 6.1 builds (a false alarm)", night)
		case night == fortnightStep && !strings.Contains(stdout, "improvement against the last tip"):
			t.Errorf("night %d, the first 6.12 build for good: no alert that night", night)
		case night == 1 && !strings.Contains(stdout, " 4 boots in "):
			t.Errorf("night 1: want 4 boots, two of the tip and two of the reference")
		case night > 1 && (!strings.Contains(stdout, " 2 boots in ") || !strings.Contains(stdout, "unchanged under icount") ||
			strings.Contains(stdout, "toolchain changed") && !strings.Contains(stdout, "its stored boots stand")):
			// Under icount the unchanged reference's stored boots stand
			// (nightly's standingReference). When a 6.12 package's config
			// differs from the last one's, the toolchain check rebuilds the
			// previous tip, which the build command turns into the image
			// measured last night: its stored boots stand too.
			t.Errorf("night %d: want 2 boots, the tip's alone: the reference's stored boots and those of the previous tip, rebuilt to the image measured last night, stand", night)
		}
	}

	code, stdout, stderr := runCLI(t, "history", "--config", cfg, "--format", "json")
	if code != 0 {
		t.Fatalf("lpmbisect history: exit %d\n%s", code, stderr)
	}
	var doc struct {
		Series []struct {
			ChangePoints []struct {
				ID        int64  `json:"id"`
				Benchmark string `json:"benchmark"`
				Line      string `json:"line"`
				Night     string `json:"night"`
				Status    string `json:"status"`
				Bisect    struct {
					State   string `json:"state"`
					Culprit string `json:"culprit"`
				} `json:"bisect"`
			} `json:"change_points"`
		} `json:"series"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || len(doc.Series) != 1 {
		t.Fatalf("history JSON: %v\n%s", err, stdout)
	}
	step := date(fortnightStep)
	perBench := map[string]int{}
	for _, cp := range doc.Series[0].ChangePoints {
		if cp.Status == "withdrawn" {
			continue
		}
		t.Logf("change point %d: %s %s line, night %s, bisect %s %s", cp.ID, cp.Benchmark, cp.Line, cp.Night, cp.Bisect.State, cp.Bisect.Culprit)
		if cp.Line != "kernel" || cp.Night != step {
			t.Errorf("change point %d of %s on the %s line at %s; want only kernel-line change points, at night %d (%s): the odd night is an excursion", cp.ID, cp.Benchmark, cp.Line, cp.Night, fortnightStep, step)
		}
		perBench[cp.Benchmark]++
		if culprit := commits[fortnightStep-1]; strings.Contains(cp.Benchmark, "op=lookup") && (cp.Bisect.State != "found" || cp.Bisect.Culprit != culprit) {
			t.Errorf("change point %d (%s): bisection %s %s; want night %d's commit %s", cp.ID, cp.Benchmark, cp.Bisect.State, cp.Bisect.Culprit, fortnightStep, culprit)
		}
	}
	for _, b := range []string{"LPMTrie/op=lookup/keys=random/entries=1000", "LPMTrie/op=lookup/keys=sequential/entries=1000", "LPMTrie/op=noop"} {
		if perBench[b] != 1 {
			t.Errorf("%s has %d live change points; want exactly 1 (night %d, on the kernel line: the controls' own step is the kernel's)", b, perBench[b], fortnightStep)
		}
	}
	checkOddNight(t, filepath.Join(dir, "history.db"), date(fortnightOdd))
	if data, err := os.ReadFile(filepath.Join(dir, "mails.txt")); err != nil || !strings.Contains(string(data), "lpmbisect compare") {
		t.Errorf("the notify command got no mail with a reproduction command: %v", err)
	} else if lpm := profileRow(string(data), "longest_prefix_match.isra.0"); len(lpm) < 2 || lpm[0] < 30 || lpm[1] != 0 {
		// The first boots of the tips around the step ran the guest's
		// pass: the mail profiles the 6.1 tip before the step against
		// the 6.12 one.
		t.Errorf("the mail's profile row of longest_prefix_match.isra.0: %v; want a large share before the change (≥ 30%%), none after", lpm)
	}
	if code, _, stderr := runCLI(t, "history", "--config", cfg, "--html", filepath.Join(dir, "history.html")); code != 0 {
		t.Errorf("lpmbisect history --html: exit %d\n%s", code, stderr)
	}
	assertNoQEMULeft(t)
}

// checkOddNight checks that the odd night was kept as an excursion of the
// kernel line, with its boots, in the history database db.
func checkOddNight(t *testing.T, db, odd string) {
	t.Helper()
	h, err := history.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	series, err := h.AllSeries(context.Background())
	if err != nil || len(series) != 1 {
		t.Fatalf("series %+v, %v; want the fortnight alone", series, err)
	}
	exc, err := h.Excursions(context.Background(), series[0].ID)
	if err != nil || len(exc) == 0 {
		t.Fatalf("excursions %+v, %v; want the odd night's", exc, err)
	}
	lookups := 0
	for _, e := range exc {
		t.Logf("excursion: %s %s %s line %+.2f%% from %.4g", e.Night, e.Metric, e.Line, e.DeltaPct, e.Level)
		if e.Night != odd {
			t.Errorf("an excursion on %s (%s); want only the odd night's, %s", e.Night, e.Metric, odd)
		}
		if strings.Contains(e.Benchmark, "op=lookup") && e.Line == history.LineKernel && e.DeltaPct < -10 {
			lookups++
		}
	}
	if lookups == 0 {
		t.Errorf("no kernel-line excursion of the lookups on %s, about −17 %%", odd)
	}
	if boots, err := h.Boots(context.Background(), exc[0].NightID); err != nil || len(boots) == 0 {
		t.Errorf("the excursion's night has boots %d, %v; want its boots kept", len(boots), err)
	}
}

// TestNightlyImagesSeries follows a directory that CI drops prebuilt
// kernels into, on real Debian kernels: each night measures the newest
// (imageTip, Candidates), the reference's stored boots stand, and a night
// with no new kernel records "no change" without booting. Three nights of
// 6.1 builds, then CI drops two 6.12 builds at once: the night measures
// the newer and stores its insight block against the last tip (the
// guests' profiles), which the night's served page shows. The step is a
// provisional change point, which nightly does not bisect by itself; a
// sheriff asks for it on the page ("bisect this"), and nightly run again
// on the night already recorded bisects it over the kernels CI dropped
// between the nights around it, and names the 6.12 build that no night
// measured, where the served pages show it.
func TestNightlyImagesSeries(t *testing.T) {
	bootsInParallel(t)
	vmArgs(t)
	reference := testkernels.Deb(t, testkernels.Debian61)
	// CI's drops, night by night: 6.1.0-54, -55, -56, then 6.12.107 and
	// 6.12.111 together, then nothing.
	drops := [][]string{{testkernels.Fortnight[3]}, {testkernels.Fortnight[4]}, {testkernels.Fortnight[5]}, {testkernels.Fortnight[7], testkernels.Fortnight[8]}, nil}
	dir := t.TempDir()
	images := filepath.Join(dir, "images")
	os.Mkdir(images, 0o755)
	cfg := nightlyConfig(t, dir, fmt.Sprintf(`[bisect]
recheck_boots = 2
[[series]]
name = "ci-images"
images = %q
reference = %q
bench = "lookup"
min_effect = %d.0
`, images, reference, fortnightMinEffect))

	dates := []string{"2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04", "2026-11-05"}
	const step = 3 // the night of the 6.12 build
	for night, date := range dates {
		for _, pkg := range drops[night] {
			deb := testkernels.Deb(t, pkg)
			if err := os.Symlink(deb, filepath.Join(images, filepath.Base(deb))); err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond) // CI's order, by modification time
		}
		args := []string{"nightly", "--config", cfg, "--date", date}
		if night != step-1 && night != step {
			// The step's insight block compares the tips of the night
			// before and of the step: only their first boots need the
			// guest's pass.
			args = append(args, "--no-insight")
		}
		code, stdout, stderr := runCLI(t, args...)
		t.Logf("night %d (%s): exit %d\n%s", night+1, date, code, stdout)
		if code != 0 {
			t.Fatalf("night %d: exit %d; want 0 (nothing new, or an improvement)\n%s", night+1, code, stderr)
		}
		want := map[int]string{0: " 4 boots in ", 1: " 2 boots in ", 2: " 2 boots in ", 3: " 2 boots in ", 4: "the tip was measured on " + dates[step]}[night]
		if !strings.Contains(stdout, want) {
			t.Errorf("night %d: the report does not say %q (two boots of the tip and two of the reference, then the tip's alone, then none)", night+1, want)
		}
		if night == step && !strings.Contains(stdout, "provisional") {
			t.Errorf("night %d, the 6.12 build: no provisional change point", night+1)
		}
	}

	code, stdout, stderr := runCLI(t, "history", "--config", cfg, "--format", "json")
	if code != 0 {
		t.Fatalf("lpmbisect history: exit %d\n%s", code, stderr)
	}
	var doc report.HistoryDocument
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || len(doc.Series) != 1 || len(doc.Series[0].Nights) != len(dates) {
		t.Fatalf("history JSON: %v; want one series of %d nights\n%s", err, len(dates), stdout)
	}
	for i, want := range []struct{ status, release string }{
		{"measured", "6.1.0-54-cloud-amd64"}, {"measured", "6.1.0-55-cloud-amd64"}, {"measured", "6.1.0-56-cloud-amd64"},
		{"measured", "6.12.111+deb12-cloud-amd64"}, {"no-change", "6.12.111+deb12-cloud-amd64"},
	} {
		n := doc.Series[0].Nights[i]
		if n.Status != want.status || n.Tip.Release != want.release || n.Tip.Commit != "" {
			t.Errorf("night %s: %s, tip %q (commit %q); want %s, tip %s, no commit", n.Date, n.Status, n.Tip.Release, n.Tip.Commit, want.status, want.release)
		}
	}
	for _, row := range doc.Series[0].Nights[step].Rows {
		if strings.Contains(row.Benchmark, "op=lookup") && (row.VsReference == nil || row.VsReference.Verdict != compare.Different || row.VsReference.Direction != "better") {
			t.Errorf("night %d, %s against the 6.1 reference: %+v; want DIFFERENT, better", step+1, row.Benchmark, row.VsReference)
		}
	}
	servedNight(t, cfg, "ci-images", dates[step], "6.12.111+deb12-cloud-amd64")
	servedInsight(t, cfg, "ci-images", dates[step])

	// "Bisect this" on the step's change point, by the page's own
	// request (the bearer token instead of the form's session), then
	// nightly run again on the night already recorded.
	id := bisectThis(t, cfg, "ci-images", dates[step])
	code, stdout, stderr = runCLI(t, "nightly", "--config", cfg, "--date", dates[len(dates)-1], "--no-insight")
	t.Logf("night %s again: exit %d\n%s", dates[len(dates)-1], code, stdout)
	if code != 0 || !strings.Contains(stdout, fmt.Sprintf("change point %d bisected on request: found", id)) {
		t.Fatalf("nightly run again on a recorded night: exit %d; want 0 and the bisection on request found\n%s", code, stderr)
	}
	servedCulprit(t, cfg, "ci-images", id, "6.12.107+deb12")
	assertNoQEMULeft(t)
}

// servedPages serves cfg's history, as lpmbisect serve does (with token
// when it is not ""), until the test ends, and returns a reader of its
// pages that fails the test on an answer other than 200.
func servedPages(t *testing.T, cfg, token string) (url string, read func(path string) string) {
	t.Helper()
	f, err := config.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db, err := nightly.OpenHistory(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	s, err := serve.New(serve.Options{DB: db, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		db.Close()
	})
	return ts.URL, func(path string) string {
		t.Helper()
		resp, err := ts.Client().Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Errorf("GET %s = %d %s", path, resp.StatusCode, body)
		}
		return string(body)
	}
}

// servedInsight checks the served page of a night that ran the guest's
// pass on its tip and on the last tip: the insight block stored with the
// night, with the lookup's profile (longest_prefix_match's share gone in
// 6.12, where it is inlined), as HTML and as JSON.
func servedInsight(t *testing.T, cfg, series, date string) {
	t.Helper()
	_, read := servedPages(t, cfg, "")
	page := html.UnescapeString(read(report.NightPath(series, date)))
	const profile = "Profile of LPMTrie/op=lookup/keys=random/entries=1000 (A → B)"
	if !strings.Contains(page, "<h2>Why it changed</h2>") || !strings.Contains(page, profile) || !strings.Contains(page, "A: the tip of ") {
		t.Errorf("night %s's page has no insight block with the lookup's profile", date)
	}
	if lpm := profileRow(page, "longest_prefix_match.isra.0"); len(lpm) < 2 || lpm[0] < 30 || lpm[1] != 0 {
		t.Errorf("night %s's profile row of longest_prefix_match.isra.0: %v; want a large share before the change (≥ 30%%), none after", date, lpm)
	}
	var doc report.HistoryDocument
	if err := json.Unmarshal([]byte(read(report.NightPath(series, date)+"?format=json")), &doc); err != nil || len(doc.Series) != 1 || len(doc.Series[0].Nights) != 1 {
		t.Fatalf("night %s's JSON: %v", date, err)
	}
	if in := doc.Series[0].Nights[0].Insight; in == nil || len(in.Block.Profiles) == 0 || !strings.Contains(strings.Join(in.Block.ProfileLines, "\n"), profile) {
		t.Errorf("night %s's JSON has no insight block with the lookup's profile: %+v", date, in)
	}
}

// bisectThis asks for the bisection of the series' change point of the
// random lookups on the kernel line at night date, as the page's form
// does (POST /triage, history.DB.Triage), and returns its ID.
func bisectThis(t *testing.T, cfg, series, date string) int64 {
	t.Helper()
	const token = "bisect-this-token"
	url, read := servedPages(t, cfg, token)
	var doc report.HistoryDocument
	if err := json.Unmarshal([]byte(read(report.SeriesPath(series)+"?format=json")), &doc); err != nil || len(doc.Series) != 1 {
		t.Fatalf("the series' JSON: %v", err)
	}
	var id int64
	for _, cp := range doc.Series[0].ChangePoints {
		if cp.Line == "kernel" && cp.Night == date && strings.Contains(cp.Benchmark, "op=lookup/keys=random") && cp.Status == "open" {
			id = cp.ID
			if cp.Bisect.State != "none" {
				t.Errorf("change point %d: bisection %s before it was asked for; want none (provisional: not bisected by itself)", id, cp.Bisect.State)
			}
		}
	}
	if id == 0 {
		t.Fatalf("no open kernel-line change point of the random lookups at %s: %+v", date, doc.Series[0].ChangePoints)
	}
	form := neturl.Values{"id": {fmt.Sprint(id)}, "action": {"bisect"}, "who": {"sheriff"}, "comment": {"which 6.12 build?"}}
	req, _ := http.NewRequest(http.MethodPost, url+report.TriagePath, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"bisect":"requested"`) {
		t.Fatalf("POST %s bisect %d = %d %s; want the bisection requested", report.TriagePath, id, resp.StatusCode, body)
	}
	if page := read(report.BisectionsPath); !strings.Contains(page, "the next nightly run bisects it") {
		t.Errorf("the bisections page does not show the request")
	}
	return id
}

// servedCulprit checks that the served pages show change point id's
// bisection found, its culprit the kernel named culprit.
func servedCulprit(t *testing.T, cfg, series string, id int64, culprit string) {
	t.Helper()
	_, read := servedPages(t, cfg, "")
	var doc report.HistoryDocument
	if err := json.Unmarshal([]byte(read(report.BisectionsPath+"?format=json")), &doc); err != nil || len(doc.Series) != 1 {
		t.Fatalf("the bisections' JSON: %v", err)
	}
	found := false
	for _, cp := range doc.Series[0].ChangePoints {
		if cp.ID == id {
			found = true
			t.Logf("change point %d: bisect %s, culprit %s, %s", id, cp.Bisect.State, cp.Bisect.Culprit, cp.Outcome)
			if cp.Bisect.State != "found" || !strings.Contains(cp.Bisect.Culprit, culprit) {
				t.Errorf("change point %d: bisection %+v; want found, the culprit %s", id, cp.Bisect, culprit)
			}
		}
	}
	if !found {
		t.Errorf("the bisections' JSON has no change point %d", id)
	}
	for _, path := range []string{report.SeriesPath(series), report.BisectionsPath} {
		page := html.UnescapeString(read(path))
		i := strings.Index(page, fmt.Sprintf(`id="cp%d"`, id))
		if i < 0 || !strings.Contains(page[i:min(len(page), i+2000)], "culprit ") || !strings.Contains(page[i:min(len(page), i+2000)], culprit) {
			t.Errorf("%s does not show change point %d's culprit %s", path, id, culprit)
		}
	}
}

// servedNight checks lpmbisect serve's pages over a history that real
// boots wrote: the night's page names its tip's release and gives the
// benchstat command over its results, which hold every boot's benchfmt
// lines with their kernel, and the series' JSON is history --format json's.
func servedNight(t *testing.T, cfg, series, date, release string) {
	t.Helper()
	_, read := servedPages(t, cfg, "")
	page := html.UnescapeString(read(report.NightPath(series, date))) // html/template writes + as &#43;
	if !strings.Contains(page, release) || !strings.Contains(page, "benchstat -col kernel -ignore side,boot,image,phases,vulnerabilities night.txt") {
		t.Errorf("the served page of night %s does not name its tip %s and the benchstat command:\n%s", date, release, page)
	}
	if results := read(report.ResultsPath(series, date, report.NightResults)); !strings.Contains(results, "kernel: "+release) || !strings.Contains(results, "BenchmarkLPMTrie/op=lookup") {
		t.Errorf("night %s's served results do not hold the tip's boots", date)
	}
	var doc report.HistoryDocument
	if err := json.Unmarshal([]byte(read(report.SeriesPath(series)+"?format=json")), &doc); err != nil || len(doc.Series) != 1 || doc.Series[0].Name != series {
		t.Errorf("the series' JSON: %v, %+v", err, doc)
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/present/report"
)

// TestSeriesOnRealKernels measures commits 1..7 of the bisection tests'
// repository patch by patch, booting the real Debian kernels they "build"
// under icount: 2/6 does not boot, 4/6 does not build, 6/6 is the
// 6.1 → 6.12 step (faster), the others the same 6.1 kernel.
func TestSeriesOnRealKernels(t *testing.T) {
	bootsInParallel(t)
	args := vmArgs(t)
	dir, commits := culpritRepo(t)
	// A configuration that names a history: the run is recorded there.
	hist := t.TempDir()
	cfg := filepath.Join(hist, "kernels.toml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, "[nightly]\ndb = %q\n", filepath.Join(hist, "history.db")), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := append(append(append([]string{"series", "--config", cfg, "--repo", dir, "--build-command", "./build.sh", "--state", t.TempDir(), "--format", "json"}, bisectArgs...), args...), "--boot-timeout", "4m")
	code, stdout, stderr := runCLI(t, append(cmd, commits[1]+".."+commits[7])...)
	t.Logf("lpmbisect series:\n%s", stderr)
	if code != exitInconclusive {
		t.Errorf("lpmbisect series: exit %d; want %d (a patch did not build, one did not boot)", code, exitInconclusive)
	}
	checkRealSeries(t, stdout)
	if !strings.Contains(stderr, "recorded as patch-series run 1 in the history") {
		t.Errorf("lpmbisect series does not say it recorded the run in the history")
	}
	servedPatchSeries(t, cfg, commits[1], commits[7])

	// The same series again, resumed from its state, as GitHub
	// annotations: the patch that did not boot, the one that does not
	// build, and 5/6 faster; nothing for the patches that are SAME.
	github := slices.Clone(cmd)
	github[slices.Index(github, "json")] = "github"
	code, stdout, stderr = runCLI(t, append(github, commits[1]+".."+commits[7])...)
	t.Logf("lpmbisect series --format github:\n%s", stdout)
	if code != exitInconclusive {
		t.Errorf("lpmbisect series --format github: exit %d; want %d\n%s", code, exitInconclusive, stderr)
	}
	for _, want := range []string{"::error title=lpmbisect%3A patch 1/6 did not boot::", "::error title=lpmbisect%3A patch 3/6 does not build::", "::notice title=lpmbisect%3A patch 5/6 "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("series --format github lacks %q", want)
		}
	}
	for _, same := range []string{"patch 2/6", "patch 4/6", "patch 6/6"} {
		if strings.Contains(stdout, same) {
			t.Errorf("series --format github annotates %s, which is SAME", same)
		}
	}
	assertNoQEMULeft(t)
}

// servedPatchSeries checks lpmbisect serve's pages of the series run
// recorded in cfg's history: the list names it, its page is the series'
// report (the 6.1 → 6.12 patch with why it changed), and its JSON is
// series --format json's.
func servedPatchSeries(t *testing.T, cfg, base, tip string) {
	t.Helper()
	_, read := servedPages(t, cfg, "")
	run := report.PatchSeriesRunPath(1)
	if list := read(report.PatchSeriesPath); !strings.Contains(list, `href="`+run+`"`) || !strings.Contains(list, base[:12]+".."+tip[:12]) {
		t.Errorf("the patch-series page does not link run 1 of %s..%s:\n%s", base[:12], tip[:12], list)
	}
	var list report.PatchSeriesDoc
	if err := json.Unmarshal([]byte(read(report.PatchSeriesPath+"?format=json")), &list); err != nil || len(list.Runs) != 1 ||
		list.Runs[0].Patches != 6 || list.Runs[0].Outcome != "inconclusive" || list.Runs[0].Base != base || list.Runs[0].Tip != tip {
		t.Errorf("the patch-series JSON: %v %+v; want run 1, 6 patches, inconclusive, %s..%s", err, list, base, tip)
	}
	page := read(run)
	for _, want := range []string{"5/6", "6/6", "why it changed", "expected &#39;;&#39;", `href="` + report.PatchSeriesPath + `"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the run's page lacks %q", want)
		}
	}
	checkRealSeries(t, read(run+"?format=json"))
}

// checkRealSeries checks the JSON report of the series commits 1..7 of
// culpritRepo: the statuses, the compiler's error of 3/6, what 2/6 and 4/6
// are compared with, the verdicts and the accelerator.
func checkRealSeries(t *testing.T, stdout string) {
	t.Helper()
	var doc struct {
		Patches []struct {
			N        int      `json:"n"`
			Status   string   `json:"status"`
			LogTail  []string `json:"log_tail"`
			AgainstN int      `json:"against_n"`
		} `json:"patches"`
		Benchmarks []struct {
			Cells []struct {
				VsParent *struct {
					DeltaPct  float64 `json:"delta_pct"`
					Verdict   string  `json:"verdict"`
					Direction string  `json:"direction"`
				} `json:"vs_parent"`
			} `json:"cells"`
		} `json:"benchmarks"`
		Environment struct {
			Accel string `json:"accel"`
		} `json:"environment"`
		Outcome string `json:"outcome"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("series JSON: %v\n%s", err, stdout)
	}
	var got []string
	for _, p := range doc.Patches {
		got = append(got, p.Status)
	}
	if strings.Join(got, " ") != "boot-failed measured build-failed measured measured measured" {
		t.Fatalf("statuses = %v", got)
	}
	if !strings.Contains(strings.Join(doc.Patches[2].LogTail, "\n"), "expected ';'") {
		t.Errorf("3/6's log tail = %q; want the compiler's error", doc.Patches[2].LogTail)
	}
	if doc.Patches[1].AgainstN != 0 || doc.Patches[3].AgainstN != 2 {
		t.Errorf("2/6 against %d, 4/6 against %d; want 0 (the base: 1/6 did not boot) and 2", doc.Patches[1].AgainstN, doc.Patches[3].AgainstN)
	}
	if len(doc.Benchmarks) == 0 {
		t.Fatal("no benchmark in the series report")
	}
	cells := doc.Benchmarks[0].Cells
	if d := cells[4].VsParent; d == nil || d.Verdict != "DIFFERENT" || d.Direction != "better" {
		t.Errorf("5/6 (6.1 → 6.12) vs parent = %+v; want DIFFERENT better", d)
	}
	for _, i := range []int{1, 3, 5} {
		if d := cells[i].VsParent; d == nil || d.Verdict != "SAME" {
			t.Errorf("%d/6 vs parent = %+v; want SAME (the same kernel)", i+1, d)
		}
	}
	if doc.Environment.Accel != "icount" {
		t.Errorf("environment accel = %q; want icount", doc.Environment.Accel)
	}
}

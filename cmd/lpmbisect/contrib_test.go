package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitHubSeriesScript runs contrib/github/lpmbisect-series.sh as a
// runner would on a pull request of two commits, with the variables a
// runner sets and an lpmbisect on PATH that records its arguments and
// answers as series does for a regression (a markdown table, exit 1).
func TestGitHubSeriesScript(t *testing.T) {
	script, err := filepath.Abs(filepath.Join("..", "..", "contrib", "github", "lpmbisect-series.sh"))
	if err != nil {
		t.Fatal(err)
	}
	repo, bin := t.TempDir(), t.TempDir()
	git := gitIn(t, repo)
	git("init", "-q", "-b", "main")
	git("commit", "-q", "--allow-empty", "-m", "base")
	base := git("rev-parse", "HEAD")
	git("update-ref", "refs/remotes/origin/main", base)
	git("commit", "-q", "--allow-empty", "-m", "patch 1")
	git("commit", "-q", "--allow-empty", "-m", "patch 2")
	tip := git("rev-parse", "HEAD")
	args := filepath.Join(bin, "args")
	fake := "#!/bin/sh\necho \"$@\" >> " + args + "\ncase \"$*\" in *'--format github'*) echo '::error title=lpmbisect%3A patch 2/2 X::2/2 -3.1%25 DIFFERENT'; exit 1;; esac\n" +
		"echo '| patch | vs parent |'\necho '|---|---|'\necho '| 2/2 | -3.1% DIFFERENT |'\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "lpmbisect"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	summary := filepath.Join(t.TempDir(), "summary.md")
	run := func(env ...string) (string, int) {
		cmd := exec.Command("sh", script)
		cmd.Dir = repo
		cmd.Env = append(append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH")), env...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	out, code := run("GITHUB_BASE_REF=main", "GITHUB_SHA="+tip, "GITHUB_STEP_SUMMARY="+summary, "LPMBISECT_SERIES_ARGS=--accel icount")
	if code != 1 || !strings.Contains(out, "::error title=lpmbisect::a patch regresses") || !strings.Contains(out, "::error title=lpmbisect%3A patch 2/2 X::") {
		t.Errorf("script on a regressing series: exit %d, output %q; want 1, the patch's ::error annotation and the series' own", code, out)
	}
	got, _ := os.ReadFile(args)
	if want := "series --repo . --format markdown --accel icount " + base + ".." + tip + "\nseries --repo . --format github --accel icount " + base + ".." + tip; strings.TrimSpace(string(got)) != want {
		t.Errorf("lpmbisect ran as\n%s\nwant\n%s", got, want)
	}
	sum, _ := os.ReadFile(summary)
	if !strings.Contains(string(sum), "## lpmbisect series "+base+".."+tip) || !strings.Contains(string(sum), "| 2/2 | -3.1% DIFFERENT |") {
		t.Errorf("step summary =\n%s\nwant the heading and the series' table", sum)
	}
	if out, code := run("GITHUB_BASE_REF=", "GITHUB_SHA="+tip, "GITHUB_STEP_SUMMARY="+summary); code == 0 || !strings.Contains(out, "not a pull request") {
		t.Errorf("script outside a pull request: exit %d, %q; want a failure saying so", code, out)
	}
}

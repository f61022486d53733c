package main

// End-to-end tests of bisection on real kernels: a throwaway git repository
// whose commits "build" the real Debian 6.1 or 6.12 cloud kernels (one
// commit does not build, one does not boot), bisected by git bisect run with
// bisect-run and by lpmbisect bisect (interrupted and resumed), and a
// search over a list of Debian packages. They measure under icount with
// few, short boots; they need QEMU and scripts/fetch-kernels like the other
// end-to-end tests.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
)

// bisectArgs keep bisection tests short: one benchmark, small tries,
// instruction counts (the deterministic rule decides from 2 boots a side;
// --max-boots 8 leaves the statistical fallback room).
var bisectArgs = []string{"--accel", "icount", "--bench", "LPMTrie/op=lookup/keys=random", "--entries", "1000", "--max-boots", "8", "--boot-timeout", "60s"}

// fakeBuild is the build command of the test repository: kernel.conf says
// which real kernel a commit "builds" (KERNEL=61 or 612: the unpacked
// package and release come from test-kernels.conf in the git directory,
// outside the history, so the commits, and with
// fixed dates their ids and git bisect's choices, are the same on every
// run) and whether it builds (MODE=broken) or boots (MODE=noboot: a
// truncated image, which triple-faults at once). The commit id is appended
// to the image, so every commit builds a different image, as real commits
// do.
const fakeBuild = `#!/bin/sh
set -e
. ./kernel.conf
. "$(git rev-parse --git-common-dir)/test-kernels.conf"
if [ "$KERNEL" = 61 ]; then
  SRC=$LPMBISECT_TEST_SRC61 REL=$LPMBISECT_TEST_REL61
else
  SRC=$LPMBISECT_TEST_SRC612 REL=$LPMBISECT_TEST_REL612
fi
if [ "$MODE" = broken ]; then
  echo "kernel/bpf/lpm_trie.c:42:1: error: expected ';' before '}' token" >&2
  exit 2
fi
out=$LPMBISECT_BUILD_DIR/$(git rev-parse --short HEAD)
rm -rf "$out"
mkdir -p "$out/boot" "$out/lib/modules"
if [ "$MODE" = noboot ]; then
  head -c 2000000 "$SRC/boot/vmlinuz-$REL" > "$out/boot/vmlinuz-$REL"
else
  cp "$SRC/boot/vmlinuz-$REL" "$out/boot/vmlinuz-$REL"
fi
git rev-parse HEAD >> "$out/boot/vmlinuz-$REL"
cp "$SRC/boot/config-$REL" "$out/boot/"
ln -s "$SRC/lib/modules/$REL" "$out/lib/modules/$REL"
echo "$out"
`

// debianTree returns the unpacked package directory and release of a
// Debian kernel package.
func debianTree(t *testing.T, pkg string) (dir, release string) {
	t.Helper()
	k, err := kernel.Resolve(testkernels.Deb(t, pkg), sharedCache(t))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(filepath.Dir(k.Image)), k.Release
}

// culpritRepo makes the test repository: commits 0–5 build Debian 6.1,
// 6–8 Debian 6.12 (faster: an improvement). Commit 4, git bisect's first
// midpoint, does not build, and commit 2, which git picks next, does not
// boot.
func culpritRepo(t *testing.T) (dir string, commits []string) {
	t.Helper()
	return culpritRepoWith(t, nil)
}

// culpritRepoWith is culpritRepo with the files extra (name: content) in
// every commit, which gives the commits other ids, and git bisect other
// choices.
func culpritRepoWith(t *testing.T, extra map[string]string) (dir string, commits []string) {
	t.Helper()
	src61, rel61 := debianTree(t, testkernels.Debian61)
	src612, rel612 := debianTree(t, testkernels.Debian612)
	dir = t.TempDir()
	git := gitIn(t, dir)
	git("init", "-q", "-b", "main")
	conf := fmt.Sprintf("LPMBISECT_TEST_SRC61=%q\nLPMBISECT_TEST_REL61=%q\nLPMBISECT_TEST_SRC612=%q\nLPMBISECT_TEST_REL612=%q\n", src61, rel61, src612, rel612)
	if err := os.WriteFile(filepath.Join(dir, ".git", "test-kernels.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "build.sh"), []byte(fakeBuild), 0o755)
	for name, data := range extra {
		os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644)
	}
	for i := 0; i <= 8; i++ {
		k, mode := "61", "ok"
		if i >= 6 {
			k = "612"
		}
		switch i {
		case 4:
			mode = "broken"
		case 2:
			mode = "noboot"
		}
		os.WriteFile(filepath.Join(dir, "kernel.conf"), []byte(fmt.Sprintf("# commit %d\nKERNEL=%s\nMODE=%s\n", i, k, mode)), 0o644)
		git("add", "-A")
		git("commit", "-q", "-m", fmt.Sprintf("commit %d", i))
		commits = append(commits, git("rev-parse", "HEAD"))
	}
	return dir, commits
}

// readState reads the one state file of kind in dir.
func readState(t *testing.T, dir, kind string) *campaign.State {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, kind+"-*.json"))
	if len(files) != 1 {
		t.Fatalf("state files %s-*.json in %s: %v; want one", kind, dir, files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var st campaign.State
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	return &st
}

// logBound is ⌈log2 n⌉ + 2: the kernels a bisection of n commits after
// the good one may measure, endpoints included.
func logBound(n int) int { return int(math.Ceil(math.Log2(float64(n)))) + 2 }

func TestGitBisectRunOnRealKernels(t *testing.T) {
	bootsInParallel(t)
	args := vmArgs(t)
	dir, commits := culpritRepo(t)
	bin := builtCLI(t)
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := git("bisect", "start", commits[8], commits[0]); err != nil {
		t.Fatalf("git bisect start: %v\n%s", err, out)
	}
	start := time.Now()
	run := append(append([]string{"bisect", "run", bin, "bisect-run", "--reverse", "--build-command", "./build.sh"}, bisectArgs...), args...)
	out, err := git(run...)
	t.Logf("git bisect run (%s):\n%s", time.Since(start).Round(time.Second), out)
	if err != nil {
		t.Fatalf("git bisect run: %v", err)
	}
	if !strings.Contains(out, commits[6]+" is the first bad commit") {
		t.Errorf("git bisect run did not name commit 6 (%s)", commits[6][:12])
	}
	st := readState(t, filepath.Join(dir, ".git", "lpmbisect"), "bisect-run")
	skips := map[string]string{}
	for _, s := range st.Steps {
		if s.Verdict.Class == campaign.Skip {
			skips[s.Commit] = s.Verdict.Reason
		}
	}
	if !strings.Contains(skips[commits[4]], "build failed") || !strings.Contains(skips[commits[2]], "did not boot") {
		t.Errorf("skipped steps = %v; want commit 4 (build failed) and commit 2 (did not boot)", skips)
	}
	if n := len(st.Measured); n > logBound(8) {
		t.Errorf("bisect-run measured %d kernels; want at most ⌈log2 8⌉+2 = %d", n, logBound(8))
	}
	git("bisect", "reset")
	assertNoQEMULeft(t)
}

func TestBisectRepoOnRealKernelsResumes(t *testing.T) {
	bootsInParallel(t)
	args := vmArgs(t)
	dir, commits := culpritRepo(t)
	state := t.TempDir()
	cmd := append(append([]string{"bisect", "--repo", dir, "--good", commits[0], "--bad", commits[8], "--reverse",
		"--build-command", "./build.sh", "--state", state, "--recheck-boots", "2", "--no-insight"}, bisectArgs...), args...) // the re-check's insight: TestBisectImagesOnDebianKernels

	// Interrupt the first run with SIGINT once it has decided two steps. It
	// is a process of its own, so that the signal reaches no other test.
	interrupted := exec.Command(builtCLI(t), cmd...)
	var firstErr bytes.Buffer
	interrupted.Stderr = &firstErr
	if err := interrupted.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(200 * time.Millisecond):
			}
			files, _ := filepath.Glob(filepath.Join(state, "git-*.json"))
			if len(files) == 1 {
				data, _ := os.ReadFile(files[0])
				var st campaign.State
				if json.Unmarshal(data, &st) == nil && len(st.Steps) >= 2 {
					interrupted.Process.Signal(syscall.SIGINT)
					return
				}
			}
		}
	}()
	interrupted.Wait()
	close(done)
	code, stderr := interrupted.ProcessState.ExitCode(), firstErr.String()
	if code != exitSIGINT {
		t.Fatalf("interrupted lpmbisect bisect: exit %d; want %d\n%s", code, exitSIGINT, stderr)
	}
	first := readState(t, state, "git")
	decided := map[string]bool{}
	for _, s := range first.Steps {
		decided[s.Image] = s.Image != ""
	}
	t.Logf("interrupted after %d steps", len(first.Steps))

	start := time.Now()
	code, stdout, stderr := runCLI(t, cmd...)
	t.Logf("resumed bisect (%s):\n%s\n%s", time.Since(start).Round(time.Second), stdout, stderr)
	if code != 0 {
		t.Fatalf("resumed lpmbisect bisect: exit %d; want 0", code)
	}
	if !strings.Contains(stdout, "first improved commit: "+commits[6]) || !strings.Contains(stdout, "confirmed") {
		t.Errorf("report does not name commit 6 (%s) as confirmed", commits[6][:12])
	}
	for _, line := range strings.Split(stderr, "\n") {
		for img, ok := range decided {
			if ok && strings.Contains(line, "boot") && strings.Contains(line, "ok,") && strings.Contains(line, img[:12]) {
				t.Errorf("resumed run booted an image decided before the interruption: %s", line)
			}
		}
	}
	if !strings.Contains(stderr, "replayed from the state") {
		t.Errorf("resumed run replayed no step from the state")
	}
	final := readState(t, state, "git")
	if n := len(final.Measured); n > logBound(8) {
		t.Errorf("bisect measured %d kernels; want at most ⌈log2 8⌉+2 = %d", n, logBound(8))
	}
	if final.Result == nil || final.Result.Recheck == nil || !final.Result.Recheck.Confirmed {
		t.Errorf("result = %+v; want a confirmed re-check", final.Result)
	}
	if out, _ := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output(); strings.TrimSpace(string(out)) != commits[8] {
		t.Errorf("HEAD after bisect = %s; want main back", out)
	}
	assertNoQEMULeft(t)
}

func TestBisectImagesOnDebianKernels(t *testing.T) {
	bootsInParallel(t)
	args := vmArgs(t)
	deb61, deb612 := testkernels.Deb(t, testkernels.Debian61), testkernels.Deb(t, testkernels.Debian612)
	list := filepath.Join(t.TempDir(), "kernels.txt")
	os.WriteFile(list, []byte(strings.Join([]string{"# 6.1 then 6.12", deb61, deb61, deb61, deb612, deb612, deb612}, "\n")+"\n"), 0o644)
	html := filepath.Join(t.TempDir(), "report.html")
	code, stdout, stderr := runCLI(t, append(append([]string{"bisect", "--images", list, "--reverse", "--state", t.TempDir(), "--html", html, "--recheck-boots", "2"}, bisectArgs...), args...)...)
	t.Logf("%s\n%s", stdout, stderr)
	if code != 0 {
		t.Fatalf("lpmbisect bisect --images: exit %d; want 0", code)
	}
	if !strings.Contains(stdout, "first improved kernel: #4 "+deb612) {
		t.Errorf("report does not name #4, the first 6.12")
	}
	// The re-check's first boots of the parent and the culprit ran the
	// guest's pass: the report profiles the lookup, longest_prefix_match
	// gone and trie_lookup_elem grown.
	lpm, trie := profileRow(stdout, "longest_prefix_match.isra.0"), profileRow(stdout, "trie_lookup_elem")
	if len(lpm) < 2 || lpm[0] < 30 || lpm[1] != 0 || len(trie) < 2 || trie[1] <= trie[0] ||
		!strings.Contains(stdout, "Profile of LPMTrie/op=lookup/keys=random/entries=1000 (A → B)") {
		t.Errorf("culprit report: profile rows longest_prefix_match.isra.0 %v, trie_lookup_elem %v; want the first's large share (≥ 30%%) gone, the second's grown", lpm, trie)
	}
	if data, err := os.ReadFile(html); err != nil || !strings.Contains(string(data), "first improved kernel") || !strings.Contains(string(data), "report.recheck.html") {
		t.Errorf("--html report: %v; want the culprit and a link to the re-check's page", err)
	}
	recheck := filepath.Join(filepath.Dir(html), "report.recheck.html")
	if data, err := os.ReadFile(recheck); err != nil || !strings.Contains(string(data), "<svg") || !strings.Contains(string(data), "DIFFERENT") {
		t.Errorf("re-check page %s: %v; want compare's HTML report with plots and a DIFFERENT verdict", recheck, err)
	}
	assertNoQEMULeft(t)
}

// profileRow reads the shares in % of fn's row in a report's profile,
// as text ("  fn  56.8%  0.0%  …") or Markdown (underscores escaped): nil
// when there is none.
func profileRow(report, fn string) []float64 {
	name := strings.ReplaceAll(regexp.QuoteMeta(fn), "_", `\\?_`)
	m := regexp.MustCompile(name + `\s+([0-9.]+)%\s+([0-9.]+)%`).FindStringSubmatch(report)
	if m == nil {
		return nil
	}
	var out []float64
	for _, f := range m[1:] {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil
		}
		out = append(out, v)
	}
	return out
}

// gitIn returns a runner of git commands in dir, as a fixed author at a
// fixed date, that fails the test on an error and returns the trimmed
// output.
func gitIn(t *testing.T, dir string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid",
			"GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
}

// TestBisectImagesProbesKVM: a bisection over prebuilt kernels decides its
// accelerator once, before anything is planned, by a probe that boots the
// good end of --images (before, a bisection had no kernel to probe with
// and --accel kvm went on to boot the kernels under a KVM that cannot run
// them). With a fresh cache no verdict is kept: the probe runs now, and
// --accel kvm on a host whose /dev/kvm opens but does not run guests is
// refused before any boot, saying why and where that was seen.
func TestBisectImagesProbesKVM(t *testing.T) {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		t.Skip("no /dev/kvm here; the broken-KVM case cannot happen")
	}
	f.Close()
	args := append(vmArgs(t), "--cache-dir", t.TempDir()) // the last --cache-dir wins: nothing kept
	deb61, deb612 := testkernels.Deb(t, testkernels.Debian61), testkernels.Deb(t, testkernels.Debian612)
	list := filepath.Join(t.TempDir(), "kernels.txt")
	os.WriteFile(list, []byte(deb61+"\n"+deb612+"\n"), 0o644)
	code, stdout, stderr := runCLI(t, append([]string{"bisect", "--images", list, "--state", t.TempDir(), "--accel", "kvm",
		"--bench", "LPMTrie/op=lookup/keys=random", "--entries", "1000", "--boots", "2", "--max-boots", "2"}, args...)...)
	if code == exitOK || code == exitInconclusive {
		t.Skipf("KVM runs these kernels here (bisect exit %d)", code)
	}
	if code != exitInfra || !strings.Contains(stderr, "KVM unusable: /dev/kvm opens, but KVM does not run guests here: ") ||
		!strings.Contains(stderr, "(probed now: ") || strings.Contains(stderr, " boot 1 (kvm)") {
		t.Errorf("bisect --images --accel kvm on a broken KVM: exit %d; want %d, refused by a probe of the good end before any boot\n%s\n%s", code, exitInfra, stdout, stderr)
	}
	t.Logf("%s", strings.TrimSpace(stderr))
	assertNoQEMULeft(t)
}

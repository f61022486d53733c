package bisect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/host/kbuild"
	"github.com/lpmbisect/lpmbisect/internal/git"
	"github.com/lpmbisect/lpmbisect/internal/words"
	"github.com/lpmbisect/lpmbisect/testbed/testcampaign"
)

func TestImagesBisect(t *testing.T) {
	dir := t.TempDir()
	// 9 kernels: #1–#5 slow, #6–#9 fast; #4 is not a kernel, #8 does not boot.
	var images []string
	for i := 1; i <= 9; i++ {
		p := filepath.Join(dir, fmt.Sprintf("k%d", i))
		switch {
		case i == 4:
			os.WriteFile(p, []byte("garbage"), 0o644)
		case i == 8:
			testcampaign.WriteKernel(t, p, 838, "noboot")
		case i <= 5:
			testcampaign.WriteKernel(t, p, 1065, fmt.Sprint(i))
		default:
			testcampaign.WriteKernel(t, p, 838, fmt.Sprint(i))
		}
		images = append(images, p)
	}
	stateDir := t.TempDir()
	run := func(m *testcampaign.Measurer) (*campaign.Result, *campaign.State, error) {
		st, err := campaign.OpenState(stateDir, campaign.State{Kind: campaign.KindImages, Images: images, Params: "test", Judge: "test", Reverse: true})
		if err != nil {
			t.Fatal(err)
		}
		b := testcampaign.NewBench(t, m, filepath.Join(stateDir, "measurements"), true)
		var logged bytes.Buffer
		ib := &imagesBisect{Bisection: Bisection{Bench: b, State: st, RecheckBoots: 4, Log: log.New(&logged, "", 0)}, Images: images}
		res, err := ib.Run(context.Background())
		t.Logf("log:\n%s", logged.String())
		return res, st, err
	}
	m := &testcampaign.Measurer{}
	res, st, err := run(m)
	if err != nil {
		t.Fatal(err)
	}
	if res.FirstBad != images[5] || res.Parent != images[4] {
		t.Errorf("ImagesBisect.Run() first bad = %s (parent %s); want %s", res.FirstBad, res.Parent, images[5])
	}
	if res.Recheck == nil || !res.Recheck.Confirmed {
		t.Errorf("ImagesBisect.Run() re-check = %+v; want confirmed", res.Recheck)
	}
	bound := int(math.Ceil(math.Log2(float64(len(images)-1)))) + 2
	if n := m.ImagesMeasured(); n > bound || res.Measured != n {
		t.Errorf("measured %d images (result says %d); want at most ⌈log2 %d⌉+2 = %d", n, res.Measured, len(images)-1, bound)
	}
	// What the report says (package report lays it out: its golden files).
	v := (Report{State: st, Result: res}).View("")
	if !strings.HasPrefix(v.Culprit, "first improved kernel: #6") || !strings.Contains(v.Verdict, "confirmed") {
		t.Errorf("View() culprit %q, verdict %q; want the first improved kernel #6, confirmed", v.Culprit, v.Verdict)
	}
	if !(v.Confidence > 0 && v.Confidence <= 1) || !v.Instructions || len(v.Steps) == 0 {
		t.Errorf("View() confidence %v, instructions %v, %d steps; want a confidence, instruction counts and the steps", v.Confidence, v.Instructions, len(v.Steps))
	}

	// Run again: the state has every step and the store every boot.
	m2 := &testcampaign.Measurer{}
	res2, _, err := run(m2)
	if err != nil {
		t.Fatal(err)
	}
	if res2.FirstBad != res.FirstBad || m2.Calls() != 0 {
		t.Errorf("second run: first bad %s, %d measurements; want %s with none", res2.FirstBad, m2.Calls(), res.FirstBad)
	}
}

// gitRepo makes a repository whose commits each set the kernel a fake
// build produces: commit i (from 0) has value values[i]; broken[i] makes
// the build fail, noboot[i] the kernel not boot.
// testCommitBase is the first test commit's date; each next commit is a
// minute later. git bisect's pick after a skip depends on the commits' order
// by date and on their hashes, so with the wall clock's dates it varied from
// run to run (a CI run measured one kernel more than the test allows). Fixed
// dates give fixed hashes and the same picks in every run; with these,
// TestGitBisect's second pick is commit 2.
const testCommitBase = 1767225600

func gitRepo(t *testing.T, values []float64, broken, noboot map[int]bool) (dir string, commits []string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir = t.TempDir()
	date := ""
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid",
			"GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	build := "#!/bin/sh\nset -e\n[ ! -e BROKEN ] || { echo 'error: does not compile' >&2; exit 2; }\nout=$LPMBISECT_BUILD_DIR/kernel-$(git rev-parse --short HEAD)\ncp kernel.txt \"$out\"\necho \"$out\"\n"
	os.WriteFile(filepath.Join(dir, "build.sh"), []byte(build), 0o755)
	for i, v := range values {
		extra := []string{fmt.Sprintf("commit %d", i)}
		if noboot[i] {
			extra = append(extra, "noboot")
		}
		testcampaign.WriteKernel(t, filepath.Join(dir, "kernel.txt"), v, extra...)
		os.Remove(filepath.Join(dir, "BROKEN"))
		if broken[i] {
			os.WriteFile(filepath.Join(dir, "BROKEN"), nil, 0o644)
		}
		git("add", "-A")
		date = fmt.Sprintf("%d +0000", testCommitBase+60*i)
		git("commit", "-q", "-m", fmt.Sprintf("commit %d", i))
		commits = append(commits, git("rev-parse", "HEAD"))
	}
	return dir, commits
}

func TestGitBisect(t *testing.T) {
	// The change is in commit 6. git bisect's first midpoint, commit 4,
	// does not build and commit 2, its next pick, does not boot: both are
	// skipped.
	values := []float64{1000, 1000, 1000, 1000, 1000, 1000, 1200, 1200, 1200}
	dir, commits := gitRepo(t, values, map[int]bool{4: true}, map[int]bool{2: true})
	stateDir := t.TempDir()
	newRun := func(m *testcampaign.Measurer) *gitBisect {
		st, err := campaign.OpenState(stateDir, campaign.State{Kind: campaign.KindGit, Repo: dir, Good: commits[0], Bad: commits[8], Params: "test", Judge: "test"})
		if err != nil {
			t.Fatal(err)
		}
		b := testcampaign.NewBench(t, m, filepath.Join(stateDir, "measurements"), false)
		return &gitBisect{
			Bisection: Bisection{Bench: b, State: st, RecheckBoots: 4, Log: log.New(os.Stderr, "", 0)},
			Repo:      &git.Repo{Dir: dir}, Good: commits[0], Bad: commits[8],
			Builder: &kbuild.CommandBuilder{Command: "./build.sh"}, BuildDir: filepath.Join(t.TempDir(), "build"), Resolve: testcampaign.Resolve,
		}
	}

	// Interrupt the first run at its fourth measurement.
	ctx, cancel := context.WithCancel(context.Background())
	m1 := &testcampaign.Measurer{Cancel: cancel, CancelAt: 4}
	if _, err := newRun(m1).Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted Run() error = %v; want context.Canceled", err)
	}
	r := &git.Repo{Dir: dir}
	if !r.BisectInProgress(context.Background()) {
		t.Errorf("an interrupted bisection should leave git bisect in progress, to resume")
	}
	decided := len(newRun(&testcampaign.Measurer{}).State.Steps)

	m2 := &testcampaign.Measurer{}
	g := newRun(m2)
	res, err := g.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.FirstBad != commits[6] || res.Parent != commits[5] {
		t.Fatalf("Run() first bad = %s (parent %s), range %v; want commit 6 %s", words.ShortHash(res.FirstBad), words.ShortHash(res.Parent), res.Range, words.ShortHash(commits[6]))
	}
	if res.Subject != "commit 6" {
		t.Errorf("Run().Subject = %q; want commit 6", res.Subject)
	}
	// Steps decided before the interruption were not measured again.
	for _, st := range g.State.Steps[:decided] {
		if st.Image != "" && m2.Boots(st.Image) > 0 && st.Commit != commits[6] && st.Commit != commits[5] {
			t.Errorf("resumed run measured %s again (decided before the interruption)", words.ShortHash(st.Commit))
		}
	}
	if m2.Boots(g.State.Kernels[commits[0]].Image) != 0 || m2.Boots(g.State.Kernels[commits[8]].Image) != 0 {
		t.Errorf("resumed run measured the endpoints again")
	}
	// Commit 4 does not build and 2 does not boot: skipped.
	visited := map[string]bool{}
	for _, st := range g.State.Steps {
		visited[st.Commit] = true
		t.Logf("%s", campaign.FormatStep(st))
		if (st.Commit == commits[4] || st.Commit == commits[2]) && st.Verdict.Class != campaign.Skip {
			t.Errorf("step %s = %s; want skip", words.ShortHash(st.Commit), st.Verdict.Class)
		}
		if st.Commit == commits[4] && !strings.Contains(st.Verdict.Reason, "build failed") {
			t.Errorf("build failure step reason = %q", st.Verdict.Reason)
		}
	}
	if !visited[commits[2]] {
		t.Errorf("git bisect never picked commit 2 (does not boot): the test's commit dates no longer steer it there")
	}
	bound := int(math.Ceil(math.Log2(float64(len(commits)-1)))) + 2
	if res.Measured > bound {
		t.Errorf("measured %d kernels; want at most ⌈log2 %d⌉+2 = %d", res.Measured, len(commits)-1, bound)
	}
	if r.BisectInProgress(context.Background()) {
		t.Errorf("git bisect still in progress after the bisection ended")
	}
	if head, _ := r.Head(context.Background()); head != commits[8] {
		t.Errorf("HEAD after the bisection = %s; want main (%s) back", words.ShortHash(head), words.ShortHash(commits[8]))
	}
	if res.Recheck == nil || !res.Recheck.Confirmed {
		t.Errorf("re-check = %+v; want confirmed", res.Recheck)
	}
	logData, _ := os.ReadFile(g.State.LogPath())
	if n := strings.Count(string(logData), "step "); n != len(g.State.Steps) {
		t.Errorf("step log has %d steps; state has %d\n%s", n, len(g.State.Steps), logData)
	}
}

func TestGitBisectRefusesSameEndpoints(t *testing.T) {
	dir, commits := gitRepo(t, []float64{1000, 1000.2, 1000.1}, nil, nil)
	st, err := campaign.OpenState(t.TempDir(), campaign.State{Kind: campaign.KindGit, Repo: dir, Good: commits[0], Bad: commits[2]})
	if err != nil {
		t.Fatal(err)
	}
	g := &gitBisect{
		Bisection: Bisection{Bench: testcampaign.NewBench(t, &testcampaign.Measurer{}, t.TempDir(), false), State: st},
		Repo:      &git.Repo{Dir: dir}, Good: commits[0], Bad: commits[2],
		Builder: &kbuild.CommandBuilder{Command: "./build.sh"}, BuildDir: t.TempDir(), Resolve: testcampaign.Resolve,
	}
	_, err = g.Run(context.Background())
	if !errors.Is(err, campaign.ErrEndpointsNotDifferent) {
		t.Errorf("Run() on endpoints that measure the same: %v; want ErrEndpointsNotDifferent", err)
	}
	if (&git.Repo{Dir: dir}).BisectInProgress(context.Background()) {
		t.Errorf("a refused bisection left git bisect in progress")
	}
}

func TestGitBisectSameImageIsSuspect(t *testing.T) {
	// Commit 2 changes the benchmark; commit 3 only the git history. The
	// bisection blames 2; the test then asks for 3's re-check directly.
	dir, commits := gitRepo(t, []float64{1000, 1000, 1200, 1200}, nil, nil)
	os.WriteFile(filepath.Join(dir, "README"), []byte("docs only\n"), 0o644)
	st, _ := campaign.OpenState(t.TempDir(), campaign.State{Kind: campaign.KindGit, Repo: dir, Good: commits[0], Bad: commits[3]})
	g := &gitBisect{
		Bisection: Bisection{Bench: testcampaign.NewBench(t, &testcampaign.Measurer{}, t.TempDir(), false), State: st, RecheckBoots: 4},
		Repo:      &git.Repo{Dir: dir}, Good: commits[0], Bad: commits[3],
		Builder: &kbuild.CommandBuilder{Command: "./build.sh"}, BuildDir: t.TempDir(), Resolve: testcampaign.Resolve,
	}
	b1 := &kbuild.Built{Kernel: testcampaign.WriteKernel(t, filepath.Join(t.TempDir(), "k"), 1200), Image: "same"}
	st.Kernels[commits[1]], st.Kernels[commits[2]] = b1, b1
	res := &campaign.Result{FirstBad: commits[2]}
	if err := g.recheckCulprit(context.Background(), res); err != nil {
		t.Fatal(err)
	}
	if res.Recheck == nil || !res.Recheck.SameImage {
		t.Fatalf("recheckCulprit with identical images = %+v; want SameImage", res.Recheck)
	}
	if v := (Report{State: st, Result: res}).Verdict(); !strings.HasPrefix(v, "suspect") {
		t.Errorf("Report.Verdict() = %q; want suspect", v)
	}
}

func TestOpenStateIdentity(t *testing.T) {
	dir := t.TempDir()
	a, err := campaign.OpenState(dir, campaign.State{Kind: campaign.KindGit, Repo: "/r", Good: "g", Bad: "b", Params: "p", Judge: "j"})
	if err != nil {
		t.Fatal(err)
	}
	a.Steps = append(a.Steps, campaign.Step{N: 1, Commit: "c", Verdict: campaign.Verdict{Class: campaign.Bad}})
	if err := a.Save(); err != nil {
		t.Fatal(err)
	}
	again, err := campaign.OpenState(dir, campaign.State{Kind: campaign.KindGit, Repo: "/r", Good: "g", Bad: "b", Params: "p", Judge: "j"})
	if err != nil || len(again.Steps) != 1 || again.Path() != a.Path() {
		t.Errorf("OpenState(same bisection) = %d steps at %s, %v; want the saved step at %s", len(again.Steps), again.Path(), err, a.Path())
	}
	other, err := campaign.OpenState(dir, campaign.State{Kind: campaign.KindGit, Repo: "/r", Good: "g", Bad: "b", Params: "p", Judge: "other"})
	if err != nil || len(other.Steps) != 0 || other.Path() == a.Path() {
		t.Errorf("OpenState(other judge) = %d steps at %s, %v; want a new state beside the first", len(other.Steps), other.Path(), err)
	}
	// A state file edited to name another bisection is refused.
	data, _ := os.ReadFile(a.Path())
	os.WriteFile(a.Path(), []byte(strings.Replace(string(data), `"judge": "j"`, `"judge": "x"`, 1)), 0o644)
	if _, err := campaign.OpenState(dir, campaign.State{Kind: campaign.KindGit, Repo: "/r", Good: "g", Bad: "b", Params: "p", Judge: "j"}); !errors.Is(err, campaign.ErrOtherBisection) {
		t.Errorf("OpenState over another bisection's file: %v; want ErrOtherBisection", err)
	}
}

func TestVersionCompare(t *testing.T) {
	names := []string{
		"linux-image-6.12.117+deb12-cloud-amd64-unsigned_6.12.117-1~deb12u1_amd64.deb",
		"linux-image-6.1.0-57-cloud-amd64-unsigned_6.1.192-3_amd64.deb",
		"linux-image-6.12.100+deb12-cloud-amd64-unsigned_6.12.100-1~deb12u1_amd64.deb",
		"linux-image-6.1.0-9-cloud-amd64-unsigned_6.1.27-1_amd64.deb",
		"linux-image-6.1.0-47-cloud-amd64-unsigned_6.1.158-1_amd64.deb",
	}
	slices.SortFunc(names, VersionCompare)
	want := []string{"6.1.0-9-", "6.1.0-47-", "6.1.0-57-", "6.12.100+", "6.12.117+"}
	for i, w := range want {
		if !strings.Contains(names[i], w) {
			t.Errorf("VersionCompare order = %q; want %q", names, want)
			break
		}
	}
	if VersionCompare("1.0~rc1", "1.0") >= 0 {
		t.Errorf("VersionCompare(1.0~rc1, 1.0) >= 0; want ~ to sort first")
	}
}

func TestExpandImages(t *testing.T) {
	dir := t.TempDir()
	debs := filepath.Join(dir, "debs")
	os.MkdirAll(debs, 0o755)
	for _, n := range []string{"k_6.10_amd64.deb", "k_6.9_amd64.deb"} {
		os.WriteFile(filepath.Join(debs, n), []byte("!<arch>\n"), 0o644)
	}
	os.WriteFile(filepath.Join(debs, "README"), []byte("Debian kernels\n"), 0o644)
	list := filepath.Join(dir, "list.txt")
	os.WriteFile(list, []byte("# kernels\nb.bzImage\n\n/abs/a.bzImage\n"), 0o644)
	got, err := ExpandImages([]string{debs, list})
	want := []string{filepath.Join(debs, "k_6.9_amd64.deb"), filepath.Join(debs, "k_6.10_amd64.deb"), filepath.Join(dir, "b.bzImage"), "/abs/a.bzImage"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("ExpandImages = %q, %v; want %q", got, err, want)
	}
	bin := filepath.Join(dir, "random.bin")
	os.WriteFile(bin, []byte{0, 1, 2, 0xff}, 0o644)
	if _, err := ExpandImages([]string{bin}); err == nil {
		t.Errorf("ExpandImages(binary file) succeeded; want an error")
	}
}

func TestBisectEndpointsComeFromTheStart(t *testing.T) {
	dir, commits := gitRepo(t, []float64{1, 2, 3, 4, 5}, nil, nil)
	r := &git.Repo{Dir: dir}
	ctx := context.Background()
	if bad, good, err := r.BisectEndpoints(ctx); err != nil || bad != "" || good != "" {
		t.Errorf("BisectEndpoints with no bisection = %q, %q, %v; want none", bad, good, err)
	}
	if _, err := r.Bisect(ctx, "start", commits[4], commits[0]); err != nil {
		t.Fatal(err)
	}
	defer r.Bisect(ctx, "reset")
	if _, err := r.Bisect(ctx, "good"); err != nil {
		t.Fatal(err)
	}
	bad, good, err := r.BisectEndpoints(ctx)
	if err != nil || bad != commits[4] || good != commits[0] {
		t.Errorf("BisectEndpoints after a step = %s, %s, %v; want the start's %s, %s", words.ShortHash(bad), words.ShortHash(good), err, words.ShortHash(commits[4]), words.ShortHash(commits[0]))
	}
}

// TestStateKeepsAccelsApart checks that a bisection begun under a wall
// clock (as --accel auto was where KVM did not work, before auto meant
// icount there) is not resumed under icount: measurement parameters
// (measure.Setup.ParamsKey, which starts with the accelerator) are part of a
// state's identity, so the icount run gets a state of its own and an
// empty measurement store, never the wall-time verdicts or results.
func TestStateKeepsAccelsApart(t *testing.T) {
	dir := t.TempDir()
	want := campaign.State{Kind: campaign.KindGit, Repo: "/r", Good: "g", Bad: "b", Params: "tcg-0123456789ab", Judge: "j"}
	wall, err := campaign.OpenState(dir, want)
	if err != nil {
		t.Fatal(err)
	}
	wall.Steps = append(wall.Steps, campaign.Step{N: 1, Commit: "c", Verdict: campaign.Verdict{Class: campaign.Bad}})
	if err := wall.Save(); err != nil {
		t.Fatal(err)
	}
	ws := &campaign.Store{Dir: filepath.Join(dir, "measurements", want.Params)}
	boot := []*benchfmt.Result{{Name: []byte("BenchmarkLPMTrie/op=lookup"), Iters: 1, Values: []benchfmt.Value{{Value: 630, Unit: "sec/op"}}}}
	if _, err := ws.Add("aaaa", [][]*benchfmt.Result{boot}, nil); err != nil {
		t.Fatal(err)
	}
	want.Params = "icount-ba9876543210"
	icount, err := campaign.OpenState(dir, want)
	if err != nil || len(icount.Steps) != 0 || icount.Path() == wall.Path() {
		t.Errorf("OpenState(icount params) = %d steps at %s, %v; want a new state beside the wall-time one", len(icount.Steps), icount.Path(), err)
	}
	is := &campaign.Store{Dir: filepath.Join(dir, "measurements", want.Params)}
	if got, err := is.Load("aaaa"); err != nil || len(got) != 0 {
		t.Errorf("icount store Load(image measured under tcg) = %d results, %v; want none", len(got), err)
	}
}

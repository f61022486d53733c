package fleet

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lpmbisect/lpmbisect/host/kbuild"
	"github.com/lpmbisect/lpmbisect/internal/cachefile"
	"github.com/lpmbisect/lpmbisect/testbed/testkbuild"
)

// gitTree makes a fake kernel tree (see testkbuild) into a repository of
// three commits: image 1, image 2, then a broken one. It returns the
// repository, the fake make and the commits.
func gitTree(t *testing.T) (src, mk string, commits []string) {
	t.Helper()
	src, mk = testkbuild.Tree(t, testkbuild.Options{Compiler: "fakecc 1.0", Image: "kernel image 1\n",
		CompileError: "kernel/bpf/lpm_trie.c:42:1: error: expected ';' before '}' token"})
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.org", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.org")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	commit := func(msg string) {
		git("add", "-A")
		git("commit", "-q", "-m", msg)
		commits = append(commits, git("rev-parse", "HEAD"))
	}
	commit("image 1")
	os.WriteFile(filepath.Join(src, "IMAGE"), []byte("kernel image 2\n"), 0o644)
	commit("image 2")
	os.WriteFile(filepath.Join(src, "BROKEN"), nil, 0o644)
	commit("broken")
	return src, mk, commits
}

// buildFleet starts a worker of the queue "build" that knows gitTree's
// tree as "linux" and a make (gitTree's for "") as the build configuration
// "tiny", and connects a client: where the build tests start.
func buildFleet(t *testing.T, withMake string) (c *Client, src string, commits []string, wlogs *syncBuffer) {
	t.Helper()
	location := migrated(t)
	src, mk, commits := gitTree(t)
	if withMake != "" {
		mk = withMake
	}
	wlog, wlogs := testLogger(t, "builder")
	runWorker(t, Worker{URL: location, Name: "builder", Queues: []string{"build"}, CacheDir: t.TempDir(), Guest: fakeGuest(t),
		Trees: map[string]Tree{"linux": {Dir: src}}, Builds: map[string]BuildConfig{"tiny": {Make: mk, Fragments: []string{}}},
		Log: wlog, Heartbeat: time.Second})
	clog, _ := testLogger(t, "client")
	c, err := connect(context.Background(), location, clog)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, src, commits, wlogs
}

func TestBuildJobs(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	ctx := context.Background()
	c, _, commits, wlogs := buildFleet(t, "")
	dir := t.TempDir()

	var first *BuildResult
	for i, want := range []string{"kernel image 1\n", "kernel image 2\n"} {
		res, err := c.Build(ctx, BuildRequest{Tree: "linux", Commit: commits[i], Config: "tiny", Dir: dir, PollInterval: 200 * time.Millisecond})
		if err != nil {
			t.Fatalf("Build(commit %d) = %v\n%s", i+1, err, wlogs)
		}
		got, _ := os.ReadFile(res.Image)
		if string(got) != want || !res.OK || res.Worker != "builder" || res.Compiler != "fakecc 1.0" || len(res.ConfigHash) != 64 {
			t.Errorf("Build(commit %d) = image %q, %+v; want %q built by builder with fakecc 1.0", i+1, got, res, want)
		}
		if sum, _ := cachefile.SHA256(res.Image); sum != res.ImageSHA256 {
			t.Errorf("Build(commit %d): image hashes to %s; the result says %s", i+1, sum, res.ImageSHA256)
		}
		if i == 0 {
			first = res
		}
	}
	// The same build again is the same job: River's unique jobs.
	again, err := c.Build(ctx, BuildRequest{Tree: "linux", Commit: commits[0], Config: "tiny", Dir: dir, PollInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("Build(commit 1 again) = %v", err)
	}
	if !again.Shared || again.JobID != first.JobID {
		t.Errorf("Build(commit 1 again) = job %d, shared %v; want job %d shared", again.JobID, again.Shared, first.JobID)
	}
	// A commit that does not compile is a result that says so.
	res, err := c.Build(ctx, BuildRequest{Tree: "linux", Commit: commits[2], Config: "tiny", Dir: dir, PollInterval: 200 * time.Millisecond})
	if !errors.Is(err, kbuild.ErrBuildFailed) || res == nil || res.OK || !strings.Contains(string(res.LogTail), "expected ';'") {
		t.Errorf("Build(broken commit) = %+v, %v; want a failed build with the compiler's error in its log", res, err)
	}
	// Names the worker does not know are refused with a message.
	for _, tc := range []struct{ tree, config, commit, want string }{
		{"bpf-next", "tiny", commits[0], `knows no tree "bpf-next"`},
		{"linux", "huge", commits[0], `knows no build configuration "huge"`},
		{"linux", "tiny", strings.Repeat("0", 40), "is not a commit of tree linux"},
	} {
		_, err := c.Build(ctx, BuildRequest{Tree: tc.tree, Commit: tc.commit, Config: tc.config, Dir: dir, PollInterval: 200 * time.Millisecond})
		var je *JobError
		if !errors.As(err, &je) || je.State != "cancelled" || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Build(%s, %s, %s) = %v; want a cancelled job saying %q", tc.tree, tc.config, tc.commit[:7], err, tc.want)
		}
	}
}

// TestBuilder builds the checked-out commits of a tree with the bisection's
// Builder on a build queue: the worker's image, and for a commit that does
// not compile a failed build that kbuild.BuildKernel records as such, with
// the compiler's error in the log it keeps.
func TestBuilder(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	ctx := context.Background()
	c, src, commits, wlogs := buildFleet(t, "")
	b := &Builder{Client: c, Tree: "linux", Config: "tiny", PollInterval: 200 * time.Millisecond}
	checkout := func(commit string) {
		t.Helper()
		if out, err := exec.Command("git", "-C", src, "checkout", "-q", commit).CombinedOutput(); err != nil {
			t.Fatalf("git checkout: %v\n%s", err, out)
		}
	}
	buildDir := t.TempDir()

	checkout(commits[1])
	out, err := b.Build(ctx, src, buildDir)
	if err != nil {
		t.Fatalf("Build(commit 2) = %v\n%s", err, wlogs)
	}
	if got, _ := os.ReadFile(out.Kernel); string(got) != "kernel image 2\n" || out.Log != filepath.Join(buildDir, "lpmbisect-build.log") {
		t.Errorf("Build(commit 2) = image %q, log %s; want the worker's image 2 and the log in the build directory", got, out.Log)
	}

	checkout(commits[2])
	keep := t.TempDir()
	built, err := kbuild.BuildKernel(ctx, b, src, buildDir, commits[2], keep, nil, nil)
	if err != nil {
		t.Fatalf("BuildKernel(broken commit) = %v; want a failed build, not an error", err)
	}
	kept, _ := os.ReadFile(built.BuildLog)
	if built.Failed == "" || !strings.Contains(built.Failed, "worker builder") || !strings.Contains(string(kept), "expected ';'") {
		t.Errorf("BuildKernel(broken commit) = %+v, log %q; want a failed build with the compiler's error in the kept log", built, kept)
	}
	if !strings.HasPrefix(built.BuildLog, keep) {
		t.Errorf("BuildKernel(broken commit) kept its log at %s; want it under %s", built.BuildLog, keep)
	}
}

// TestBuilderCanceled checks that a bisection interrupted during a build
// cancels the build job it alone asked for.
func TestBuilderCanceled(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	slow := filepath.Join(t.TempDir(), "make")
	if err := os.WriteFile(slow, []byte("#!/bin/sh\nexec sleep 120\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c, src, commits, _ := buildFleet(t, slow)
	if out, err := exec.Command("git", "-C", src, "checkout", "-q", commits[0]).CombinedOutput(); err != nil {
		t.Fatalf("git checkout: %v\n%s", err, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var id int64
	go func() { // Ctrl-C once the worker builds
		for ctx.Err() == nil {
			c.db.pool.QueryRow(ctx, "SELECT id FROM river_job WHERE queue = 'build' AND state = 'running' ORDER BY id DESC LIMIT 1").Scan(&id)
			if id != 0 {
				cancel()
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	b := &Builder{Client: c, Queue: "build", Tree: "linux", Config: "tiny", PollInterval: 200 * time.Millisecond}
	done := make(chan error, 1)
	go func() {
		_, err := b.Build(ctx, src, t.TempDir())
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		cancel()
		t.Fatal("Build did not return within a minute of its start")
	}
	if !errors.Is(err, context.Canceled) || id == 0 {
		t.Fatalf("Build interrupted = %v (job %d); want context.Canceled once the job runs", err, id)
	}
	var state string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		c.db.pool.QueryRow(context.Background(), "SELECT state::text FROM river_job WHERE id = $1", id).Scan(&state)
		if state == "cancelled" {
			return
		}
	}
	t.Errorf("build job %d after the interrupted Build: %s; want cancelled", id, state)
}

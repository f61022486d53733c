// Package git runs git for lpmbisect: resolving revisions, checking out,
// worktrees, fetching, and driving git bisect, unattended (no pager, editor
// or prompts) and with errors that say which command failed where.
//
// Commands that change a repository (checkout, bisect marks, worktrees,
// fetch) run to their end even when the caller's context is canceled: a
// git killed half way leaves an index.lock or a half-written BISECT_LOG
// behind, which breaks the next run. The caller sees the cancellation
// right after the command returns.
package git

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// Repo runs git in a repository.
type Repo struct {
	Dir string
	env []string // more environment for every command
}

// ErrGit is wrapped by errors of git commands that failed.
var ErrGit = errors.New("git failed")

// ErrNotRepo is wrapped when a directory is not in a git work tree, or a
// revision is not a commit in it.
var ErrNotRepo = errors.New("not in a git repository")

// git runs a command that only reads the repository: canceling ctx kills it.
func (r *Repo) git(ctx context.Context, args ...string) (string, error) {
	return r.run(ctx, ctx, args...)
}

// change runs a command that writes to the repository: it runs to its end
// whatever happens to ctx, whose cancellation is reported once it is done.
func (r *Repo) change(ctx context.Context, args ...string) (string, error) {
	out, err := r.run(context.WithoutCancel(ctx), ctx, args...)
	if err == nil && ctx.Err() != nil {
		return out, context.Cause(ctx)
	}
	return out, err
}

func (r *Repo) run(ctx, caller context.Context, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = r.Dir
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// No pager, no editor, no prompts: git runs unattended here.
	cmd.Env = append(append(os.Environ(), "GIT_PAGER=cat", "GIT_EDITOR=true", "GIT_TERMINAL_PROMPT=0", "LC_ALL=C"), r.env...)
	err := cmd.Run()
	out := strings.TrimSpace(stdout.String())
	if err != nil {
		if caller.Err() != nil {
			return out, context.Cause(caller)
		}
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = out
		}
		return out, fmt.Errorf("%w: git %s in %s: %w: %s", ErrGit, strings.Join(args, " "), r.Dir, err, msg)
	}
	return out, nil
}

// Open finds the work tree that contains dir and returns it with its git
// directory.
func Open(ctx context.Context, dir string) (*Repo, string, error) {
	r := &Repo{Dir: dir}
	top, err := r.TopLevel(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %s is not in a git work tree (%w)", ErrNotRepo, dir, err)
	}
	r.Dir = top
	gitDir, err := r.GitDir(ctx)
	if err != nil {
		return nil, "", err
	}
	return r, gitDir, nil
}

// Commit resolves a revision to a full commit id.
func (r *Repo) Commit(ctx context.Context, rev string) (string, error) {
	out, err := r.git(ctx, "rev-parse", "--verify", "--quiet", rev+"^{commit}")
	if err != nil || out == "" {
		return "", fmt.Errorf("%w: %q is not a commit in %s", ErrNotRepo, rev, r.Dir)
	}
	return out, nil
}

// GitDir returns the repository's git directory (absolute).
func (r *Repo) GitDir(ctx context.Context) (string, error) {
	out, err := r.git(ctx, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return "", fmt.Errorf("%s is not a git repository: %w", r.Dir, err)
	}
	return out, nil
}

// TopLevel returns the root of the work tree.
func (r *Repo) TopLevel(ctx context.Context) (string, error) {
	return r.git(ctx, "rev-parse", "--show-toplevel")
}

// IsAncestor reports whether a is an ancestor of b.
func (r *Repo) IsAncestor(ctx context.Context, a, b string) (bool, error) {
	_, err := r.git(ctx, "merge-base", "--is-ancestor", a, b)
	if err == nil {
		return true, nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		return false, nil
	}
	return false, err
}

// CheckClean fails when tracked files have changes, which a checkout would
// carry along or refuse to overwrite.
func (r *Repo) CheckClean(ctx context.Context) error {
	out, err := r.git(ctx, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return err
	}
	if out != "" {
		first, _, _ := strings.Cut(out, "\n")
		return fmt.Errorf("%s has uncommitted changes (%s …): commit or stash them first", r.Dir, strings.TrimSpace(first))
	}
	return nil
}

// Head returns the checked-out commit.
func (r *Repo) Head(ctx context.Context) (string, error) { return r.git(ctx, "rev-parse", "HEAD") }

// Subject returns a commit's subject line.
func (r *Repo) Subject(ctx context.Context, commit string) string {
	out, _ := r.git(ctx, "log", "-1", "--format=%s", commit)
	return out
}

// Parent returns a commit's first parent.
func (r *Repo) Parent(ctx context.Context, commit string) (string, error) {
	return r.Commit(ctx, commit+"^")
}

// Checkout checks out a commit (detached).
func (r *Repo) Checkout(ctx context.Context, commit string) error {
	_, err := r.change(ctx, "checkout", "--quiet", "--detach", commit)
	return err
}

// CheckoutBranch checks out a branch.
func (r *Repo) CheckoutBranch(ctx context.Context, branch string) error {
	_, err := r.change(ctx, "checkout", "--quiet", branch)
	return err
}

// Branch returns the checked-out branch's short name, "" when HEAD is
// detached.
func (r *Repo) Branch(ctx context.Context) string {
	out, err := r.git(ctx, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil {
		return ""
	}
	return out
}

// Tree returns a commit's tree id: the same content, however it was
// committed.
func (r *Repo) Tree(ctx context.Context, commit string) (string, error) {
	return r.git(ctx, "rev-parse", commit+"^{tree}")
}

// ChangedFiles lists the files that differ between the commits a and b,
// relative to the top of the tree; a renamed file is listed under both its
// names.
func (r *Repo) ChangedFiles(ctx context.Context, a, b string) ([]string, error) {
	out, err := r.git(ctx, "diff", "--name-only", "--no-renames", "-z", a, b)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, f := range strings.Split(out, "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files, nil
}

// Body returns a commit's whole message.
func (r *Repo) Body(ctx context.Context, commit string) string {
	out, _ := r.git(ctx, "log", "-1", "--format=%B", commit)
	return out
}

// Series lists the commits of base..tip oldest first along first parents,
// a patch series as it was applied.
func (r *Repo) Series(ctx context.Context, base, tip string) ([]string, error) {
	out, err := r.git(ctx, "rev-list", "--reverse", "--first-parent", base+".."+tip)
	if err != nil || out == "" {
		return nil, err
	}
	return strings.Fields(out), nil
}

// Am applies the patch (or mbox) file on the checked-out commit with git
// am --message-id, which keeps each mail's Message-ID in its commit
// message. The committer and its date are fixed (lpmbisect, the author's
// date), so the same patches on the same commit make the same commits
// every time. A patch that does not apply is aborted (git am --abort) and
// the error carries git's words.
func (r *Repo) Am(ctx context.Context, file string) error {
	am := &Repo{Dir: r.Dir, env: []string{"GIT_COMMITTER_NAME=lpmbisect", "GIT_COMMITTER_EMAIL=lpmbisect@localhost"}}
	_, err := am.change(ctx, "am", "--quiet", "--message-id", "--committer-date-is-author-date", file)
	if err != nil {
		r.change(context.WithoutCancel(ctx), "am", "--abort")
	}
	return err
}

// CountCommits counts the commits in good..bad.
func (r *Repo) CountCommits(ctx context.Context, good, bad string) (int, error) {
	out, err := r.git(ctx, "rev-list", "--count", good+".."+bad)
	if err != nil {
		return 0, err
	}
	var n int
	_, err = fmt.Sscan(out, &n)
	return n, err
}

// BisectInProgress reports whether a git bisect is in progress.
func (r *Repo) BisectInProgress(ctx context.Context) bool {
	dir, err := r.GitDir(ctx)
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(dir, "BISECT_START"))
	return err == nil
}

var bisectMarkRe = regexp.MustCompile(`^# (bad|good|new|old): \[([0-9a-f]{40})\]`)

// BisectEndpoints returns the commits the bisection in progress started
// from: the first marked bad (new) and the first marked good (old) in its
// log. Later marks move git's range, not the endpoints a step is measured
// against. Either is "" when not marked yet.
func (r *Repo) BisectEndpoints(ctx context.Context) (bad, good string, err error) {
	dir, err := r.GitDir(ctx)
	if err != nil {
		return "", "", err
	}
	data, err := os.ReadFile(filepath.Join(dir, "BISECT_LOG"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		m := bisectMarkRe.FindStringSubmatch(line)
		switch {
		case m == nil:
		case (m[1] == "bad" || m[1] == "new") && bad == "":
			bad = m[2]
		case (m[1] == "good" || m[1] == "old") && good == "":
			good = m[2]
		}
	}
	return bad, good, nil
}

// BisectOutcome is where git bisect stands after a command.
type BisectOutcome struct {
	// FirstBad is set when git named the first bad commit.
	FirstBad string
	// Candidates is set when only skipped commits are left: the first bad
	// commit is one of these.
	Candidates []string
	Output     string
}

// Done reports whether the bisection ended.
func (o BisectOutcome) Done() bool { return o.FirstBad != "" || len(o.Candidates) > 0 }

var (
	firstBadRe = regexp.MustCompile(`(?m)^([0-9a-f]{40}) is the first bad commit`)
	shaLineRe  = regexp.MustCompile(`(?m)^([0-9a-f]{40})$`)
)

// Bisect runs a git bisect subcommand (start, good, bad, skip, reset, log)
// and reads where the bisection stands from its output.
func (r *Repo) Bisect(ctx context.Context, args ...string) (BisectOutcome, error) {
	run := r.change
	if len(args) > 0 && args[0] == "log" {
		run = r.git
	}
	out, err := run(ctx, append([]string{"bisect"}, args...)...)
	o := BisectOutcome{Output: out}
	if m := firstBadRe.FindStringSubmatch(out); m != nil {
		o.FirstBad = m[1]
		return o, nil
	}
	if strings.Contains(out, "only 'skip'ped commits left") {
		for _, m := range shaLineRe.FindAllStringSubmatch(out, -1) {
			o.Candidates = append(o.Candidates, m[1])
		}
		// git exits with an error here, though the bisection is over.
		return o, nil
	}
	return o, err
}

// AddWorktree creates (or moves) a detached worktree at dir on commit.
func (r *Repo) AddWorktree(ctx context.Context, dir, commit string) error {
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		wt := &Repo{Dir: dir}
		return wt.Checkout(ctx, commit)
	}
	r.change(ctx, "worktree", "prune")
	_, err := r.change(ctx, "worktree", "add", "--quiet", "--detach", dir, commit)
	return err
}

// RemoveWorktree removes a worktree made by AddWorktree.
func (r *Repo) RemoveWorktree(ctx context.Context, dir string) error {
	_, err := r.change(ctx, "worktree", "remove", "--force", dir)
	return err
}

// Remotes lists the repository's remotes.
func (r *Repo) Remotes(ctx context.Context) ([]string, error) {
	out, err := r.git(ctx, "remote")
	if err != nil || out == "" {
		return nil, err
	}
	return strings.Fields(out), nil
}

// Fetch fetches a remote's branches.
func (r *Repo) Fetch(ctx context.Context, remote string) error {
	_, err := r.change(ctx, "fetch", "--quiet", "--prune", remote)
	return err
}

// Tip returns the commit a nightly follows for branch: the branch's
// upstream after fetching it (or origin/branch when the branch has no
// upstream but origin has it), else the local branch. fetched names the
// remote fetched ("" for none).
func (r *Repo) Tip(ctx context.Context, branch string) (commit, ref, fetched string, err error) {
	ref = branch
	up, uerr := r.git(ctx, "rev-parse", "--abbrev-ref", "--symbolic-full-name", branch+"@{upstream}")
	remote := ""
	switch {
	case uerr == nil && up != "":
		remote, _, _ = strings.Cut(up, "/")
		ref = up
	default:
		remotes, err := r.Remotes(ctx)
		if err != nil {
			return "", "", "", err
		}
		for _, rm := range remotes {
			if rm == "origin" {
				remote, ref = "origin", "origin/"+branch
			}
		}
	}
	if remote != "" {
		if err := r.Fetch(ctx, remote); err != nil {
			return "", "", "", err
		}
		if _, err := r.Commit(ctx, ref); err != nil {
			ref = branch // the remote lacks the branch: follow the local one
		}
	}
	commit, err = r.Commit(ctx, ref)
	return commit, ref, remote, err
}

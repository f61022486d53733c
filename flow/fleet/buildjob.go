package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/lpmbisect/lpmbisect/host/kbuild"
	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/internal/git"
	"github.com/lpmbisect/lpmbisect/internal/logtail"
	"github.com/lpmbisect/lpmbisect/internal/words"
)

// Tree is a source tree a build worker knows by name.
type Tree struct {
	// Dir is a git repository on the worker (a clone the worker owns).
	Dir string
	// Remote, when set, is fetched (a remote's name or a URL) when a
	// job's commit is not in Dir yet.
	Remote string
}

// BuildConfig is how a worker builds a kernel for one configuration name:
// package build's options, from the worker's own configuration.
type BuildConfig struct {
	// Base is a make target ending in "config" or a configuration file
	// (default kbuild.defaultBase).
	Base string
	// Fragments are config fragment files ("builtin" is
	// kbuild.DefaultFragment); nil means the default fragment.
	Fragments []string
	Make      string   // default "make"
	MakeFlags []string // CC=clang, LLVM=1, …
	Jobs      int      // make -j (0: one per CPU)
	Target    string   // default bzImage
}

// ErrTreeSyntax is wrapped by ParseTrees' error for a tree not given as
// NAME=DIR.
var ErrTreeSyntax = errors.New("give NAME=DIR")

// ParseTrees parses the trees a worker's build jobs may name, each given as
// NAME=DIR: DIR (made absolute) is a git tree whose origin is fetched for
// commits it lacks. Its errors start with the tree as given.
func ParseTrees(specs []string) (map[string]Tree, error) {
	trees := map[string]Tree{}
	for _, spec := range specs {
		name, dir, ok := strings.Cut(spec, "=")
		if !ok || name == "" || dir == "" {
			return nil, fmt.Errorf("%q: %w", spec, ErrTreeSyntax)
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		trees[name] = Tree{Dir: abs, Remote: "origin"}
	}
	return trees, nil
}

// maxBuildLog bounds the end of the build log a build result carries.
const maxBuildLog = 64 << 10

type buildWorker struct {
	river.WorkerDefaults[buildArgs]
	rw *runningWorker
}

// Timeout implements river.Worker: a build's stuck time is its job's.
func (w *buildWorker) Timeout(job *river.Job[buildArgs]) time.Duration {
	return stuckAfter(job.Args.StuckAfterMS, defaultBuildStuckAfter)
}

// Work implements river.Worker: check out the commit in the worker's own
// worktree of the tree, build it with the named configuration (make keeps
// the build directory between jobs, so the next commit of a bisection
// builds in seconds), store the image as a blob and the result with the
// job's completion. A build that fails (the compiler's error) is a result,
// not a failed job: bisection skips such commits.
func (w *buildWorker) Work(ctx context.Context, job *river.Job[buildArgs]) error {
	rw := w.rw
	a := job.Args
	tree, cfg, err := rw.checkBuildJob(job)
	if err != nil {
		return err
	}
	logEvent(rw.Log, "job start", "job", job.ID, "kind", job.Kind, "queue", job.Queue, "attempt", job.Attempt, "tree", a.Tree, "commit", words.ShortHash(a.Commit), "config", a.Config)
	rw.notify(ctx, "start", job.ID)

	base := filepath.Join(rw.CacheDir, "builds", a.Tree+"-"+a.Config)
	src := filepath.Join(base, "src")
	if err := rw.checkOut(ctx, job, tree, base, src); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return rw.interrupted(ctx, job.JobRow, "build")
	}
	r, err := rw.build(ctx, job, cfg, base, src)
	if err != nil {
		return err
	}
	if err := rw.storeBuild(ctx, job, r); err != nil {
		return err
	}
	logEvent(rw.Log, "build done", "job", job.ID, "attempt", job.Attempt, "tree", a.Tree, "commit", words.ShortHash(a.Commit), "config", a.Config,
		"ok", r.OK, "image", words.ShortHash(r.ImageSHA256), "took", r.Duration)
	return nil
}

// checkBuildJob refuses a build job this worker cannot run (invalid
// arguments, a queue of boots, a tree or configuration it does not know)
// and returns the job's tree and configuration.
func (rw *runningWorker) checkBuildJob(job *river.Job[buildArgs]) (Tree, BuildConfig, error) {
	a := job.Args
	if err := a.Validate(); err != nil {
		return Tree{}, BuildConfig{}, rw.refuse(job.JobRow, err)
	}
	if q := rw.queues[job.Queue]; !q.Build() || q.Name == "" {
		return Tree{}, BuildConfig{}, rw.refuse(job.JobRow, &ArgsError{Kind: kindBuild, Field: "queue", Err: fmt.Errorf("%w: a build on queue %s, whose jobs are boots", ErrBadArgs, job.Queue)})
	}
	tree, ok := rw.Trees[a.Tree]
	if !ok {
		return Tree{}, BuildConfig{}, rw.refuse(job.JobRow, &ArgsError{Kind: kindBuild, Field: "tree", Err: fmt.Errorf("%w: worker %s knows no tree %q (it knows %s)", ErrBadArgs, rw.Name, a.Tree, strings.Join(slices.Sorted(maps.Keys(rw.Trees)), ", "))})
	}
	cfg, ok := rw.Builds[a.Config]
	if !ok {
		return Tree{}, BuildConfig{}, rw.refuse(job.JobRow, &ArgsError{Kind: kindBuild, Field: "config", Err: fmt.Errorf("%w: worker %s knows no build configuration %q (it knows %s)", ErrBadArgs, rw.Name, a.Config, strings.Join(slices.Sorted(maps.Keys(rw.Builds)), ", "))})
	}
	return tree, cfg, nil
}

// checkOut checks the job's commit out of tree into src, a worktree under
// base, fetching the tree's remote first when the commit is not there.
func (rw *runningWorker) checkOut(ctx context.Context, job *river.Job[buildArgs], tree Tree, base, src string) error {
	a := job.Args
	repo := &git.Repo{Dir: tree.Dir}
	if _, err := repo.Commit(ctx, a.Commit); err != nil && tree.Remote != "" {
		if err := repo.Fetch(ctx, tree.Remote); err != nil {
			return fmt.Errorf("fetch %s into tree %s: %w", tree.Remote, a.Tree, err)
		}
	}
	if _, err := repo.Commit(ctx, a.Commit); err != nil {
		return rw.refuse(job.JobRow, &ArgsError{Kind: kindBuild, Field: "commit", Err: fmt.Errorf("%w: %s is not a commit of tree %s on worker %s", ErrBadArgs, a.Commit, a.Tree, rw.Name)})
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return fmt.Errorf("build directory: %w", err)
	}
	if err := repo.AddWorktree(ctx, src, a.Commit); err != nil {
		return fmt.Errorf("check out %s of tree %s: %w", words.ShortHash(a.Commit), a.Tree, err)
	}
	return nil
}

// build builds src with cfg in base/out and returns the result: a build
// that fails is one (with the compiler's error and the log's end); a built
// image is stored as a blob.
func (rw *runningWorker) build(ctx context.Context, job *river.Job[buildArgs], cfg BuildConfig, base, src string) (buildResult, error) {
	a := job.Args
	frags, err := kbuild.ReadFragments(cfg.Fragments)
	if err != nil {
		return buildResult{}, fmt.Errorf("build configuration %s: %w", a.Config, err)
	}
	start := time.Now()
	res, err := kbuild.Build(ctx, kbuild.Options{Src: src, Dir: filepath.Join(base, "out"), Base: cfg.Base, Fragments: frags,
		Make: cfg.Make, MakeFlags: cfg.MakeFlags, Jobs: cfg.Jobs, Target: cfg.Target})
	r := buildResult{Tree: a.Tree, Commit: a.Commit, Config: a.Config, Duration: time.Since(start)}
	switch {
	case ctx.Err() != nil:
		return r, rw.interrupted(ctx, job.JobRow, "build")
	case errors.Is(err, kbuild.ErrBuildFailed):
		r.Detail = err.Error()
		logTail, _ := logtail.Read(kbuild.LogPath(filepath.Join(base, "out")), maxBuildLog)
		if res != nil && res.Log != "" {
			logTail, _ = logtail.Read(res.Log, maxBuildLog)
		}
		r.Log = logTail
	case err != nil:
		return r, fmt.Errorf("build %s of tree %s: %w", words.ShortHash(a.Commit), a.Tree, err)
	default:
		r.OK = true
		r.Compiler, r.ConfigHash = res.Compiler, res.Hash
		for _, d := range res.Dropped {
			r.Dropped = append(r.Dropped, d.String())
		}
		if k, err := kernel.Resolve(res.Image, rw.CacheDir); err == nil {
			r.Release = k.Release
		}
		r.Log, _ = logtail.Read(res.Log, maxBuildLog)
		sum, _, err := rw.db.putBlob(ctx, res.Image)
		if err != nil {
			return r, fmt.Errorf("store image of %s: %w", words.ShortHash(a.Commit), err)
		}
		r.ImageSHA256 = sum
	}
	return r, nil
}

// storeBuild stores the build's result with the job's completion, in one
// transaction, and tells the waiting clients.
func (rw *runningWorker) storeBuild(ctx context.Context, job *river.Job[buildArgs], r buildResult) error {
	err := rw.db.retry(rw.storing(ctx), rw.Log, "store build result", func(ctx context.Context) error {
		tx, err := rw.db.pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, `
INSERT INTO lpmbisect_fleet_build_results (job_id, attempt, worker, tree, commit, config, ok, detail, image_sha256, release,
	compiler, config_hash, dropped, log_tail, duration_ns)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
ON CONFLICT (job_id, attempt) DO NOTHING`,
			job.ID, job.Attempt, rw.Name, r.Tree, r.Commit, r.Config, r.OK, r.Detail, r.ImageSHA256, r.Release,
			r.Compiler, r.ConfigHash, nonNil(r.Dropped), nonNilBytes(r.Log), r.Duration.Nanoseconds()); err != nil {
			return err
		}
		if err := completeIn(job)(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", notifyChannel, fmt.Sprintf("done %d", job.ID)); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
	if err != nil {
		return rw.db.errorf(err, "store result of job %d", job.ID)
	}
	return nil
}

// buildResult is a finished build, as stored and as the client reads it.
type buildResult struct {
	Tree, Commit, Config string
	OK                   bool
	Detail               string
	ImageSHA256          string
	Release              string
	Compiler, ConfigHash string
	Dropped              []string
	Log                  []byte
	Duration             time.Duration
}

func nonNilBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

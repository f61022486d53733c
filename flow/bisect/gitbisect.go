package bisect

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/host/kbuild"
	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/internal/cachefile"
	"github.com/lpmbisect/lpmbisect/internal/git"
	"github.com/lpmbisect/lpmbisect/internal/words"
)

// gitBisect drives git bisect over a repository: it builds and measures both
// endpoints first and refuses to start unless they differ, then builds,
// measures and classifies each commit git bisect checks out (skipping those
// that do not build or boot or stay UNKNOWN), re-checks the culprit against
// its parent, and resets the repository to where it was.
//
// Interrupted, it leaves the git bisection in progress; run again with the
// same state, it resets it and starts over, replaying every decided step
// from the state without building or measuring it again.
type gitBisect struct {
	Bisection
	Repo      *git.Repo
	Good, Bad string // full commit ids
	Builder   kbuild.Builder
	BuildDir  string
	// Resolve resolves kernel inputs (kernel.Resolve with the cache).
	Resolve func(string) (*kernel.Kernel, error)
}

// Run runs the bisection to its end. On an error other than an interruption
// it resets git bisect; interrupted, it leaves it in progress to resume.
func (g *gitBisect) Run(ctx context.Context) (res *campaign.Result, err error) {
	s := g.State
	if s.Result != nil {
		g.logf("this bisection finished before: its result is in %s", s.Path())
		return s.Result, nil
	}
	if g.Repo.BisectInProgress(ctx) {
		if !s.Started {
			return nil, fmt.Errorf("a git bisect not started by lpmbisect is in progress in %s (finish it, or run git bisect reset)", g.Repo.Dir)
		}
		g.logf("resuming: restarting git bisect; %d decided steps are replayed from %s", len(s.Steps), s.Path())
		if _, err := g.Repo.Bisect(ctx, "reset"); err != nil {
			return nil, err
		}
		s.Started = false
	}
	if err := g.Repo.CheckClean(ctx); err != nil {
		return nil, err
	}
	if ok, err := g.Repo.IsAncestor(ctx, g.Good, g.Bad); err != nil {
		return nil, err
	} else if !ok {
		return nil, fmt.Errorf("good %s is not an ancestor of bad %s (the good commit must be the older one; to find an improvement keep the order and bisect for an improvement)", words.ShortHash(g.Good), words.ShortHash(g.Bad))
	}
	n, err := g.Repo.CountCommits(ctx, g.Good, g.Bad)
	if err != nil {
		return nil, err
	}
	g.logf("bisecting %d commits %s..%s in %s (state: %s)", n, words.ShortHash(g.Good), words.ShortHash(g.Bad), g.Repo.Dir, s.Dir())

	// git bisect start records where HEAD was, so reset returns there
	// even though the endpoints are checked out to be built.
	if _, err := g.Repo.Bisect(ctx, "start"); err != nil {
		return nil, err
	}
	s.Started = true
	defer func() {
		if err != nil && ctx.Err() == nil && s.Started {
			g.reset(context.WithoutCancel(ctx))
		}
	}()
	if err := s.Save(); err != nil {
		return nil, err
	}
	good, err := g.endpoint(ctx, "good", g.Good)
	if err != nil {
		return nil, err
	}
	bad, err := g.endpoint(ctx, "bad", g.Bad)
	if err != nil {
		return nil, err
	}
	if err := g.setEndpoints(ctx, good, bad); err != nil {
		return nil, err
	}
	if _, err := g.Repo.Bisect(ctx, "bad", g.Bad); err != nil {
		return nil, err
	}
	o, err := g.Repo.Bisect(ctx, "good", g.Good)
	if err != nil {
		return nil, err
	}
	for !o.Done() {
		head, err := g.Repo.Head(ctx)
		if err != nil {
			return nil, err
		}
		class, err := g.step(ctx, head)
		if err != nil {
			return nil, err
		}
		if o, err = g.Repo.Bisect(ctx, class.String()); err != nil {
			return nil, err
		}
	}
	res = &campaign.Result{Range: o.Candidates}
	if o.FirstBad != "" {
		res.FirstBad = o.FirstBad
		res.Subject = g.Repo.Subject(ctx, o.FirstBad)
		if err := g.recheckCulprit(ctx, res); err != nil {
			return nil, err
		}
	}
	if log, err := g.Repo.Bisect(ctx, "log"); err == nil {
		cachefile.WriteBytes(filepath.Join(s.Dir(), "git-bisect.log"), []byte(log.Output+"\n"))
	}
	g.reset(ctx)
	return g.finish(res)
}

// reset ends the git bisection lpmbisect started.
func (g *gitBisect) reset(ctx context.Context) {
	if _, err := g.Repo.Bisect(ctx, "reset"); err != nil {
		g.logf("warning: %v", err)
		return
	}
	g.State.Started = false
	g.State.Save()
}

// endpoint builds an endpoint, which must build.
func (g *gitBisect) endpoint(ctx context.Context, name, commit string) (campaign.Candidate, error) {
	b, err := g.kernelFor(ctx, commit)
	if err != nil {
		return campaign.Candidate{}, err
	}
	if b.Failed != "" {
		return campaign.Candidate{}, fmt.Errorf("%w: the %s endpoint %s does not build: %s", ErrEndpointBroken, name, words.ShortHash(commit), b.Failed)
	}
	return campaign.CandidateOf(b, name+" "+words.ShortHash(commit), commit), nil
}

// kernelFor builds commit, checking it out first if needed.
func (g *gitBisect) kernelFor(ctx context.Context, commit string) (*kbuild.Built, error) {
	if b := g.State.Kernels[commit]; b.Stands() {
		return b, nil
	}
	head, err := g.Repo.Head(ctx)
	if err != nil {
		return nil, err
	}
	if head != commit {
		if err := g.Repo.Checkout(ctx, commit); err != nil {
			return nil, err
		}
	}
	return campaign.BuildCommit(ctx, g.State, g.Builder, g.Repo.Dir, g.BuildDir, commit, g.Resolve, g.Log)
}

// step decides the checked-out commit, from the state if it was decided.
func (g *gitBisect) step(ctx context.Context, commit string) (campaign.Class, error) {
	if st, ok := g.State.StepFor(commit, 0); ok {
		g.logf("step for %s replayed from the state: %s", words.ShortHash(commit), st.Verdict.Class)
		return st.Verdict.Class, nil
	}
	st := campaign.Step{Commit: commit, Subject: g.Repo.Subject(ctx, commit)}
	b, err := g.kernelFor(ctx, commit)
	if err != nil {
		return campaign.Skip, err
	}
	if b.Failed != "" {
		st.Time = time.Now()
		st.Verdict = campaign.Verdict{Class: campaign.Skip, Reason: "build failed: " + b.Failed}
		return campaign.Skip, g.State.AddStep(st, g.Log)
	}
	return g.classify(ctx, st, campaign.CandidateOf(b, words.ShortHash(commit), commit))
}

// recheckCulprit re-checks the culprit against its first parent.
func (g *gitBisect) recheckCulprit(ctx context.Context, res *campaign.Result) error {
	parent, err := g.Repo.Parent(ctx, res.FirstBad)
	if err != nil {
		return err
	}
	res.Parent = parent
	pb, err := g.kernelFor(ctx, parent)
	if err != nil {
		return err
	}
	cb, err := g.kernelFor(ctx, res.FirstBad)
	if err != nil {
		return err
	}
	if pb.Failed != "" || cb.Failed != "" {
		return nil
	}
	if pb.Image == cb.Image {
		res.Recheck = campaign.SameImageRecheck(cb.Image)
		return nil
	}
	rc, err := g.recheck(ctx, campaign.CandidateOf(pb, "parent "+words.ShortHash(parent), parent), campaign.CandidateOf(cb, "culprit "+words.ShortHash(res.FirstBad), res.FirstBad))
	if err != nil {
		return err
	}
	res.Recheck = rc
	return nil
}

// ErrEndpointBroken is wrapped when an endpoint does not build.
var ErrEndpointBroken = errors.New("broken endpoint")

package bisect

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/host/kbuild"
	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/internal/git"
	"github.com/lpmbisect/lpmbisect/internal/words"
)

// Endpoint is an endpoint of a git bisect run step: a prebuilt kernel, or a
// commit to build.
type Endpoint struct {
	Kernel string // anything kernel.Resolve accepts, or ""
	Commit string // a full commit id, when Kernel is ""
}

// runStep is one step of git bisect run: classify the checked-out tree
// against the endpoints. The endpoints are measured once, the first time,
// and found in the state (by image hash) by every later step. Endpoints
// given as commits are built in a separate worktree (<state>/worktree), so
// the tree git bisect checked out is never disturbed.
type runStep struct {
	Bisection
	Repo      *git.Repo
	Src       string // the checked-out tree to build (the work tree's root)
	Good, Bad Endpoint
	Builder   kbuild.Builder
	BuildDir  string
	Resolve   func(string) (*kernel.Kernel, error)
}

// Run classifies the checked-out commit. A commit that does not build or
// boot, or stays UNKNOWN, is Skip; an error means the bisection must stop.
func (r *runStep) Run(ctx context.Context) (campaign.Verdict, error) {
	head, err := r.Repo.Head(ctx)
	if err != nil {
		return campaign.Verdict{}, err
	}
	good, err := r.endpoint(ctx, "good", r.Good)
	if err != nil {
		return campaign.Verdict{}, err
	}
	bad, err := r.endpoint(ctx, "bad", r.Bad)
	if err != nil {
		return campaign.Verdict{}, err
	}
	r.cleanWorktree(ctx)
	if err := r.setEndpoints(ctx, good, bad); err != nil {
		return campaign.Verdict{}, err
	}
	if st, ok := r.State.StepFor(head, 0); ok {
		r.logf("step for %s replayed from the state: %s", words.ShortHash(head), st.Verdict.Class)
		return st.Verdict, nil
	}
	st := campaign.Step{Commit: head, Subject: r.Repo.Subject(ctx, head)}
	b, err := campaign.BuildCommit(ctx, r.State, r.Builder, r.Src, r.BuildDir, head, r.Resolve, r.Log)
	if err != nil {
		return campaign.Verdict{}, err
	}
	if b.Failed != "" {
		st.Time = time.Now()
		st.Verdict = campaign.Verdict{Class: campaign.Skip, Reason: "build failed: " + b.Failed}
		return st.Verdict, r.State.AddStep(st, r.Log)
	}
	if _, err := r.classify(ctx, st, campaign.CandidateOf(b, words.ShortHash(head), head)); err != nil {
		return campaign.Verdict{}, err
	}
	last := r.State.Steps[len(r.State.Steps)-1]
	return last.Verdict, nil
}

// endpoint resolves an endpoint to a kernel, building a commit in the
// worktree.
func (r *runStep) endpoint(ctx context.Context, name string, e Endpoint) (campaign.Candidate, error) {
	if e.Kernel != "" {
		k := campaign.Candidate{Input: e.Kernel, Label: name + " " + filepath.Base(e.Kernel)}
		return k, nil
	}
	if b := r.State.Kernels[e.Commit]; b.Stands() && b.Failed == "" {
		return campaign.CandidateOf(b, name+" "+words.ShortHash(e.Commit), e.Commit), nil
	}
	wt := filepath.Join(r.State.Dir(), "worktree")
	r.logf("building the %s endpoint %s in %s", name, words.ShortHash(e.Commit), wt)
	if err := r.Repo.AddWorktree(ctx, wt, e.Commit); err != nil {
		return campaign.Candidate{}, err
	}
	b, err := campaign.BuildCommit(ctx, r.State, r.Builder, wt, filepath.Join(r.State.Dir(), "worktree-build"), e.Commit, r.Resolve, r.Log)
	if err != nil {
		return campaign.Candidate{}, err
	}
	if b.Failed != "" {
		return campaign.Candidate{}, fmt.Errorf("%w: the %s endpoint %s does not build: %s", ErrEndpointBroken, name, words.ShortHash(e.Commit), b.Failed)
	}
	return campaign.CandidateOf(b, name+" "+words.ShortHash(e.Commit), e.Commit), nil
}

// cleanWorktree removes the endpoints' worktree and build once both are
// built: their kernels are kept in the state.
func (r *runStep) cleanWorktree(ctx context.Context) {
	wt := filepath.Join(r.State.Dir(), "worktree")
	if _, err := os.Stat(wt); err == nil {
		if err := r.Repo.RemoveWorktree(ctx, wt); err != nil {
			r.logf("warning: %v", err)
		}
	}
	os.RemoveAll(filepath.Join(r.State.Dir(), "worktree-build"))
}

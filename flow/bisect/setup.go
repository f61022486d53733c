package bisect

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/internal/git"
)

// Bisector runs bisections with a campaign's set-up (how kernels are
// measured, judged and built): over a git range (Git, Search), over a list
// of images (Images), or one step of git bisect run (Step).
type Bisector struct{ *campaign.Setup }

// NewBisector returns the bisector whose kernels m boots, with o's
// statistics calibrated for m's host (campaign.NewSetup).
func NewBisector(ctx context.Context, m *measure.Setup, o campaign.Options) (*Bisector, error) {
	s, err := campaign.NewSetup(ctx, m, o)
	if err != nil {
		return nil, err
	}
	return &Bisector{s}, nil
}

// Git bisects good..bad (revisions) of the repository that holds dir,
// with its state in stateDir ("": <git-dir>/lpmbisect; a resumed run goes
// on from it) and builds in buildDir ("": BuildDirFor).
func (s *Bisector) Git(ctx context.Context, dir, goodRev, badRev, stateDir, buildDir string) (*campaign.Result, *campaign.State, error) {
	repo, gitDir, err := git.Open(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	good, err := repo.Commit(ctx, goodRev)
	if err != nil {
		return nil, nil, fmt.Errorf("good: %w", err)
	}
	bad, err := repo.Commit(ctx, badRev)
	if err != nil {
		return nil, nil, fmt.Errorf("bad: %w", err)
	}
	st, err := s.Bench.OpenState(orDefault(stateDir, filepath.Join(gitDir, "lpmbisect")), campaign.State{Kind: campaign.KindGit, Repo: repo.Dir, Good: good, Bad: bad})
	if err != nil {
		return nil, nil, err
	}
	gb := &gitBisect{
		Bisection: Bisection{Bench: s.Bench, State: st, RecheckBoots: s.RecheckBoots, Log: s.Log},
		Repo:      repo, Good: good, Bad: bad, Builder: s.Builder(), BuildDir: campaign.BuildDirFor(repo.Dir, buildDir), Resolve: s.Bench.Resolve,
	}
	res, err := gb.Run(ctx)
	if err != nil && ctx.Err() != nil && s.Log != nil {
		s.Log.Printf("interrupted: run the same command again to resume from %s (or git bisect reset to abandon)", st.Path())
	}
	return res, st, err
}

// Images searches the ordered list of prebuilt kernels that args give (see
// ExpandImages), the first good, the last bad, with its state in stateDir
// ("": <cache>/bisect).
func (s *Bisector) Images(ctx context.Context, args []string, stateDir string) (*campaign.Result, *campaign.State, error) {
	images, err := ExpandImages(args)
	if err != nil {
		return nil, nil, err
	}
	for i, p := range images {
		if images[i], err = filepath.Abs(p); err != nil {
			return nil, nil, err
		}
	}
	if len(images) < 2 {
		return nil, nil, fmt.Errorf("%w: %d kernel given; a bisection needs at least two (the first good, the last bad)", ErrTooFewImages, len(images))
	}
	cache := s.Measure.CacheDir
	st, err := s.Bench.OpenState(orDefault(stateDir, filepath.Join(cache, "bisect")), campaign.State{Kind: campaign.KindImages, Images: images, Good: images[0], Bad: images[len(images)-1]})
	if err != nil {
		return nil, nil, err
	}
	ib := &imagesBisect{
		Bisection: Bisection{Bench: s.Bench, State: st, RecheckBoots: s.RecheckBoots, Log: s.Log},
		Images:    images,
	}
	res, err := ib.Run(ctx)
	return res, st, err
}

// Target is what a bisection searches: Images in order (see Images) or,
// without them, the revisions Good..Bad of the repository that holds Repo
// (see Git).
type Target struct {
	Images          []string
	Repo, Good, Bad string
}

// Search bisects t, with its state in stateDir and, for a repository, its
// builds in buildDir (see Images and Git for their defaults).
func (s *Bisector) Search(ctx context.Context, t Target, stateDir, buildDir string) (*campaign.Result, *campaign.State, error) {
	if len(t.Images) > 0 {
		return s.Images(ctx, t.Images, stateDir)
	}
	return s.Git(ctx, t.Repo, t.Good, t.Bad, stateDir, buildDir)
}

// Step classifies the commit checked out in the work tree that holds dir,
// for git bisect run, against the endpoints good and bad (kernels or
// revisions; "" for the commits git bisect was started with), with its
// state in stateDir ("": <git-dir>/lpmbisect).
func (s *Bisector) Step(ctx context.Context, dir, goodArg, badArg, stateDir, buildDir string) (campaign.Verdict, error) {
	repo, gitDir, err := git.Open(ctx, dir)
	if err != nil {
		return campaign.Verdict{}, err
	}
	startBad, startGood, err := repo.BisectEndpoints(ctx)
	if err != nil {
		return campaign.Verdict{}, err
	}
	good, err := endpoint(ctx, repo, "good", goodArg, startGood)
	if err != nil {
		return campaign.Verdict{}, err
	}
	bad, err := endpoint(ctx, repo, "bad", badArg, startBad)
	if err != nil {
		return campaign.Verdict{}, err
	}
	st, err := s.Bench.OpenState(orDefault(stateDir, filepath.Join(gitDir, "lpmbisect")), campaign.State{Kind: campaign.KindRun, Repo: repo.Dir, Good: good.Kernel + good.Commit, Bad: bad.Kernel + bad.Commit})
	if err != nil {
		return campaign.Verdict{}, err
	}
	step := &runStep{
		Bisection: Bisection{Bench: s.Bench, State: st, Log: s.Log},
		Repo:      repo, Src: repo.Dir, Good: good, Bad: bad,
		Builder: s.Builder(), BuildDir: campaign.BuildDirFor(repo.Dir, buildDir), Resolve: s.Bench.Resolve,
	}
	return step.Run(ctx)
}

// ErrTooFewImages is wrapped when a bisection over kernels gets fewer than
// two.
var ErrTooFewImages = errors.New("too few kernels")

// ErrNoEndpoint is wrapped when a git bisect run step has no good or bad
// endpoint: none given, and none in git bisect's log.
var ErrNoEndpoint = errors.New("no endpoint")

// endpoint reads a step's good or bad endpoint: a kernel on disk, a
// revision, or, when value is "", the commit git bisect was started with
// (fromLog).
func endpoint(ctx context.Context, repo *git.Repo, name, value, fromLog string) (Endpoint, error) {
	if value == "" {
		if fromLog == "" {
			return Endpoint{}, fmt.Errorf("%w: no %s endpoint given, and git bisect was started without a %s commit", ErrNoEndpoint, name, name)
		}
		return Endpoint{Commit: fromLog}, nil
	}
	if isKernelEndpoint(value) {
		abs, err := filepath.Abs(value)
		return Endpoint{Kernel: abs}, err
	}
	commit, err := repo.Commit(ctx, value)
	if err != nil {
		return Endpoint{}, fmt.Errorf("%w: %s endpoint %s is neither a kernel file nor a commit: %w", ErrNoEndpoint, name, value, err)
	}
	return Endpoint{Commit: commit}, nil
}

// isKernelEndpoint says whether an endpoint's value names a kernel on
// disk rather than a revision.
func isKernelEndpoint(value string) bool {
	_, err := os.Stat(value)
	return value != "" && err == nil
}

// KernelEndpoints returns those of a step's endpoint values that are
// kernels on disk (as the step reads them), which a run can boot before
// anything is built: to probe KVM with, when the accelerator is auto.
func KernelEndpoints(values ...string) []string {
	var out []string
	for _, v := range values {
		if isKernelEndpoint(v) {
			out = append(out, v)
		}
	}
	return out
}

func orDefault(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

package bisect

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/lpmbisect/lpmbisect/config"
	"github.com/lpmbisect/lpmbisect/host/kbuild"
	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/internal/git"
)

// Setup is what every bisection is made from: how kernels are measured and
// judged, and how a commit is built. The CLI's bisect and bisect-run fill
// it from their flags; nightly tracking fills it from a series to bisect a
// change point.
type Setup struct {
	Bench *Bench
	// Measure is how Bench boots kernels.
	Measure *measure.Setup
	// BuildCommand, when set, builds each commit with this shell command
	// (see CommandBuilder); otherwise Build is used (lpmbisect build).
	BuildCommand string
	Build        kbuild.Options
	// RemoteBuilder, when set, builds each commit instead of BuildCommand
	// and Build: elsewhere, on a fleet's build queue (fleet.Builder).
	RemoteBuilder kbuild.Builder
	// RecheckBoots is how many boots the re-check adds to the culprit and
	// its parent (0: no re-check).
	RecheckBoots int
	Log          *log.Logger
}

// NewBench returns the bench of a bisection whose kernels are booted with m
// and judged with j: Boots boots per look (0: the fewest with which one
// look can decide), at most MaxBoots per kernel while UNKNOWN; reverse
// looks for an improvement. Results are kept apart by m's measurement
// parameters (measure.ParamsKey).
func NewBench(m *measure.Setup, j Judge, boots, maxBoots int, reverse bool) (*Bench, error) {
	if boots < 0 || maxBoots < 1 {
		return nil, fmt.Errorf("boots per look %d and at most %d per kernel: must be positive", boots, maxBoots)
	}
	params, err := m.ParamsKey()
	if err != nil {
		return nil, err
	}
	b := &Bench{
		Judge:    j,
		Measurer: &VMMeasurer{Setup: m, Log: m.Log},
		Resolve:  func(in string) (*kernel.Kernel, error) { return kernel.Resolve(in, m.CacheDir) },
		Boots:    boots, MaxBoots: maxBoots, Reverse: reverse, Params: params, Log: m.Log,
	}
	if err := b.CheckLevels(); err != nil {
		return nil, err
	}
	return b, nil
}

// Options say how a bisection judges its kernels and how many boots it
// spends on them.
type Options struct {
	Judge Judge
	// Auto takes each benchmark's minimum effect from this host's
	// calibration (at least Judge.MinEffectPct); Statistical judges
	// deterministic rows with the significance test too (see
	// calibrate.Use).
	Auto, Statistical bool
	// Boots per look (0: the fewest with which one look can decide, see
	// Judge.Calibrate), at most MaxBoots per kernel while UNKNOWN.
	Boots, MaxBoots int
	// Reverse looks for an improvement.
	Reverse bool
	// RecheckBoots is Setup.RecheckBoots.
	RecheckBoots int
}

// FromConfig returns the options that a configuration's [stats],
// [measure] and [bisect] sections give; auto takes the minimum effects
// from calibration (--min-effect auto).
func FromConfig(f *config.File, auto bool) Options {
	return Options{Judge: Judge{Alpha: f.Stats.Alpha, MinEffectPct: f.Stats.MinEffect}, Auto: auto, Statistical: f.Stats.Statistical(),
		Boots: f.Measure.Boots, MaxBoots: f.Measure.MaxBoots, Reverse: f.Bisect.Reverse, RecheckBoots: f.Bisect.RecheckBoots}
}

// NewSetup returns the setup of the bisections whose kernels m boots, with
// o's statistics calibrated for m's host; the caller adds how commits are
// built. Its errors are NewBench's: levels no bisection can use.
func NewSetup(ctx context.Context, m *measure.Setup, o Options) (*Setup, error) {
	j := o.Judge
	deterministic := j.Calibrate(ctx, m, o.Auto, o.Statistical)
	bench, err := NewBench(m, j, o.Boots, o.MaxBoots, o.Reverse)
	if err != nil {
		return nil, err
	}
	bench.Deterministic = deterministic
	return &Setup{Bench: bench, Measure: m, RecheckBoots: o.RecheckBoots, Log: m.Log}, nil
}

// DefaultBuildDir is where a tree is built when no build directory is
// given: inside the tree, so every lpmbisect command that builds it (build,
// bisect-run, bisect, nightly) reuses the same objects. Kernel trees ignore
// dot-directories (.gitignore has ".*"), so git does not see it.
const DefaultBuildDir = ".lpmbisect-build"

// BuildDirFor returns the build directory of the tree src: dir, or
// src/DefaultBuildDir when dir is "".
func BuildDirFor(src, dir string) string {
	if dir != "" {
		return dir
	}
	return filepath.Join(src, DefaultBuildDir)
}

// Builder returns the builder of the setup.
func (s *Setup) Builder() kbuild.Builder {
	if s.RemoteBuilder != nil {
		return s.RemoteBuilder
	}
	if s.BuildCommand != "" {
		return &kbuild.CommandBuilder{Command: s.BuildCommand}
	}
	return &kbuild.KbuildBuilder{Options: s.Build, Log: s.Log}
}

func (s *Setup) resolve(in string) (*kernel.Kernel, error) { return s.Bench.Resolve(in) }

// Git bisects good..bad (revisions) of the repository that holds dir,
// with its state in stateDir ("": <git-dir>/lpmbisect; a resumed run goes
// on from it) and builds in buildDir ("": BuildDirFor).
func (s *Setup) Git(ctx context.Context, dir, goodRev, badRev, stateDir, buildDir string) (*Result, *State, error) {
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
	st, err := s.Bench.OpenState(orDefault(stateDir, filepath.Join(gitDir, "lpmbisect")), State{Kind: KindGit, Repo: repo.Dir, Good: good, Bad: bad})
	if err != nil {
		return nil, nil, err
	}
	gb := &GitBisect{
		Bisection: Bisection{Bench: s.Bench, State: st, RecheckBoots: s.RecheckBoots, Log: s.Log},
		Repo:      repo, Good: good, Bad: bad, Builder: s.Builder(), BuildDir: BuildDirFor(repo.Dir, buildDir), Resolve: s.resolve,
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
func (s *Setup) Images(ctx context.Context, args []string, stateDir string) (*Result, *State, error) {
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
	st, err := s.Bench.OpenState(orDefault(stateDir, filepath.Join(cache, "bisect")), State{Kind: KindImages, Images: images, Good: images[0], Bad: images[len(images)-1]})
	if err != nil {
		return nil, nil, err
	}
	ib := &ImagesBisect{
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
func (s *Setup) Search(ctx context.Context, t Target, stateDir, buildDir string) (*Result, *State, error) {
	if len(t.Images) > 0 {
		return s.Images(ctx, t.Images, stateDir)
	}
	return s.Git(ctx, t.Repo, t.Good, t.Bad, stateDir, buildDir)
}

// Step classifies the commit checked out in the work tree that holds dir,
// for git bisect run, against the endpoints good and bad (kernels or
// revisions; "" for the commits git bisect was started with), with its
// state in stateDir ("": <git-dir>/lpmbisect).
func (s *Setup) Step(ctx context.Context, dir, goodArg, badArg, stateDir, buildDir string) (Verdict, error) {
	repo, gitDir, err := git.Open(ctx, dir)
	if err != nil {
		return Verdict{}, err
	}
	startBad, startGood, err := repo.BisectEndpoints(ctx)
	if err != nil {
		return Verdict{}, err
	}
	good, err := endpoint(ctx, repo, "good", goodArg, startGood)
	if err != nil {
		return Verdict{}, err
	}
	bad, err := endpoint(ctx, repo, "bad", badArg, startBad)
	if err != nil {
		return Verdict{}, err
	}
	st, err := s.Bench.OpenState(orDefault(stateDir, filepath.Join(gitDir, "lpmbisect")), State{Kind: KindRun, Repo: repo.Dir, Good: good.Kernel + good.Commit, Bad: bad.Kernel + bad.Commit})
	if err != nil {
		return Verdict{}, err
	}
	step := &RunStep{
		Bisection: Bisection{Bench: s.Bench, State: st, Log: s.Log},
		Repo:      repo, Src: repo.Dir, Good: good, Bad: bad,
		Builder: s.Builder(), BuildDir: BuildDirFor(repo.Dir, buildDir), Resolve: s.resolve,
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
	if _, err := os.Stat(value); err == nil {
		abs, err := filepath.Abs(value)
		return Endpoint{Kernel: abs}, err
	}
	commit, err := repo.Commit(ctx, value)
	if err != nil {
		return Endpoint{}, fmt.Errorf("%w: %s endpoint %s is neither a kernel file nor a commit: %v", ErrNoEndpoint, name, value, err)
	}
	return Endpoint{Commit: commit}, nil
}

func orDefault(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

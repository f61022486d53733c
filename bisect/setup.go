package bisect

import (
	"context"
	"fmt"
	"log"
	"path/filepath"

	"github.com/lpmbisect/lpmbisect/build"
	"github.com/lpmbisect/lpmbisect/internal/git"
	"github.com/lpmbisect/lpmbisect/kernel"
	"github.com/lpmbisect/lpmbisect/measure"
)

// Setup is what every bisection is made from: how kernels are measured and
// judged, and how a commit is built. The CLI's bisect and bisect-run fill
// it from their flags; nightly tracking fills it from a series to bisect a
// change point.
type Setup struct {
	Bench *Bench
	// BuildCommand, when set, builds each commit with this shell command
	// (see CommandBuilder); otherwise Build is used (lpmbisect build).
	BuildCommand string
	Build        build.Options
	// RecheckBoots is how many boots the re-check adds to the culprit and
	// its parent (0: no re-check).
	RecheckBoots int
	Log          *log.Logger
}

// NewBench returns the bench of a bisection whose kernels are booted with m
// and judged with j: Boots boots per look (0: the fewest with which one
// look can decide), at most MaxBoots per kernel while UNKNOWN; reverse
// looks for an improvement. Results are kept apart by m's measurement
// parameters (ParamsKey).
func NewBench(m *measure.Setup, j Judge, boots, maxBoots int, reverse bool) (*Bench, error) {
	if boots < 0 || maxBoots < 1 {
		return nil, fmt.Errorf("boots per look %d and at most %d per kernel: must be positive", boots, maxBoots)
	}
	args := append(m.Plan.KernelArgs(), m.Append...)
	params, err := ParamsKey(m.Accel, args, m.MemoryMB, m.CPUs, m.Guest)
	if err != nil {
		return nil, err
	}
	b := &Bench{
		Judge: j,
		Measurer: &VMMeasurer{
			Guest: m.Guest, CacheDir: m.CacheDir, NoModules: m.NoModules, GuestArgs: args,
			Selector: m.Selector, VM: m.VM, RunDir: m.RunDir, Workers: m.Workers, Log: m.Log,
		},
		Resolve: func(in string) (*kernel.Kernel, error) { return kernel.Resolve(in, m.CacheDir) },
		Boots:   boots, MaxBoots: maxBoots, Reverse: reverse, Params: params, Log: m.Log,
	}
	if err := b.CheckLevels(); err != nil {
		return nil, err
	}
	return b, nil
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
func (s *Setup) Builder() Builder {
	if s.BuildCommand != "" {
		return &CommandBuilder{Command: s.BuildCommand}
	}
	return &KbuildBuilder{Options: s.Build, Log: s.Log}
}

func (s *Setup) resolve(in string) (*kernel.Kernel, error) { return s.Bench.Resolve(in) }

// Git bisects good..bad of the repository at repo (full commit ids), with
// its state in stateDir (a resumed run goes on from it) and builds in
// buildDir ("": BuildDirFor).
func (s *Setup) Git(ctx context.Context, repo *git.Repo, good, bad, stateDir, buildDir string) (*Result, *State, error) {
	st, err := s.Bench.OpenState(stateDir, State{Kind: KindGit, Repo: repo.Dir, Good: good, Bad: bad})
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

// Images searches the ordered list of prebuilt kernels (see ExpandImages),
// the first good, the last bad, with its state in stateDir.
func (s *Setup) Images(ctx context.Context, images []string, stateDir string) (*Result, *State, error) {
	if len(images) < 2 {
		return nil, nil, fmt.Errorf("%d kernel given; a bisection needs at least two (the first good, the last bad)", len(images))
	}
	st, err := s.Bench.OpenState(stateDir, State{Kind: KindImages, Images: images, Good: images[0], Bad: images[len(images)-1]})
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

// Step classifies the commit checked out in repo for git bisect run,
// against the endpoints good and bad, with its state in stateDir.
func (s *Setup) Step(ctx context.Context, repo *git.Repo, good, bad Endpoint, stateDir, buildDir string) (Verdict, error) {
	st, err := s.Bench.OpenState(stateDir, State{Kind: KindRun, Repo: repo.Dir, Good: good.Kernel + good.Commit, Bad: bad.Kernel + bad.Commit})
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

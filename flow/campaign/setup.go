package campaign

import (
	"context"
	"fmt"
	"log"
	"path/filepath"
	"strings"

	"github.com/lpmbisect/lpmbisect/config"
	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/host/kbuild"
	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/internal/git"
	"github.com/lpmbisect/lpmbisect/internal/words"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Setup is what every campaign is made from: how kernels are measured and
// judged, and how a commit is built. The CLI's bisect, bisect-run and
// series fill it from their flags; nightly tracking fills it from a
// series, to measure its nights and bisect a change point.
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

// newBench returns the bench of a bisection whose kernels are booted with m
// and judged with j: Boots boots per look (0: the fewest with which one
// look can decide), at most MaxBoots per kernel while UNKNOWN; reverse
// looks for an improvement. Results are kept apart by m's measurement
// parameters (measure.Setup.ParamsKey).
func newBench(m *measure.Setup, j Judge, boots, maxBoots int, reverse bool) (*Bench, error) {
	if boots < 0 || maxBoots < 1 {
		return nil, fmt.Errorf("boots per look %d and at most %d per kernel: must be positive", boots, maxBoots)
	}
	params, err := m.ParamsKey()
	if err != nil {
		return nil, err
	}
	b := &Bench{
		Judge:    j,
		Measurer: &vmMeasurer{Setup: m, Log: m.Log},
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
// built. Its errors are newBench's: levels no bisection can use.
func NewSetup(ctx context.Context, m *measure.Setup, o Options) (*Setup, error) {
	j := o.Judge
	deterministic := j.Calibrate(ctx, m, o.Auto, o.Statistical)
	bench, err := newBench(m, j, o.Boots, o.MaxBoots, o.Reverse)
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

// CandidateOf describes a built kernel for measuring.
func CandidateOf(b *kbuild.Built, label, commit string) Candidate {
	return Candidate{Input: b.Kernel, Label: label, Labels: map[string]string{
		wire.KeyCommit: commit, wire.KeyCompiler: b.Compiler, wire.KeyKconfig: b.Kconfig,
	}}
}

// BuildCommit builds the tree src (checked out at commit) unless the state
// has its kernel already, keeps the kernel and records it. A tree that does
// not build gives a Built with Failed set and its log kept under the state.
func BuildCommit(ctx context.Context, s *State, builder kbuild.Builder, src, buildDir, commit string, resolve func(string) (*kernel.Kernel, error), log *log.Logger) (*kbuild.Built, error) {
	if b := s.Kernels[commit]; b.Stands() {
		return b, nil
	}
	b := unbuilt(ctx, s, src, buildDir, commit, log)
	if b == nil {
		var err error
		if b, err = kbuild.BuildKernel(ctx, builder, src, buildDir, commit, s.Dir(), resolve, log); err != nil {
			return nil, err
		}
	}
	s.Kernels[commit] = b
	return b, s.Save()
}

// unbuilt returns the kernel of the commit last built in buildDir when
// commit changes no file that build read, as kbuild's dependency files in
// buildDir record them (kbuild.Inputs): a documentation, tools or
// selftests change then costs no build, and its image is that commit's.
// It returns nil when the commit must be built: the build directory's last
// build is unknown or not in the state, or a changed file was read.
func unbuilt(ctx context.Context, s *State, src, buildDir, commit string, log *log.Logger) *kbuild.Built {
	last := kbuild.LastBuilt(buildDir)
	lb := s.Kernels[last]
	if last == "" || last == commit || !lb.Stands() || lb.Failed != "" {
		return nil
	}
	changed, err := (&git.Repo{Dir: src}).ChangedFiles(ctx, last, commit)
	if err != nil {
		return nil
	}
	in, err := kbuild.ReadInputs(src, buildDir)
	if err != nil {
		return nil
	}
	if same, why := in.SameKernel(changed); !same {
		if log != nil {
			log.Printf("%s: builds (%s)", words.ShortHash(commit), why)
		}
		return nil
	}
	if err := kbuild.SetLastBuilt(buildDir, commit); err != nil {
		return nil
	}
	if log != nil {
		log.Printf("%s: not built: since %s it changes %s, read by no build step (kbuild's dependency files in %s): %s's kernel, image %s",
			words.ShortHash(commit), words.ShortHash(last), filesNamed(changed), buildDir, words.ShortHash(last), words.ShortHash(lb.Image))
	}
	b := *lb
	b.BuildSeconds = 0
	return &b
}

// filesNamed names files for a log line: up to three, then how many more.
func filesNamed(files []string) string {
	if len(files) <= 3 {
		return strings.Join(files, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(files[:3], ", "), len(files)-3)
}

// kernelSides are kernels a and b as the sides of an insight block.
func kernelSides(a, b *kernel.Kernel) []*measure.Side {
	return []*measure.Side{{Name: "A", Kernel: a}, {Name: "B", Kernel: b}}
}

// KernelInsight is the insight block of kernel a against kernel b (the
// parent against the culprit, a patch's parent against the patch) from
// their images and, where the build's vmlinux is there
// (kernel.BuildVmlinux), exact sizes.
func KernelInsight(a, b *kernel.Kernel) *insight.Diff {
	return (&measure.Insight{}).Diff(kernelSides(a, b))
}

// InsightDiff is the insight block of kernel a against kernel b with the
// guest documents s kept for their images (KeepInsight): what the guests'
// insight pass found when it ran, split by in (nil: the pass's defaults;
// a report written by a later run that asked for no pass, such as a
// night's mail, still reads the documents kept). A nil store keeps none:
// the block then comes from the images alone. A document that cannot be
// read says so in its side of the block. It is the one store → insight
// diff: a bisection's re-check (parent against culprit) and a night's
// mail (the tip before a change against the tip after it) both read it.
func (s *Store) InsightDiff(in *measure.Insight, a, b *kernel.Kernel) *insight.Diff {
	if in == nil {
		in = &measure.Insight{}
	}
	sides := kernelSides(a, b)
	for _, side := range sides {
		if s == nil {
			break
		}
		doc, err := s.Insight(side.Kernel.SHA256)
		if err != nil {
			side.InsightProblem = err.Error()
		}
		side.Insight = doc
	}
	return in.Diff(sides)
}

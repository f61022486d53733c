package bisect

import (
	"context"
	"log"
	"os"
	"time"

	"github.com/lpmbisect/lpmbisect/host/kbuild"
	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Bisection is what every kind of bisection shares: the classifier, the
// state, the re-check and the log.
type Bisection struct {
	Bench *Bench
	State *State
	// RecheckBoots is how many boots the re-check adds to the culprit and
	// its parent (0: no re-check).
	RecheckBoots int
	Log          *log.Logger
}

func (bs *Bisection) logf(format string, args ...any) {
	if bs.Log != nil {
		bs.Log.Printf(format, args...)
	}
}

// noteMeasured records the images measured so far and saves the state.
func (bs *Bisection) noteMeasured() error {
	bs.State.NoteMeasured(bs.Bench.MeasuredImages())
	return bs.State.Save()
}

// setEndpoints measures the endpoints and records the effect.
func (bs *Bisection) setEndpoints(ctx context.Context, good, bad Candidate) error {
	eff, err := bs.Bench.SetEndpoints(ctx, good, bad)
	if serr := bs.noteMeasured(); serr != nil && err == nil {
		err = serr
	}
	if err != nil {
		return err
	}
	bs.State.Effect = eff
	for _, r := range eff.Rows {
		if r.Control {
			continue
		}
		bs.logf("endpoints: %s: good %s → bad %s: %s (%d+%d boots)", r.Benchmark, view.FormatValue(r.A, r.Unit), view.FormatValue(r.B, r.Unit), r.Comparison, r.BootsA, r.BootsB)
	}
	for _, k := range eff.Drift {
		bs.logf("warning: control %s differs between the endpoints: the harness or host changed too", k)
	}
	return bs.State.Save()
}

// classify classifies a kernel, records the step and returns its class.
func (bs *Bisection) classify(ctx context.Context, st Step, k Candidate) (Class, error) {
	start := time.Now()
	v, rk, err := bs.Bench.ClassifyKernel(ctx, k)
	if serr := bs.noteMeasured(); serr != nil && err == nil {
		err = serr
	}
	if err != nil {
		return Skip, err
	}
	st.Time, st.Verdict, st.Seconds = time.Now(), v, time.Since(start).Seconds()
	st.Kernel = k.Input
	if rk != nil {
		st.Image = rk.SHA256
	}
	return v.Class, bs.State.AddStep(st, bs.Log)
}

// recheck re-checks a culprit against its parent, if asked to.
func (bs *Bisection) recheck(ctx context.Context, parent, culprit Candidate) (*Recheck, error) {
	if bs.RecheckBoots <= 0 {
		return nil, nil
	}
	if bs.State.RecheckTarget == 0 {
		target, err := bs.Bench.RecheckTarget(parent, culprit, bs.RecheckBoots)
		if err != nil {
			return nil, err
		}
		bs.State.RecheckTarget = target
		if err := bs.State.Save(); err != nil {
			return nil, err
		}
	}
	bs.logf("re-check of %s and %s, to %d boots each", parent.Label, culprit.Label, bs.State.RecheckTarget)
	rc, err := bs.Bench.Recheck(ctx, parent, culprit, bs.State.RecheckTarget)
	if serr := bs.noteMeasured(); serr != nil && err == nil {
		err = serr
	}
	return rc, err
}

// finish completes and saves the result.
func (bs *Bisection) finish(res *Result) (*Result, error) {
	res.Steps = len(bs.State.Steps)
	res.Measured = len(bs.State.Measured)
	res.Confidence = Confidence(bs.State.Steps)
	bs.State.Result = res
	if err := bs.State.Save(); err != nil {
		return res, err
	}
	return res, nil
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
	if b := s.Kernels[commit]; b != nil {
		if b.Failed != "" {
			return b, nil
		}
		if _, err := os.Stat(b.Kernel); err == nil {
			return b, nil
		}
	}
	b, err := kbuild.BuildKernel(ctx, builder, src, buildDir, commit, s.Dir(), resolve, log)
	if err != nil {
		return nil, err
	}
	s.Kernels[commit] = b
	return b, s.Save()
}

package bisect

import (
	"context"
	"log"
	"time"

	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/present/view"
)

// Bisection is what every kind of bisection shares: the classifier, the
// state, the re-check and the log.
type Bisection struct {
	Bench *campaign.Bench
	State *campaign.State
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
func (bs *Bisection) setEndpoints(ctx context.Context, good, bad campaign.Candidate) error {
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
	for _, k := range eff.Harness {
		bs.logf("control %s differs between the endpoints: the kernel's harness cost changed (instruction counts: not the host)", k)
	}
	return bs.State.Save()
}

// classify classifies a kernel, records the step and returns its class.
func (bs *Bisection) classify(ctx context.Context, st campaign.Step, k campaign.Candidate) (campaign.Class, error) {
	start := time.Now()
	v, rk, err := bs.Bench.ClassifyKernel(ctx, k)
	if serr := bs.noteMeasured(); serr != nil && err == nil {
		err = serr
	}
	if err != nil {
		return campaign.Skip, err
	}
	st.Time, st.Verdict, st.Seconds = time.Now(), v, time.Since(start).Seconds()
	st.Kernel = k.Input
	if rk != nil {
		st.Image = rk.SHA256
	}
	return v.Class, bs.State.AddStep(st, bs.Log)
}

// recheck re-checks a culprit against its parent, if asked to.
func (bs *Bisection) recheck(ctx context.Context, parent, culprit campaign.Candidate) (*campaign.Recheck, error) {
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
func (bs *Bisection) finish(res *campaign.Result) (*campaign.Result, error) {
	res.Steps = len(bs.State.Steps)
	res.Measured = len(bs.State.Measured)
	res.Confidence = campaign.Confidence(bs.State.Steps)
	bs.State.Result = res
	if err := bs.State.Save(); err != nil {
		return res, err
	}
	return res, nil
}

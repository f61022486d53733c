package calibrate

import (
	"context"
	"fmt"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/host/measure"
)

// Run calibrates kernel (any input measure.Setup.Prepare resolves): it boots
// it boots times with setup's plan and accelerator, as many at once as the
// setup allows (several under icount, one under wall time), and computes
// the calibration from the completed boots; for paired comparisons it
// boots pairs of the kernel with itself, boots times. Boots on a remote host class
// (Remote) give the class's calibration. Whether the comparisons served
// run in pairs is taken from the setup (o.Paired is ignored). o.OnRunner,
// when set, gets the runner before the first boot: to attach progress, a
// results file (Runner.Sink) or, once Run returns, setup.Finish. The
// caller stores the result (Store).
func Run(ctx context.Context, setup *measure.Setup, kernel string, boots int, o Options) (*Calibration, error) {
	if boots < 2 {
		return nil, fmt.Errorf("calibrate: %d boots: %w", boots, ErrTooFewBoots)
	}
	if r, ok := setup.Remote.(Remote); ok && o.Host == nil {
		host, _, _, err := r.CalibrationClass(ctx, setup.VM.CPU)
		if err != nil {
			return nil, fmt.Errorf("calibrate %s: %w", kernel, err)
		}
		o.Host = &host // the class's: the key of its results is the class's
	}
	// For paired comparisons the kernel runs in pairs with itself, as A
	// and B of a paired comparison would: the floors then come from what
	// pairs leave of the host's noise.
	inputs := []string{kernel}
	if o.Paired = setup.Pairs(2); o.Paired {
		inputs = append(inputs, kernel)
	}
	r, err := setup.Start(inputs, measure.RunOptions{Seed: o.Seed})
	if err != nil {
		return nil, err
	}
	if o.OnRunner != nil {
		o.OnRunner(r)
	}
	if err := r.Measure(ctx, boots); err != nil {
		return nil, fmt.Errorf("calibrate %s: %w", kernel, err)
	}
	var all [][]*benchfmt.Result
	for _, s := range r.Sides {
		all = append(all, r.Boots(s.Name)...)
	}
	return compute(all, o)
}

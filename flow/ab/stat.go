package ab

import (
	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/flow/calibrate"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Restat judges the results of a finished comparison again, read from the
// file path, without booting: with opts, the calibration the results
// recorded (calibrate.FromResults) and, when statistical, the significance
// test for every row, as Run's caller would under that rule (its jitter
// bounds dropped). The Result's Meta says what the file says of the run;
// the command line, the fail-on rule and the insight block are the
// caller's to add.
func Restat(results []*benchfmt.Result, path string, opts compare.Options, statistical bool) (*Result, error) {
	if err := calibrate.FromResults(&opts, results); err != nil {
		return nil, err
	}
	if statistical {
		opts.Bounds = nil
	}
	rep, err := compare.Build(results, opts)
	if err != nil {
		return nil, err
	}
	res := &Result{Report: rep, Results: path, Meta: view.Meta{ResultsFile: path, BootCost: measure.BootCosts(results), CPU: sideCPUs(results)}}
	res.Meta.A.Release, res.Meta.B.Release = rep.A.Kernel, rep.B.Kernel
	if len(results) > 0 {
		res.Meta.Accel = results[0].GetConfig(wire.KeyAccel)
	}
	return res, nil
}

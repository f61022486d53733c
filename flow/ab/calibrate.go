package ab

import (
	"context"
	"regexp"

	"github.com/lpmbisect/lpmbisect/flow/calibrate"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// Calibrate readies o, whose Setup and Compare are set, for its host: the
// statistics calibrated (calibrate.Use: auto takes each benchmark's
// minimum effect from the calibration, statistical judges deterministic
// rows by the significance test too), the first look at boots boots per
// side (compare.Start; 0: the fewest at which a verdict is possible), the
// plan's benchmarks as those whose UNKNOWN calls for more boots, and the
// calibration recorded in every result (calibrate.Labels), where stat
// finds it. Its errors are compare's *BootsError.
func (o *Options) Calibrate(ctx context.Context, boots int, auto, statistical bool) error {
	s := o.Setup
	deterministic := calibrate.Use(ctx, s, &o.Compare, auto, statistical)
	start, err := compare.Start(o.Compare, compare.FirstLook{Boots: boots, Rows: s.Plan.Benchmarks(), Paired: s.Pairs(2), Deterministic: deterministic})
	if err != nil {
		return err
	}
	o.Start, o.Selected, o.Labels = start, regexp.MustCompile(s.Plan.Pattern()), calibrate.Labels(o.Compare) // Validate compiled it
	return nil
}

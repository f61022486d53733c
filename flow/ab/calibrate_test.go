package ab

import (
	"context"
	"errors"
	"log"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/testbed/testsetup"
	"github.com/lpmbisect/lpmbisect/wire"
)

// TestCalibrate checks a comparison's start under icount: the documented
// jitter bounds decide from DeterministicBoots boots and are recorded in
// every result; the statistical rule needs the significance test's boots
// and records none; boots beyond the cap are refused.
func TestCalibrate(t *testing.T) {
	plan := measure.GuestPlan(wire.DefaultPlan())
	plan.Bench = "lookup"
	s := testsetup.New(t, measure.Options{Accel: wire.AccelIcount, Plan: plan})
	stats := compare.Options{Alpha: 0.05, MinEffect: 0.01, MaxBoots: 10}
	o := Options{Setup: s, Compare: stats}
	if err := o.Calibrate(context.Background(), 0, false, false); err != nil {
		t.Fatal(err)
	}
	if o.Start != compare.DeterministicBoots || o.Labels[wire.KeyJitterBounds] == "" || o.Selected == nil || o.Selected.String() != plan.Pattern() {
		t.Errorf("Calibrate(icount) = start %d, labels %v, selected %v; want %d, the jitter bounds, the plan's benchmarks",
			o.Start, o.Labels, o.Selected, compare.DeterministicBoots)
	}
	o = Options{Setup: s, Compare: stats}
	if err := o.Calibrate(context.Background(), 0, false, true); err != nil || o.Start <= compare.DeterministicBoots || o.Labels[wire.KeyJitterBounds] != "" {
		t.Errorf("Calibrate(statistical) = start %d, labels %v, %v; want more boots than %d, no bounds", o.Start, o.Labels, err, compare.DeterministicBoots)
	}
	o = Options{Setup: s, Compare: stats}
	var be *compare.BootsError
	if err := o.Calibrate(context.Background(), 11, false, false); !errors.As(err, &be) || be.Option != "boots" {
		t.Errorf("Calibrate(11 boots, at most 10) = %v; want the BootsError of boots", err)
	}
}

// TestCalibrateTwoCPUs: a comparison whose sides boot two CPU profiles
// takes, per benchmark, the wider of the two models' bounds, and says
// where each side's came from.
func TestCalibrateTwoCPUs(t *testing.T) {
	plan := measure.GuestPlan(wire.DefaultPlan())
	plan.Bench = "lookup"
	var said strings.Builder
	s := testsetup.New(t, measure.Options{Accel: wire.AccelIcount, Plan: plan, CPUProfile: "zen2", CPUProfileB: "default", Log: log.New(&said, "", 0)})
	o := Options{Setup: s, Compare: compare.Options{Alpha: 0.05, MinEffect: 0.01, MaxBoots: 10}}
	if err := o.Calibrate(context.Background(), 0, false, false); err != nil {
		t.Fatal(err)
	}
	if o.Start != compare.DeterministicBoots || o.Labels[wire.KeyJitterBounds] == "" {
		t.Errorf("Calibrate(zen2 against default) = start %d, labels %v; want %d, the jitter bounds", o.Start, o.Labels, compare.DeterministicBoots)
	}
	if got := said.String(); !strings.Contains(got, "A (CPU profile zen2)") || !strings.Contains(got, "B (CPU profile default)") {
		t.Errorf("Calibrate(zen2 against default) said %q; want where each side's statistics came from", got)
	}
}

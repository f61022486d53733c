package calibrate

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/testbed/testguest"
	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
	"github.com/lpmbisect/lpmbisect/wire"
)

// TestRunIcount calibrates Debian 6.12 under icount from 3 boots (run at
// once, as icount allows) and checks that the lookups come out
// deterministic, with a bound below the 0.5 % a deterministic row may
// differ by, and that the calibration is stored and found again.
func TestRunIcount(t *testing.T) {
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		testkernels.Unavailable(t, "qemu-system-x86_64 not installed (run scripts/setup)")
	}
	deb := testkernels.Deb(t, testkernels.Debian612)
	cache := testkernels.Cache(t)
	setup, err := measure.NewSetup(measure.Options{
		Accel: wire.AccelIcount, Guest: testguest.Path(t), CacheDir: cache, RunDir: t.TempDir(),
		Plan:        measure.GuestPlan{Bench: "lookup", Samples: 3, Entries: 10000},
		BootTimeout: 2 * time.Minute,
	})
	if err != nil {
		t.Fatalf("NewSetup: %v", err)
	}
	booted := 0
	c, err := Run(context.Background(), setup, deb, 3, Options{OnRunner: func(r *measure.Runner) {
		r.OnBoot = func(measure.BootReport) { booted++ }
	}})
	if err != nil {
		t.Fatalf("Run(6.12, 3 boots) = %v", err)
	}
	if booted != 3 || c.Boots != 3 || c.Kernel != testkernels.Release612 {
		t.Errorf("Run: %d boots reported, calibration of %d boots of %q; want 3, 3, %q", booted, c.Boots, c.Kernel, testkernels.Release612)
	}
	if c.Key.Accel != "icount" || c.Key.CPUModel != vmrunner.CPUModel(wire.AccelIcount) || c.Key.QEMU == "" || c.Key.Samples != 3 || c.Key.Rounds == 0 || c.Key.Paired {
		t.Errorf("Run: key %+v; want icount on %s with a QEMU version, 3 samples, rounds, unpaired", c.Key, vmrunner.CPUModel(wire.AccelIcount))
	}
	lookups := 0
	for _, b := range c.Benchmarks {
		t.Logf("%s (%s): medians %v, max diff %.4f%%, bound %.4f%%, deterministic %v %s",
			b.Name, b.Unit, b.Medians, 100*b.MaxDiff, 100*b.Bound, b.Deterministic, b.Why)
		if !strings.HasPrefix(b.Name, "LPMTrie/op=lookup/") {
			continue
		}
		lookups++
		bound, ok := c.Bound(b.Name, b.Unit)
		if b.Unit != "insn/op" || !ok || !(bound < defaultMaxJitter) || b.Boots != 3 {
			t.Errorf("%s: unit %s, Bound = %g, %v over %d boots; want insn/op, deterministic below %g over 3", b.Name, b.Unit, bound, ok, b.Boots, defaultMaxJitter)
		}
	}
	if lookups != 2 {
		t.Errorf("Run: %d lookup rows; want 2 (random and sequential keys)", lookups)
	}
	if err := Store(context.Background(), Dir(cache), c); err != nil {
		t.Fatalf("Store: %v", err)
	}
	if _, err := load(context.Background(), Dir(cache), c.Key, time.Hour); err != nil {
		t.Errorf("Load after Store: %v", err)
	}
	if _, err := Run(context.Background(), setup, deb, 1, Options{}); !errors.Is(err, ErrTooFewBoots) {
		t.Errorf("Run(1 boot) = %v; want ErrTooFewBoots", err)
	}
}

// TestRunPaired calibrates Debian 6.1 for paired TCG comparisons from 2
// pairs of the kernel with itself: both sides boot, the key is paired,
// the floors come from paired self-compares, and a paired comparison's
// lookup (keyFor) finds the calibration.
func TestRunPaired(t *testing.T) {
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		testkernels.Unavailable(t, "qemu-system-x86_64 not installed (run scripts/setup)")
	}
	deb := testkernels.Deb(t, testkernels.Debian61)
	cache := testkernels.Cache(t)
	setup, err := measure.NewSetup(measure.Options{
		Accel: wire.AccelTCG, Guest: testguest.Path(t), CacheDir: cache, RunDir: t.TempDir(), Paired: true,
		Plan:        measure.GuestPlan{Bench: "lookup/keys=sequential", Samples: 2, Entries: 1000},
		BootTimeout: 3 * time.Minute,
	})
	if err != nil {
		t.Fatalf("NewSetup: %v", err)
	}
	sides := map[string]int{}
	c, err := Run(context.Background(), setup, deb, 2, Options{MaxBoots: 10, OnRunner: func(r *measure.Runner) {
		r.OnBoot = func(b measure.BootReport) { sides[b.Side.Name]++ }
	}})
	if err != nil {
		t.Fatalf("Run(6.1, 2 pairs) = %v", err)
	}
	if sides["A"] != 2 || sides["B"] != 2 || c.Boots != 4 {
		t.Errorf("Run: boots by side %v, calibration of %d boots; want 2 of A and 2 of B, 4", sides, c.Boots)
	}
	if !c.Key.Paired || c.Key.Accel != "tcg" || !c.Method.Paired || c.Method.SplitBoots != 1 || c.Method.Splits != 2 || !c.Method.Exhaustive {
		t.Errorf("Run: key %+v, method %+v; want a paired tcg key and paired self-compares of 1 of the 2 pairs, both taken", c.Key, c.Method)
	}
	for _, b := range c.Benchmarks {
		if len(b.SameShare) != len(defaultGrid) {
			t.Errorf("%s: same shares %v; want one per grid step", b.Name, b.SameShare)
		}
	}
	if err := Store(context.Background(), Dir(cache), c); err != nil {
		t.Fatalf("Store: %v", err)
	}
	key, err := keyFor(context.Background(), setup)
	if err != nil || key.ID() != c.Key.ID() {
		t.Errorf("KeyFor(paired setup) = %v, %v; want the calibration's key %v", key, err, c.Key)
	}
}

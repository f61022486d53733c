package bisect

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/lpmbisect/lpmbisect/compare"
	"github.com/lpmbisect/lpmbisect/measure"
	"github.com/lpmbisect/lpmbisect/vmrunner"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Under icount, with no calibration of this host, the documented jitter
// bounds decide the LPM lookups from DeterministicBoots boots a look;
// --rule statistical and wall time keep the boots asked for.
func TestJudgeCalibrate(t *testing.T) {
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("no QEMU: the calibration key needs its version")
	}
	guest := filepath.Join(t.TempDir(), "lpmbisect-guest")
	os.WriteFile(guest, []byte("not used"), 0o755)
	setup := func(accel vmrunner.Accel) *measure.Setup {
		s, err := measure.NewSetup(measure.Options{Accel: accel, Plan: measure.GuestPlan(wire.DefaultPlan()), Guest: guest, CacheDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, c := range []struct {
		name        string
		accel       vmrunner.Accel
		boots       int
		statistical bool
		want        int
		bounds      bool
	}{
		{"icount", vmrunner.Icount, 0, false, compare.DeterministicBoots, true},
		{"icount, boots given", vmrunner.Icount, 5, false, 5, true},
		{"icount, statistical", vmrunner.Icount, 0, true, 0, false},
		{"tcg", vmrunner.TCG, 0, false, 0, false},
	} {
		j := Judge{Alpha: 0.05, MinEffectPct: 1}
		if got := j.Calibrate(setup(c.accel), c.boots, false, c.statistical); got != c.want || (len(j.Bounds) > 0) != c.bounds {
			t.Errorf("%s: Calibrate = %d boots, bounds %v; want %d, bounds %v", c.name, got, j.Bounds, c.want, c.bounds)
		}
	}
}

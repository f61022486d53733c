// Package testsetup makes measure setups for tests that never boot: a
// placeholder guest binary and a fresh cache. The calibration key of such
// a setup needs QEMU's version, so a test without QEMU is skipped.
//
// For tests only: internal/importrule fails any non-test file that imports
// a package of testbed/.
package testsetup

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/lpmbisect/lpmbisect/host/measure"
)

// New returns the setup of o with a placeholder guest and a fresh cache
// directory (unless o names them); it skips the test without QEMU.
func New(tb testing.TB, o measure.Options) *measure.Setup {
	tb.Helper()
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		tb.Skip("no QEMU: the calibration key needs its version")
	}
	if o.Guest == "" {
		o.Guest = filepath.Join(tb.TempDir(), "lpmbisect-guest")
		if err := os.WriteFile(o.Guest, []byte("not used"), 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	if o.CacheDir == "" {
		o.CacheDir = tb.TempDir()
	}
	s, err := measure.NewSetup(o)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

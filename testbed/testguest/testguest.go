// Package testguest builds the guest program for tests that boot kernels,
// once per test process: cmd/lpmbisect-guest with the faults the tests can
// arm (testbed/guestfaults/faultguest), which boots as cmd/lpmbisect-guest
// does unless the kernel command line arms one.
//
// For tests only: internal/importrule fails any non-test file that imports
// a package of testbed/.
package testguest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
)

var (
	once sync.Once
	path string
	err  error
	out  []byte
)

// Path returns a freshly built static guest binary.
func Path(tb testing.TB) string {
	tb.Helper()
	testkernels.SkipShort(tb)
	once.Do(func() {
		var dir string
		dir, err = os.MkdirTemp("", "lpmbisect-testguest-")
		if err != nil {
			return
		}
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		path = filepath.Join(dir, "lpmbisect-guest")
		cmd := exec.Command("go", "build", "-o", path, "./testbed/guestfaults/faultguest")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		out, err = cmd.CombinedOutput()
	})
	if err != nil {
		tb.Fatalf("build guest: %v\n%s", err, out)
	}
	return path
}

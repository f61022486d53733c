// Package testguest builds the real guest program (cmd/lpmbisect-guest) for
// tests that boot kernels, once per test process.
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
		cmd := exec.Command("go", "build", "-o", path, "./cmd/lpmbisect-guest")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		out, err = cmd.CombinedOutput()
	})
	if err != nil {
		tb.Fatalf("build guest: %v\n%s", err, out)
	}
	return path
}

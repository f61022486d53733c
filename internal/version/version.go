// Package version says which lpmbisect this is, from what the Go toolchain
// records in the binary: the module version of a released build, or the
// commit it was built from (with "+dirty" when the tree had changes). Every
// results file, report and history row carries it, so numbers can be traced
// to the code that measured them.
package version

import (
	"runtime/debug"
	"sync"

	"github.com/lpmbisect/lpmbisect/internal/words"
)

var get = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		return "devel"
	}
	rev = words.ShortHash(rev)
	return "devel-" + rev + dirty
})

// String returns the version: "v1.2.3", "devel-1a2b3c4d5e6f", with
// "+dirty" for a build from a modified tree, or "devel" when the build
// recorded no commit (go test, go run outside a repository).
func String() string { return get() }

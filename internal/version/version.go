// Package version says which lpmbisect this is, from what the Go toolchain
// records in the binary: the module version of a released build, or the
// commit it was built from (with "+dirty" when the tree had changes). Every
// results file, report and history row carries it, so numbers can be traced
// to the code that measured them.
//
// The toolchain records the commit only when it finds the repository and
// may ask git: not with -buildvcs=false (in GOFLAGS, or a go env file, as
// machines that build as root in others' checkouts often set, since git
// then refuses to run: "dubious ownership"), and not in a linked git
// worktree, whose .git is a file the toolchain does not recognise
// (golang/go#58218). scripts/build therefore passes the commit itself,
// with -ldflags "-X …/internal/version.commit=COMMIT[+dirty]", which is
// used when the binary records none.
package version

import (
	"runtime/debug"
	"strings"
	"sync"

	"github.com/lpmbisect/lpmbisect/internal/words"
)

// commit is the commit the binary was built from, set by scripts/build
// (-ldflags -X): "COMMIT" or "COMMIT+dirty".
var commit string

var get = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return fromBuildInfo(info, commit)
})

// fromBuildInfo is the version that info records, else the commit that
// the linker was given.
func fromBuildInfo(info *debug.BuildInfo, linked string) string {
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
	if rev == "" && linked != "" {
		rev, _, _ = strings.Cut(linked, "+")
		if strings.HasSuffix(linked, "+dirty") {
			dirty = "+dirty"
		}
	}
	if rev == "" {
		return "devel"
	}
	return "devel-" + words.ShortHash(rev) + dirty
}

// String returns the version: "v1.2.3", a pseudo-version that names the
// commit ("v0.0.0-20261202074758-d4609b6aeb2d", Go 1.24 and later, from a
// clone), "devel-1a2b3c4d5e6f" (the commit scripts/build passes), with
// "+dirty" for a build from a modified tree, or "devel" when the build
// recorded no commit (go test, go run outside a repository, a plain go
// build with -buildvcs=false or in a worktree).
func String() string { return get() }

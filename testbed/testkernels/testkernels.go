// Package testkernels locates the real Debian kernels that end-to-end tests
// boot. scripts/fetch-kernels downloads them through apt; tests never download.
//
// When a kernel is missing a test is skipped, unless LPMBISECT_REQUIRE_VM=1
// (set by .ci/run), in which case it fails: CI must never pass by skipping the
// tests that boot real kernels.
//
// For tests only: internal/importrule fails any non-test file that imports
// a package of testbed/.
package testkernels

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Debian cloud kernel packages used by the tests.
const (
	// Debian61 has virtio_pci and virtio_console as modules (uncompressed .ko).
	Debian61 = "linux-image-6.1.0-57-cloud-amd64-unsigned"
	// Debian612 has virtio built in; its modules are xz-compressed.
	Debian612 = "linux-image-6.12.117+deb12-cloud-amd64-unsigned"
)

// Fortnight lists the kernels of the nightly tests' simulated fortnight,
// one per night: seven builds of Debian 6.1's LPM trie code, then five of
// 6.12's, whose lookups take fewer instructions (the inlined
// longest_prefix_match of upstream 1a4a0cb7985f).
var Fortnight = []string{
	"linux-image-6.1.0-47-cloud-amd64-unsigned", "linux-image-6.1.0-50-cloud-amd64-unsigned",
	"linux-image-6.1.0-53-cloud-amd64-unsigned", "linux-image-6.1.0-54-cloud-amd64-unsigned",
	"linux-image-6.1.0-55-cloud-amd64-unsigned", "linux-image-6.1.0-56-cloud-amd64-unsigned", Debian61,
	"linux-image-6.12.107+deb12-cloud-amd64-unsigned", "linux-image-6.12.111+deb12-cloud-amd64-unsigned",
	"linux-image-6.12.113+deb12-cloud-amd64-unsigned", "linux-image-6.12.115+deb12-cloud-amd64-unsigned", Debian612,
}

// Release strings of the kernels above, as uname -r prints them.
const (
	Release61  = "6.1.0-57-cloud-amd64"
	Release612 = "6.12.117+deb12-cloud-amd64"
)

// dir is where fetched kernels live: $LPMBISECT_KERNELS or <repo>/.kernels.
func dir() string {
	if d := os.Getenv("LPMBISECT_KERNELS"); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", ".kernels")
}

// Deb returns the path of the .deb for package pkg, or skips (fails under
// LPMBISECT_REQUIRE_VM=1) when it has not been fetched.
func Deb(tb testing.TB, pkg string) string {
	tb.Helper()
	SkipShort(tb)
	matches, _ := filepath.Glob(filepath.Join(dir(), pkg+"_*.deb"))
	if len(matches) == 0 {
		Unavailable(tb, "kernel package %s not in %s (run scripts/fetch-kernels)", pkg, dir())
	}
	return matches[0]
}

// SkipShort skips a test that needs kernels, QEMU or PostgreSQL under
// go test -short: the fast tier of unit tests (docs/architecture.md).
func SkipShort(tb testing.TB) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("-short: the fast tier boots no kernel and starts no database")
	}
}

// Unavailable skips the test, or fails it when LPMBISECT_REQUIRE_VM=1.
func Unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv("LPMBISECT_REQUIRE_VM") == "1" {
		tb.Fatalf(format, args...)
	}
	tb.Skipf(format, args...)
}

// sharedCacheEnv names the directory, set by scripts/test for one run of
// the suite, where every test process keeps the kernels it unpacks and the
// initramfs images it packs. Their entries are named by content and
// written under a lock, as in any lpmbisect cache, so processes may share
// them: each Debian package is then unpacked once per run, not once per
// test binary or test.
const sharedCacheEnv = "LPMBISECT_TEST_SHARED_CACHE"

// ShareCache makes dir, a cache directory of the caller's own, keep its
// kernels and initramfs images in the suite's shared cache
// ($LPMBISECT_TEST_SHARED_CACHE) and returns dir; without that variable
// dir keeps its own. Runs and everything else stay in dir.
func ShareCache(tb testing.TB, dir string) string {
	tb.Helper()
	shared := os.Getenv(sharedCacheEnv)
	if shared == "" {
		return dir
	}
	for _, sub := range []string{"kernels", "initramfs"} {
		target := filepath.Join(shared, sub)
		if err := os.MkdirAll(target, 0o755); err != nil {
			tb.Fatalf("shared test cache: %v", err)
		}
		if err := os.Symlink(target, filepath.Join(dir, sub)); err != nil && !os.IsExist(err) {
			tb.Fatalf("shared test cache: %v", err)
		}
	}
	return dir
}

// Cache returns a new cache directory for tb that shares its kernels and
// initramfs images with the rest of the suite (ShareCache).
func Cache(tb testing.TB) string {
	tb.Helper()
	return ShareCache(tb, tb.TempDir())
}

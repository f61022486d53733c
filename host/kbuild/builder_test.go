package kbuild

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lpmbisect/lpmbisect/host/kernel"
)

// A kept build keeps its vmlinux beside the image, where the culprit
// re-check's insight finds it after the build directory moved on.
func TestKeepKernelKeepsVmlinux(t *testing.T) {
	build := t.TempDir()
	image := filepath.Join(build, "arch", "x86", "boot", "bzImage")
	os.MkdirAll(filepath.Dir(image), 0o755)
	os.WriteFile(image, []byte("bzImage"), 0o644)
	os.WriteFile(filepath.Join(build, "vmlinux"), []byte("\x7fELF vmlinux"), 0o644)
	resolve := func(string) (*kernel.Kernel, error) {
		return &kernel.Kernel{Image: image, Release: "6.12.0-test", SHA256: "0123abcd"}, nil
	}
	keep := t.TempDir()
	kept, _, err := keepKernel(build, keep, resolve)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(keep, "0123abcd", "boot", "vmlinux-6.12.0-test")
	if data, err := os.ReadFile(want); err != nil || string(data) != "\x7fELF vmlinux" {
		t.Errorf("keepKernel(build dir) = %s; %s: %q, %v; want the build's vmlinux", kept, want, data, err)
	}
}

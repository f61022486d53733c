package kernel

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

func TestSniff(t *testing.T) {
	dir := t.TempDir()
	build := t.TempDir()
	writeFile(t, build, "arch/x86/boot/bzImage", fakeBzImage(fakeVersion))
	pkg := t.TempDir()
	writeFile(t, pkg, "boot/vmlinuz-"+fakeRelease, fakeBzImage(fakeVersion))
	for _, tc := range []struct {
		name string
		path string
		want Format
	}{
		{"bzImage", writeFile(t, dir, "kernel-6.9", fakeBzImage(fakeVersion)), FormatBzImage},
		{".deb", writeFile(t, dir, "linux-image.deb", []byte(arMagic+"debian-binary")), FormatDeb},
		{"vmlinux", writeFile(t, dir, "vmlinux", []byte("\x7fELF\x02\x01\x01")), FormatVmlinux},
		{"build directory", build, FormatBuildDir},
		{"package directory", pkg, FormatPackageDir},
		{"text named like a kernel", writeFile(t, dir, "vmlinuz-6.9.deb", []byte("a kernel, honest\n")), FormatUnknown},
		{"empty file", writeFile(t, dir, "bzImage", nil), FormatUnknown},
		{"truncated header", writeFile(t, dir, "short", fakeBzImage(fakeVersion)[:0x204]), FormatUnknown},
		{"other directory", t.TempDir(), FormatUnknown},
	} {
		got, err := Sniff(tc.path)
		if err != nil || got != tc.want {
			t.Errorf("Sniff(%s) = %q, %v; want %q", tc.name, got, err, tc.want)
		}
		if want := tc.want != FormatUnknown && tc.want != FormatVmlinux; got.IsInput() != want {
			t.Errorf("Sniff(%s).IsInput() = %v; want %v", tc.name, got.IsInput(), want)
		}
	}
	if _, err := Sniff(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Sniff(missing) = %v; want fs.ErrNotExist", err)
	}
}

func TestInputs(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "vmlinuz-6.9", fakeBzImage(fakeVersion))
	writeFile(t, dir, "k_6.9_amd64.deb", []byte(arMagic))
	writeFile(t, dir, "build/arch/x86/boot/bzImage", fakeBzImage(fakeVersion))
	writeFile(t, dir, "vmlinux-6.9", []byte("\x7fELF\x02\x01\x01"))
	writeFile(t, dir, "SHA256SUMS", []byte("0123  k_6.9_amd64.deb\n"))
	writeFile(t, dir, "notes/README", []byte("not a kernel directory\n"))
	got, err := Inputs(dir)
	slices.Sort(got)
	if want := []string{"build", "k_6.9_amd64.deb", "vmlinuz-6.9"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("Inputs = %q, %v; want %q", got, err, want)
	}
	if _, err := Inputs(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Inputs(missing) = %v; want fs.ErrNotExist", err)
	}
}

// A FIFO is no kernel, and judging it neither waits for a writer nor
// reads what a writer sends.
func TestSniffFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "list")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if got, err := Sniff(fifo); err != nil || got != FormatUnknown {
		t.Errorf("Sniff(FIFO) = %q, %v; want %q", got, err, FormatUnknown)
	}
}

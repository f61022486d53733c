package kernel

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/wire"
)

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// withHostModules points the host's /lib/modules at dir for one test.
func withHostModules(t *testing.T, dir string) {
	old := hostModulesRoot
	hostModulesRoot = dir
	t.Cleanup(func() { hostModulesRoot = old })
}

func TestResolveBzImage(t *testing.T) {
	withHostModules(t, t.TempDir())
	image := fakeBzImage(fakeVersion)
	p := writeFile(t, t.TempDir(), "bzImage", image)
	k, err := Resolve(p, "")
	if err != nil {
		t.Fatal(err)
	}
	want := Kernel{Input: p, Image: p, Release: fakeRelease, SHA256: sha256Hex(image)}
	if *k != want {
		t.Errorf("Resolve(bzImage) = %+v; want %+v", *k, want)
	}
}

func TestResolveRelativePathGivesAbsoluteImage(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "bzImage", fakeBzImage(fakeVersion))
	t.Chdir(dir)
	k, err := Resolve("bzImage", "")
	if err != nil {
		t.Fatal(err)
	}
	if k.Input != "bzImage" || k.Image != filepath.Join(dir, "bzImage") {
		t.Errorf("Resolve(bzImage) = Input %q, Image %q; want %q, %q", k.Input, k.Image, "bzImage", filepath.Join(dir, "bzImage"))
	}
}

func TestResolveFindsPackageLayout(t *testing.T) {
	// dpkg -x puts boot/vmlinuz-R, boot/config-R and lib/modules/R side by side.
	withHostModules(t, t.TempDir())
	root := t.TempDir()
	p := writeFile(t, root, "boot/vmlinuz-"+fakeRelease, fakeBzImage(fakeVersion))
	config := writeFile(t, root, "boot/config-"+fakeRelease, []byte("CONFIG_BPF=y\n"))
	modules := filepath.Join(root, "lib", "modules", fakeRelease)
	writeFile(t, modules, "modules.order", nil)

	for _, input := range []string{p, root} {
		k, err := Resolve(input, "")
		if err != nil {
			t.Fatal(err)
		}
		if k.ModulesDir != modules || k.ConfigPath != config || k.Image != p {
			t.Errorf("Resolve(%s) = ModulesDir %q, ConfigPath %q, Image %q; want %q, %q, %q", input, k.ModulesDir, k.ConfigPath, k.Image, modules, config, p)
		}
	}
}

func TestResolveFindsHostModules(t *testing.T) {
	host := t.TempDir()
	withHostModules(t, host)
	writeFile(t, host, fakeRelease+"/modules.order", nil)
	k, err := Resolve(writeFile(t, t.TempDir(), "vmlinuz", fakeBzImage(fakeVersion)), "")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(host, fakeRelease); k.ModulesDir != want {
		t.Errorf("Resolve(vmlinuz).ModulesDir = %q; want %q (the host's)", k.ModulesDir, want)
	}
}

// makeBuildDir makes a kernel build directory for fakeRelease.
func makeBuildDir(t *testing.T) string {
	dir := t.TempDir()
	writeFile(t, dir, "arch/x86/boot/bzImage", fakeBzImage(fakeVersion))
	writeFile(t, dir, ".config", []byte("CONFIG_VIRTIO_PCI=m\n"))
	writeFile(t, dir, "include/config/kernel.release", []byte(fakeRelease+"\n"))
	writeFile(t, dir, "modules.builtin", []byte("kernel/drivers/virtio/virtio.ko\n"))
	writeFile(t, dir, "modules.order", []byte("drivers/virtio/virtio_pci.o\n"))
	return dir
}

func TestResolveBuildDir(t *testing.T) {
	dir := makeBuildDir(t)
	image := filepath.Join(dir, "arch", "x86", "boot", "bzImage")
	// The directory and its bzImage resolve to the same kernel.
	for _, input := range []string{dir, image} {
		k, err := Resolve(input, "")
		if err != nil {
			t.Fatal(err)
		}
		want := Kernel{Input: input, Image: image, Release: fakeRelease, SHA256: sha256Hex(fakeBzImage(fakeVersion)),
			ModulesDir: dir, ConfigPath: filepath.Join(dir, ".config")}
		if *k != want {
			t.Errorf("Resolve(%s) = %+v; want %+v", input, *k, want)
		}
	}
}

func TestResolveRejects(t *testing.T) {
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sourceTree := t.TempDir()
	writeFile(t, sourceTree, ".config", []byte("CONFIG_BPF=y\n"))
	writeFile(t, sourceTree, "Kconfig", nil)
	brokenBuild := t.TempDir()
	writeFile(t, brokenBuild, "arch/x86/boot/bzImage", []byte("not an image, just text\n"))

	tests := []struct {
		name     string
		input    string
		want     error
		mentions string
	}{
		{"missing", filepath.Join(dir, "foo"), ErrNotFound, `"` + filepath.Join(dir, "foo") + `": file does not exist (give a bzImage, a .deb or a build directory)`},
		{"text", writeFile(t, dir, "notes.txt", []byte("hello\n")), ErrNotKernel, "text file"},
		{"ELF", exe, ErrNotKernel, "an ELF file (vmlinux?): give the compressed bzImage, e.g. arch/x86/boot/bzImage"},
		{"truncated header", writeFile(t, dir, "short", fakeBzImage(fakeVersion)[:0x100]), ErrNotKernel, "too short"},
		{"plain directory", t.TempDir(), ErrNotKernel, "expected arch/x86/boot/bzImage"},
		{"unbuilt source tree", sourceTree, ErrNotKernel, "make bzImage"},
		{"build dir with a bad image", brokenBuild, ErrNotKernel, "arch/x86/boot/bzImage: not a kernel: a text file"},
		{"not a regular file", os.DevNull, ErrNotKernel, "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := Resolve(tt.input, t.TempDir())
			if !errors.Is(err, tt.want) {
				t.Fatalf("Resolve(%s) = %+v, %v; want error wrapping %v", tt.name, k, err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.mentions) {
				t.Errorf("Resolve(%s) error = %q; want it to mention %q", tt.name, err, tt.mentions)
			}
		})
	}
}

func TestResolveDebFormats(t *testing.T) {
	tarball := makeTar(t, fakeKernelTree())
	for _, f := range []struct {
		member string
		data   []byte
	}{
		{"data.tar.xz", xzBytes(t, tarball)},
		{"data.tar.gz", gzipBytes(t, tarball)},
		{"data.tar.zst", zstdBytes(t, tarball)},
		{"data.tar", tarball},
	} {
		t.Run(f.member, func(t *testing.T) {
			cache := t.TempDir()
			deb := makeDeb(f.member, f.data)
			p := writeFile(t, t.TempDir(), "linux-image.deb", deb)
			k, err := Resolve(p, cache)
			if err != nil {
				t.Fatal(err)
			}
			root := filepath.Join(cache, "kernels", "deb-"+sha256Hex(deb))
			want := Kernel{
				Input:      p,
				Image:      filepath.Join(root, "boot", "vmlinuz-"+fakeRelease),
				Release:    fakeRelease,
				SHA256:     sha256Hex(fakeBzImage(fakeVersion)),
				ModulesDir: filepath.Join(root, "lib", "modules", fakeRelease),
				ConfigPath: filepath.Join(root, "boot", "config-"+fakeRelease),
			}
			if *k != want {
				t.Errorf("Resolve(%s) = %+v; want %+v", f.member, *k, want)
			}
		})
	}
}

func TestResolveDebRejects(t *testing.T) {
	headers := makeTar(t, []tarEntry{{name: "./usr/src/linux-headers/Makefile", data: []byte("all:\n")}})
	escape := makeTar(t, append(fakeKernelTree(), tarEntry{name: "./boot/../../escaped", data: []byte("x")}))
	absolute := makeTar(t, append(fakeKernelTree(), tarEntry{name: "/tmp/escaped", data: []byte("x")}))
	linkOut := makeTar(t, append(fakeKernelTree(), tarEntry{name: "./boot/link", typ: tar.TypeLink, linkname: "../../etc/passwd"}))
	full := makeDeb("data.tar", makeTar(t, fakeKernelTree()))

	tests := []struct {
		name     string
		deb      []byte
		want     error // nil: any error will do
		mentions string
	}{
		{"no vmlinuz", makeDeb("data.tar.gz", gzipBytes(t, headers)), ErrNotKernel, "no boot/vmlinuz-*"},
		{"bzip2", makeDeb("data.tar.bz2", []byte("BZh9")), wire.ErrNotSupported, "bz2"},
		{"no data member", makeAr(arMember{"debian-binary", []byte("2.0\n")}), ErrNotKernel, "without a data.tar"},
		{"truncated", full[:len(full)-100], ErrNotKernel, "truncated .deb"},
		{"path traversal", makeDeb("data.tar", escape), nil, "unsafe entry name"},
		{"absolute path", makeDeb("data.tar", absolute), nil, "unsafe entry name"},
		{"hard link out", makeDeb("data.tar", linkOut), nil, "outside the package"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache := filepath.Join(t.TempDir(), "cache")
			k, err := Resolve(writeFile(t, t.TempDir(), "x.deb", tt.deb), cache)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("Resolve(%s deb) = %+v, %v; want error wrapping %v", tt.name, k, err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.mentions) {
				t.Errorf("Resolve(%s deb) error = %q; want it to mention %q", tt.name, err, tt.mentions)
			}
			// Nothing half-unpacked may stay in the cache, and nothing
			// may land outside it.
			left, _ := filepath.Glob(filepath.Join(cache, "kernels", "*deb-*"))
			for _, l := range left {
				if !strings.HasSuffix(l, ".lock") {
					t.Errorf("after a failed unpack the cache holds %s", l)
				}
			}
			for _, p := range []string{filepath.Join(cache, "escaped"), filepath.Join(cache, "kernels", "escaped"), "/tmp/escaped"} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("unpacking wrote %s outside its directory", p)
				}
			}
		})
	}
}

func TestEntryPath(t *testing.T) {
	for _, tt := range []struct {
		name, want string
		ok         bool
	}{
		{"./", "", true},
		{".", "", true},
		{"./boot/vmlinuz-6.1", "boot/vmlinuz-6.1", true},
		{"boot/../lib/x", "lib/x", true},
		{"./lib/modules/", "lib/modules", true},
		{"../x", "", false},
		{"./a/../../x", "", false},
		{"/etc/passwd", "", false},
		{"a\\..\\..\\x", "", false},
		{"", "", false},
	} {
		got, err := entryPath(tt.name)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("entryPath(%q) = %q, %v; want %q, ok=%v", tt.name, got, err, tt.want, tt.ok)
		}
	}
}

// An image finds the vmlinux of its build: in the build directory, or kept
// beside it as boot/vmlinux-<release>.
func TestBuildVmlinux(t *testing.T) {
	dir := t.TempDir()
	image := filepath.Join(dir, "arch", "x86", "boot", "bzImage")
	os.MkdirAll(filepath.Dir(image), 0o755)
	os.WriteFile(image, nil, 0o644)
	if got := BuildVmlinux(image); got != "" {
		t.Errorf("BuildVmlinux(%s) without a vmlinux = %q; want \"\"", image, got)
	}
	os.WriteFile(filepath.Join(dir, "vmlinux"), nil, 0o644)
	if got, want := BuildVmlinux(image), filepath.Join(dir, "vmlinux"); got != want {
		t.Errorf("BuildVmlinux(%s) = %q; want %q", image, got, want)
	}
	if got := BuildVmlinux(filepath.Join(dir, "vmlinuz")); got != "" {
		t.Errorf("BuildVmlinux(a vmlinuz outside a build directory) = %q; want \"\"", got)
	}
	kept := filepath.Join(dir, "boot", "vmlinuz-6.12.0")
	os.MkdirAll(filepath.Dir(kept), 0o755)
	if got := BuildVmlinux(kept); got != "" {
		t.Errorf("BuildVmlinux(%s) without vmlinux-6.12.0 = %q; want \"\"", kept, got)
	}
	os.WriteFile(filepath.Join(dir, "boot", "vmlinux-6.12.0"), nil, 0o644)
	if got, want := BuildVmlinux(kept), filepath.Join(dir, "boot", "vmlinux-6.12.0"); got != want {
		t.Errorf("BuildVmlinux(%s) = %q; want %q", kept, got, want)
	}
}

package kernel

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// fakeModuleFor returns a module for fakeRelease that depends on deps.
func fakeModuleFor(deps ...string) []byte {
	return fakeModule("license=GPL", "depends="+strings.Join(deps, ","), "vermagic="+fakeRelease+" SMP mod_unload modversions ")
}

// modulesKernel returns a Kernel whose modules directory holds the given
// files (paths relative to it).
func modulesKernel(t *testing.T, files map[string][]byte) *Kernel {
	dir := t.TempDir()
	for rel, data := range files {
		writeFile(t, dir, rel, data)
	}
	return &Kernel{Input: "test-kernel", Release: fakeRelease, ModulesDir: dir}
}

func moduleNames(mods []Module) []string {
	var names []string
	for _, m := range mods {
		names = append(names, m.Name)
	}
	return names
}

// checkLoadOrder fails unless every module in mods comes after the modules
// its .modinfo says it depends on (or they are built in), and its file is a
// plain module.
func checkLoadOrder(t *testing.T, mods []Module, builtin ...string) {
	t.Helper()
	loaded := map[string]bool{}
	for _, b := range builtin {
		loaded[b] = true
	}
	for _, m := range mods {
		info, err := readModinfo(m.Path)
		if err != nil {
			t.Errorf("module %s: %v", m.Name, err)
			continue
		}
		for _, d := range info.depends {
			if !loaded[moduleName(d)] {
				t.Errorf("load order %v: %s comes before its dependency %s", moduleNames(mods), m.Name, d)
			}
		}
		loaded[m.Name] = true
	}
}

func TestModulesForOrdersDependenciesFirst(t *testing.T) {
	k := modulesKernel(t, map[string][]byte{
		"modules.order": []byte("kernel/drivers/virtio/virtio_ring.ko\nkernel/drivers/virtio/virtio.ko\n" +
			"kernel/drivers/virtio/virtio_pci.ko\nkernel/drivers/char/virtio_console.ko\n"),
		"modules.builtin":                       []byte("kernel/lib/crc32.ko\n"),
		"kernel/drivers/virtio/virtio_ring.ko":  fakeModuleFor(),
		"kernel/drivers/virtio/virtio.ko":       fakeModuleFor("virtio_ring"),
		"kernel/drivers/virtio/virtio_pci.ko":   fakeModuleFor("virtio_ring", "virtio-pci-modern-dev", "virtio"),
		"kernel/drivers/char/virtio_console.ko": fakeModuleFor("virtio", "virtio_ring", "crc32"),
		// Not in modules.order: found by walking the tree.
		"kernel/drivers/virtio/virtio-pci-modern-dev.ko": fakeModuleFor(),
	})
	mods, err := k.ModulesFor(t.TempDir(), "virtio_pci", "virtio-console")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"virtio_ring", "virtio_pci_modern_dev", "virtio", "virtio_pci", "virtio_console"}
	if got := moduleNames(mods); !slices.Equal(got, want) {
		t.Errorf("ModulesFor(virtio_pci, virtio-console) = %v; want %v", got, want)
	}
	checkLoadOrder(t, mods, "crc32")
	// Plain modules are used where they are.
	if want := filepath.Join(k.ModulesDir, "kernel", "drivers", "virtio", "virtio_ring.ko"); mods[0].Path != want {
		t.Errorf("ModulesFor: virtio_ring at %s; want %s", mods[0].Path, want)
	}
}

func TestModulesForBuiltin(t *testing.T) {
	k := modulesKernel(t, map[string][]byte{
		"modules.builtin": []byte("kernel/drivers/virtio/virtio_pci.ko\nkernel/drivers/char/virtio_console.ko\n"),
	})
	mods, err := k.ChannelModules(t.TempDir())
	if err != nil || len(mods) != 0 {
		t.Errorf("ChannelModules(built in) = %v, %v; want [], nil", mods, err)
	}
}

func TestModulesForBuildTree(t *testing.T) {
	// Build trees list .o files in modules.order (Linux 6.2+), next to the .ko.
	dir := makeBuildDir(t)
	writeFile(t, dir, "drivers/virtio/virtio_pci.ko", fakeModuleFor())
	writeFile(t, dir, "drivers/virtio/virtio_pci.o", []byte("object"))
	writeFile(t, dir, "drivers/char/virtio_console.ko", fakeModuleFor("virtio"))
	k, err := Resolve(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	mods, err := k.ChannelModules("")
	if err != nil {
		t.Fatal(err)
	}
	want := []Module{
		{"virtio_pci", filepath.Join(dir, "drivers", "virtio", "virtio_pci.ko")},
		{"virtio_console", filepath.Join(dir, "drivers", "char", "virtio_console.ko")},
	}
	if !slices.Equal(mods, want) {
		t.Errorf("ChannelModules(build dir) = %v; want %v", mods, want)
	}
}

func TestModulesForDecompresses(t *testing.T) {
	plain := fakeModuleFor()
	var xzBuf, zstBuf bytes.Buffer
	xw, _ := xz.NewWriter(&xzBuf)
	xw.Write(plain)
	if err := xw.Close(); err != nil {
		t.Fatal(err)
	}
	zw, _ := zstd.NewWriter(&zstBuf)
	zw.Write(plain)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	k := modulesKernel(t, map[string][]byte{
		"modules.order":       []byte("kernel/a.ko\nkernel/b.ko\nkernel/c.ko\n"),
		"kernel/a.ko.xz":      xzBuf.Bytes(),
		"kernel/b.ko.gz":      gzipBytes(t, plain),
		"kernel/c.ko.zst":     zstBuf.Bytes(),
		"kernel/broken.ko.xz": xzBuf.Bytes()[:xzBuf.Len()/2],
	})
	cache := t.TempDir()
	for _, name := range []string{"a", "b", "c"} {
		mods, err := k.ModulesFor(cache, name)
		if err != nil {
			t.Fatal(err)
		}
		if len(mods) != 1 {
			t.Fatalf("ModulesFor(%s) = %v; want one module", name, mods)
		}
		got, err := os.ReadFile(mods[0].Path)
		if err != nil || !bytes.Equal(got, plain) || !strings.HasPrefix(mods[0].Path, cache) || filepath.Base(mods[0].Path) != name+".ko" {
			t.Errorf("ModulesFor(%s) = %s (%d bytes, %v); want the decompressed %s.ko in the cache", name, mods[0].Path, len(got), err, name)
		}
		// A second call reuses the cached copy.
		again, err := k.ModulesFor(cache, name)
		if err != nil || again[0].Path != mods[0].Path {
			t.Errorf("ModulesFor(%s) again = %v, %v; want %v", name, again, err, mods)
		}
	}
	if _, err := k.ModulesFor(cache, "broken"); err == nil {
		t.Errorf("ModulesFor(truncated .ko.xz) succeeded; want an error")
	}
	tmps, _ := filepath.Glob(filepath.Join(cache, "kernels", "modules", "*", ".*tmp*"))
	if len(tmps) > 0 {
		t.Errorf("failed decompression left temporary files %v", tmps)
	}
	// Compressed modules need a cache.
	if _, err := k.ModulesFor("", "a"); err == nil {
		t.Errorf("ModulesFor(no cache, compressed module) succeeded; want an error")
	}
}

func TestModulesForErrors(t *testing.T) {
	otherRelease := fakeModule("depends=", "vermagic=6.8.0-other SMP mod_unload ")
	k := modulesKernel(t, map[string][]byte{
		"modules.builtin":  []byte("kernel/lib/builtin.ko\n"),
		"kernel/a.ko":      fakeModuleFor("b"),
		"kernel/b.ko":      fakeModuleFor("c"),
		"kernel/c.ko":      fakeModuleFor("a"),
		"kernel/needs.ko":  fakeModuleFor("missing"),
		"kernel/stale.ko":  otherRelease,
		"kernel/notelf.ko": []byte("text"),
		"kernel/nomodinfo.ko": func() []byte {
			b := fakeModule()
			return bytes.Replace(b, []byte(".modinfo"), []byte(".notinfo"), 1)
		}(),
	})
	tests := []struct {
		name     string
		want     error
		mentions string
	}{
		{"a", nil, "cycle a → b → c → a"},
		{"missing", ErrModuleNotFound, `module "missing": module not found: neither built in`},
		{"needs", ErrModuleNotFound, `module "missing" (needed by "needs")`},
		{"stale", ErrModuleNotFound, "built for release 6.8.0-other, the kernel is " + fakeRelease},
		{"notelf", nil, "not an ELF"},
		{"nomodinfo", nil, "no .modinfo"},
	}
	for _, tt := range tests {
		mods, err := k.ModulesFor(t.TempDir(), tt.name)
		if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
			t.Errorf("ModulesFor(%s) = %v, %v; want error wrapping %v", tt.name, mods, err, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.mentions) {
			t.Errorf("ModulesFor(%s) error = %q; want it to mention %q", tt.name, err, tt.mentions)
		}
	}
	if mods, err := k.ModulesFor("", "builtin"); err != nil || len(mods) != 0 {
		t.Errorf("ModulesFor(builtin) = %v, %v; want [], nil", mods, err)
	}
}

func TestChannelModulesWithoutModulesDir(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		config   string // "" for none
		want     error  // nil: success with no modules
		mentions string
	}{
		{"", ErrModulesUnknown, "no lib/modules/" + fakeRelease},
		{"CONFIG_VIRTIO_PCI=y\nCONFIG_VIRTIO_CONSOLE=y\n", nil, ""},
		{"CONFIG_VIRTIO_PCI=y\nCONFIG_VIRTIO_CONSOLE=m\n", ErrModulesUnknown, "no lib/modules"},
		{"CONFIG_VIRTIO_PCI=y\n# CONFIG_VIRTIO_CONSOLE is not set\n", ErrModulesUnknown, "CONFIG_VIRTIO_CONSOLE is not set"},
	} {
		k := &Kernel{Input: "bzImage", Release: fakeRelease}
		if tt.config != "" {
			k.ConfigPath = writeFile(t, dir, "config", []byte(tt.config))
		}
		mods, err := k.ChannelModules(t.TempDir())
		if tt.want == nil {
			if err != nil || len(mods) != 0 {
				t.Errorf("ChannelModules(config %q) = %v, %v; want [], nil", tt.config, mods, err)
			}
			continue
		}
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.mentions) {
			t.Errorf("ChannelModules(config %q) = %v, %v; want error wrapping %v mentioning %q", tt.config, mods, err, tt.want, tt.mentions)
		}
	}
}

func TestModuleName(t *testing.T) {
	for in, want := range map[string]string{
		"virtio_pci":                                 "virtio_pci",
		"virtio-pci":                                 "virtio_pci",
		"kernel/drivers/virtio/virtio_pci.ko":        "virtio_pci",
		"virtio_net.ko.xz":                           "virtio_net",
		"drivers/char/hw_random/virtio-rng.o":        "virtio_rng",
		"kernel/arch/x86/crypto/crc32-pclmul.ko.zst": "crc32_pclmul",
	} {
		if got := moduleName(in); got != want {
			t.Errorf("moduleName(%q) = %q; want %q", in, got, want)
		}
	}
}

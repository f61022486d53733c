package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestReadLoadOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "load-order")
	os.WriteFile(path, []byte("/lib/modules/lpmbisect/virtio_ring.ko\n\n# comment\n  /lib/modules/lpmbisect/virtio.ko  \n"), 0o644)
	got, err := readLoadOrder(path)
	want := []string{"/lib/modules/lpmbisect/virtio_ring.ko", "/lib/modules/lpmbisect/virtio.ko"}
	if err != nil || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("readLoadOrder() = %q, %v; want %q", got, err, want)
	}
}

func TestLoadModulesWithoutOrderFile(t *testing.T) {
	summary, problems := loadModules(filepath.Join(t.TempDir(), "load-order"))
	if summary != "" || problems != nil {
		t.Errorf("loadModules(missing file) = %q, %q; want nothing", summary, problems)
	}
}

func TestLoadModuleNotAModule(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("finit_module needs root")
	}
	path := filepath.Join(t.TempDir(), "bogus.ko")
	os.WriteFile(path, []byte("not an ELF file"), 0o644)
	err := loadModule(path)
	if err == nil || errors.Is(err, unix.EEXIST) {
		t.Errorf("loadModule(bogus.ko) = %v; want an error", err)
	}
}

func TestModuleName(t *testing.T) {
	for in, want := range map[string]string{
		"/lib/modules/lpmbisect/virtio_pci.ko":    "virtio_pci",
		"/lib/modules/lpmbisect/virtio_pci.ko.xz": "virtio_pci",
		"virtio.ko": "virtio",
	} {
		if got := moduleName(in); got != want {
			t.Errorf("moduleName(%q) = %q; want %q", in, got, want)
		}
	}
}

package insight

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestSymbolFile(t *testing.T) {
	dir := t.TempDir()
	elf := filepath.Join(dir, "vmlinux")
	os.WriteFile(elf, []byte("\x7fELF\x02\x01\x01\x00rest"), 0o644)
	deb := filepath.Join(dir, "linux-image-6.1.0-57-cloud-amd64-dbg.deb")
	os.WriteFile(deb, []byte("!<arch>\ndebian-binary"), 0o644)
	if in, err := SymbolFile(elf); err != nil || in.Vmlinux != elf || in.DebugPackage != "" {
		t.Errorf("SymbolFile(ELF) = %+v, %v; want a vmlinux", in, err)
	}
	if in, err := SymbolFile(deb); err != nil || in.DebugPackage != deb || in.Vmlinux != "" {
		t.Errorf("SymbolFile(.deb) = %+v, %v; want a debug package", in, err)
	}
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("neither"), 0o644)
	if _, err := SymbolFile(text); err == nil {
		t.Errorf("SymbolFile(text): no error; want neither a vmlinux nor a package")
	}
	if _, err := SymbolFile(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("SymbolFile(missing) = %v; want ErrNotExist", err)
	}
}

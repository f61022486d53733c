package kbuild

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// writeFiles writes files (path → content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, text := range files {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSameKernel reads dependency files written the way kbuild's fixdep
// writes them in a build directory inside the tree (srctree ".."), as
// lpmbisect's default build directory is.
func TestSameKernel(t *testing.T) {
	src := t.TempDir()
	dir := filepath.Join(src, ".lpmbisect-build")
	writeFiles(t, dir, map[string]string{
		".config": "CONFIG_BPF=y\n# CONFIG_LOCALVERSION_AUTO is not set\n",
		"kernel/bpf/.lpm_trie.o.cmd": "savedcmd_kernel/bpf/lpm_trie.o := gcc -Wp,-MMD,kernel/bpf/.lpm_trie.o.d -nostdinc -I../include -include ../include/linux/kconfig.h -c -o kernel/bpf/lpm_trie.o ../kernel/bpf/lpm_trie.c\n\n" +
			"source_kernel/bpf/lpm_trie.o := ../kernel/bpf/lpm_trie.c\n\n" +
			"deps_kernel/bpf/lpm_trie.o := \\\n  ../include/linux/compiler-version.h \\\n    $(wildcard include/config/CC_VERSION_TEXT) \\\n  ../include/linux/bpf.h \\\n  include/generated/autoconf.h \\\n  ../include/linux/vmalloc.h\n\n" +
			"kernel/bpf/lpm_trie.o: $(deps_kernel/bpf/lpm_trie.o)\n\n$(deps_kernel/bpf/lpm_trie.o):\n",
		".vmlinux.cmd":                 "savedcmd_vmlinux := ../scripts/link-vmlinux.sh \"ld\" \"-m elf_x86_64\" \"--script=arch/x86/kernel/vmlinux.lds\"\n",
		"include/config/auto.conf.cmd": "deps_config := \\\n\t../kernel/bpf/Kconfig \\\n\t../Kconfig\n\ninclude/config/auto.conf: $(deps_config)\n",
		"tools/objtool/.check.o.cmd":   "deps_" + "check.o := \\\n  " + filepath.Join(src, "tools/objtool/check.c") + " \\\n  " + filepath.Join(src, "tools/include/linux/list.h") + "\n",
	})
	in, err := ReadInputs(src, dir)
	if err != nil {
		t.Fatalf("ReadInputs() error: %v", err)
	}
	for _, c := range []struct {
		path string
		want bool
	}{
		{"kernel/bpf/lpm_trie.c", true},   // a source
		{"include/linux/bpf.h", true},     // a header it includes
		{"include/linux/kconfig.h", true}, // on the command line
		{"include/linux/compiler-version.h", true},
		{"kernel/bpf/Kconfig", true},         // auto.conf.cmd
		{"scripts/link-vmlinux.sh", true},    // the link's command
		{"tools/include/linux/list.h", true}, // objtool's, named absolutely
		{"kernel/bpf/Makefile", true},        // a directory kbuild built in: its Makefile
		{"kernel/bpf/hashtab.c", false},      // a source this configuration does not compile
		{"include/linux/unused.h", false},    // a header nothing includes
		{"Documentation/bpf/map_lpm_trie.rst", false},
		{"tools/testing/selftests/bpf/prog_tests/lpm_trie_map_batch_ops.c", false},
		{"tools/testing/selftests/bpf/Makefile", false}, // a directory kbuild did not enter
		{"include/generated/autoconf.h", false},         // a build output, not a source
	} {
		if got := in.Reads(c.path); got != c.want {
			t.Errorf("Reads(%s) = %v; want %v", c.path, got, c.want)
		}
	}
	if same, why := in.SameKernel([]string{"Documentation/bpf/map_lpm_trie.rst", "tools/testing/selftests/bpf/Makefile"}); !same {
		t.Errorf("SameKernel(docs, selftests) = false (%s); want true", why)
	}
	if same, why := in.SameKernel([]string{"Documentation/bpf/map_lpm_trie.rst", "kernel/bpf/lpm_trie.c"}); same || why != "kernel/bpf/lpm_trie.c is read by the build" {
		t.Errorf("SameKernel(docs, lpm_trie.c) = %v, %q; want false naming lpm_trie.c", same, why)
	}
	writeFiles(t, dir, map[string]string{".config": "CONFIG_LOCALVERSION_AUTO=y\n"})
	in, _ = ReadInputs(src, dir)
	if same, why := in.SameKernel([]string{"Documentation/bpf/map_lpm_trie.rst"}); same {
		t.Errorf("SameKernel with CONFIG_LOCALVERSION_AUTO = true; want false (%s)", why)
	}
	if _, err := ReadInputs(src, t.TempDir()); !errors.Is(err, ErrNoDependencyFiles) {
		t.Errorf("ReadInputs(empty directory) error = %v; want ErrNoDependencyFiles", err)
	}
}

// Package testkbuild fakes a kernel source tree and a make that builds it,
// for the tests of package build and of lpmbisect build: no compiler, no
// kernel source, a build in milliseconds.
//
// For tests only: internal/importrule fails any non-test file that imports
// a package of testbed/.
package testkbuild

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Options shape the fake.
type Options struct {
	// Compiler is what olddefconfig records as CONFIG_CC_VERSION_TEXT.
	Compiler string
	// Drop makes olddefconfig remove every .config line containing it, as
	// kbuild drops an option whose dependencies are missing.
	Drop string
	// Image is the content of the bzImage the build produces.
	Image string
	// CompileError is the compiler's error line when the tree has a
	// BROKEN file (no double quotes, dollars or backquotes).
	CompileError string
}

// MakeArgs is the start of a fake make's shell script: it reads make's
// arguments the way lpmbisect's builds pass them (-C SRC, O=OUT, -jN,
// VAR=VALUE) into $src, $out and $targets.
const MakeArgs = `#!/bin/sh
src= out= targets=
while [ $# -gt 0 ]; do
  case "$1" in
    -C) src=$2; shift ;;
    O=*) out=${1#O=} ;;
    -j*|*=*) ;;
    *) targets="$targets $1" ;;
  esac
  shift
done
`

// script is a make that understands just enough of kbuild: tinyconfig
// writes a small .config, olddefconfig "settles" it (dropping Options.Drop,
// adding the compiler), bzImage copies the tree's IMAGE file, or fails when
// the tree has a BROKEN file, and writes a dependency file as kbuild's
// fixdep does, naming both (so a change to any other file of the tree
// changes no file the build read). Every call is appended to calls.txt in the
// build directory.
const script = MakeArgs + `[ -n "$out" ] || out=$src
echo "$targets" >> "$out/calls.txt"
for t in $targets; do
  case "$t" in
    tinyconfig)
      printf '#\n# Automatically generated file; DO NOT EDIT.\n# Linux/x86 6.12.0 Kernel Configuration\n#\nCONFIG_BASE=y\n# CONFIG_BPF_SYSCALL is not set\n' > "$out/.config" ;;
    olddefconfig)
      grep -v '@DROP@' "$out/.config" > "$out/.config.tmp"
      echo 'CONFIG_CC_VERSION_TEXT="@COMPILER@"' >> "$out/.config.tmp"
      mv "$out/.config.tmp" "$out/.config" ;;
    bzImage)
      echo "  CC      kernel/bpf/lpm_trie.o"
      if [ -e "$src/BROKEN" ]; then
        echo "@ERROR@" >&2
        echo "make[1]: *** [kernel/bpf/lpm_trie.o] Error 1" >&2
        exit 2
      fi
      mkdir -p "$out/arch/x86/boot"
      cp "$src/IMAGE" "$out/arch/x86/boot/bzImage"
      printf 'savedcmd_arch/x86/boot/bzImage := test ! -e %s/BROKEN \&\& cp %s/IMAGE arch/x86/boot/bzImage\n\ndeps_arch/x86/boot/bzImage := \\\n  %s/IMAGE\n' "$src" "$src" "$src" > "$out/arch/x86/boot/.bzImage.cmd" ;;
    *) echo "fake make: unknown target $t" >&2; exit 2 ;;
  esac
done
`

// Tree makes a source tree (Makefile, Kconfig, IMAGE) and the fake make
// beside it in a temporary directory, and returns both paths.
func Tree(tb testing.TB, o Options) (src, mk string) {
	tb.Helper()
	dir := tb.TempDir()
	src = filepath.Join(dir, "linux")
	if err := os.MkdirAll(src, 0o755); err != nil {
		tb.Fatal(err)
	}
	for name, data := range map[string]string{"Makefile": "# fake\n", "Kconfig": "# fake\n", "IMAGE": o.Image} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(data), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	mk = filepath.Join(dir, "make")
	text := strings.NewReplacer("@DROP@", o.Drop, "@COMPILER@", o.Compiler, "@ERROR@", o.CompileError).Replace(script)
	if err := os.WriteFile(mk, []byte(text), 0o755); err != nil {
		tb.Fatal(err)
	}
	return src, mk
}

package kbuild

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/config"
	"github.com/lpmbisect/lpmbisect/testbed/testkbuild"
)

// fakeTree makes a source tree and a fake make (see testkbuild); its
// olddefconfig drops CONFIG_NEEDS_MISSING_DEP.
func fakeTree(t *testing.T) (src, mk string) {
	return testkbuild.Tree(t, testkbuild.Options{Compiler: "fakecc (Test) 1.2.3", Drop: "NEEDS_MISSING_DEP", Image: "kernel image 1\n",
		CompileError: "kernel/bpf/lpm_trie.c:42:1: error: expected ';' before '}' token"})
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestBuildOutOfTree(t *testing.T) {
	src, mk := fakeTree(t)
	out := filepath.Join(t.TempDir(), "build")
	frag := Fragment{Name: "test.config", Data: []byte("CONFIG_BPF_SYSCALL=y\nCONFIG_NEEDS_MISSING_DEP=y\n# CONFIG_BASE is not set\n")}
	r, err := Build(context.Background(), Options{Src: src, Dir: out, Make: mk, Fragments: []Fragment{frag}, MakeFlags: []string{"LLVM=1"}})
	if err != nil {
		t.Fatalf("Build() error: %v", err)
	}
	if got := readFile(t, r.Image); got != "kernel image 1\n" {
		t.Errorf("Build().Image holds %q; want the tree's image", got)
	}
	if r.Dir != out || r.Config != filepath.Join(out, ".config") || r.Log != filepath.Join(out, "lpmbisect-build.log") {
		t.Errorf("Build() = dir %s, config %s, log %s; want everything under %s", r.Dir, r.Config, r.Log, out)
	}
	if r.Compiler != "fakecc (Test) 1.2.3" {
		t.Errorf("Build().Compiler = %q; want fakecc (Test) 1.2.3", r.Compiler)
	}
	if len(r.Hash) != 64 {
		t.Errorf("Build().Hash = %q; want 64 hex digits", r.Hash)
	}
	if len(r.Dropped) != 1 || r.Dropped[0] != (Dropped{Option: "CONFIG_NEEDS_MISSING_DEP", Want: "y", Got: "n"}) {
		t.Errorf("Build().Dropped = %v; want CONFIG_NEEDS_MISSING_DEP=y dropped", r.Dropped)
	}
	config := readFile(t, r.Config)
	if !strings.Contains(config, "CONFIG_BPF_SYSCALL=y") {
		t.Errorf("final .config lacks the fragment's CONFIG_BPF_SYSCALL=y:\n%s", config)
	}
	if got := readFile(t, filepath.Join(out, "calls.txt")); got != " tinyconfig\n olddefconfig\n bzImage\n" {
		t.Errorf("make calls = %q; want tinyconfig, olddefconfig, bzImage", got)
	}
	log := readFile(t, r.Log)
	for _, want := range []string{"O=" + out, "LLVM=1", "-j", "lpm_trie.o", "fragment option not kept: CONFIG_NEEDS_MISSING_DEP"} {
		if !strings.Contains(log, want) {
			t.Errorf("build log lacks %q:\n%s", want, log)
		}
	}
	if _, err := os.Stat(filepath.Join(src, ".config")); err == nil {
		t.Errorf("an out-of-tree build wrote .config into the source tree")
	}

	// The next commit builds in the same directory.
	os.WriteFile(filepath.Join(src, "IMAGE"), []byte("kernel image 2\n"), 0o644)
	r2, err := Build(context.Background(), Options{Src: src, Dir: out, Make: mk, Fragments: []Fragment{frag}, MakeFlags: []string{"LLVM=1"}})
	if err != nil {
		t.Fatalf("second Build() error: %v", err)
	}
	if got := readFile(t, r2.Image); got != "kernel image 2\n" {
		t.Errorf("second Build().Image holds %q; want the new image", got)
	}
	if r2.Hash != r.Hash {
		t.Errorf("same options, different config hash: %s then %s", r.Hash, r2.Hash)
	}
}

func TestBuildFailureNamesLog(t *testing.T) {
	src, mk := fakeTree(t)
	os.WriteFile(filepath.Join(src, "BROKEN"), nil, 0o644)
	out := t.TempDir()
	_, err := Build(context.Background(), Options{Src: src, Dir: out, Make: mk})
	if !errors.Is(err, ErrBuildFailed) {
		t.Fatalf("Build() of a broken tree: error %v; want ErrBuildFailed", err)
	}
	log := filepath.Join(out, "lpmbisect-build.log")
	for _, want := range []string{log, "expected ';'", "bzImage"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Build() error %q does not mention %q", err, want)
		}
	}
}

func TestBuildInTreeWithBaseFile(t *testing.T) {
	src, mk := fakeTree(t)
	base := filepath.Join(t.TempDir(), "config-6.12")
	os.WriteFile(base, []byte("CONFIG_FROM_DISTRO=y\n"), 0o644)
	r, err := Build(context.Background(), Options{Src: src, Base: base, Make: mk, Fragments: []Fragment{}})
	if err != nil {
		t.Fatalf("Build() error: %v", err)
	}
	if r.Dir != src {
		t.Errorf("Build().Dir = %s; want the source tree %s", r.Dir, src)
	}
	if got := readFile(t, filepath.Join(src, "calls.txt")); got != " olddefconfig\n bzImage\n" {
		t.Errorf("make calls = %q; want olddefconfig then bzImage (the base is a file)", got)
	}
	if !strings.Contains(readFile(t, r.Config), "CONFIG_FROM_DISTRO=y") {
		t.Errorf("final .config does not start from the base file")
	}
	if len(r.Dropped) != 0 {
		t.Errorf("Build().Dropped = %v; want none without fragments", r.Dropped)
	}
}

func TestBuildBadInput(t *testing.T) {
	src, mk := fakeTree(t)
	inPlace, _ := fakeTree(t)
	os.WriteFile(filepath.Join(inPlace, ".config"), []byte("CONFIG_X=y\n"), 0o644)
	for _, c := range []struct {
		name string
		o    Options
		want string
	}{
		{"no tree", Options{Make: mk}, "no kernel source tree"},
		{"not a tree", Options{Src: t.TempDir(), Make: mk}, "not a kernel source tree"},
		{"missing base", Options{Src: src, Make: mk, Base: "/no/such/config"}, "base config"},
		{"missing make", Options{Src: src, Make: "/no/such/make", Dir: t.TempDir()}, "build-essential"},
		{"built in place", Options{Src: inPlace, Make: mk, Dir: t.TempDir()}, "mrproper"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Build(context.Background(), c.o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Build(%+v) error = %v; want one mentioning %q", c.o, err, c.want)
			}
			if errors.Is(err, ErrBuildFailed) {
				t.Errorf("Build(%+v) error wraps ErrBuildFailed; a setup mistake is not a tree that fails to build", c.o)
			}
		})
	}
}

func TestInspectConfig(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	b := filepath.Join(dir, "b")
	os.WriteFile(a, []byte("#\n# Linux/x86 6.12.1 Kernel Configuration\n#\nCONFIG_CC_VERSION_TEXT=\"gcc (Debian 12.2.0-14) 12.2.0\"\nCONFIG_BPF=y\n# CONFIG_KPROBES is not set\n"), 0o644)
	os.WriteFile(b, []byte("#\n# Linux/x86 6.12.2 Kernel Configuration\n#\nCONFIG_CC_VERSION_TEXT=\"gcc (Debian 12.2.0-14) 12.2.0\"\nCONFIG_BPF=y\n# CONFIG_KPROBES is not set\n"), 0o644)
	ia, err := InspectConfig(a)
	if err != nil {
		t.Fatal(err)
	}
	ib, _ := InspectConfig(b)
	if ia.Compiler != "gcc (Debian 12.2.0-14) 12.2.0" {
		t.Errorf("InspectConfig(a).Compiler = %q; want the gcc version text", ia.Compiler)
	}
	if ia.Hash != ib.Hash {
		t.Errorf("InspectConfig hashes differ for configs that differ only in the header: %s, %s", ia.ShortHash(), ib.ShortHash())
	}
	os.WriteFile(b, []byte("CONFIG_BPF=y\nCONFIG_KPROBES=y\n"), 0o644)
	ib, _ = InspectConfig(b)
	if ia.Hash == ib.Hash {
		t.Errorf("InspectConfig hashes equal for different options")
	}
}

func TestReadFragment(t *testing.T) {
	f, err := readFragment("builtin")
	if err != nil || f.Name != DefaultFragment.Name {
		t.Fatalf("ReadFragment(builtin) = %v, %v; want the built-in fragment", f.Name, err)
	}
	opts, err := parseFragment(f.Data)
	if err != nil {
		t.Fatalf("built-in fragment does not parse: %v", err)
	}
	have := map[string]string{}
	for _, o := range opts {
		have[o[0]] = o[1]
	}
	for _, want := range []string{"CONFIG_BPF_SYSCALL", "CONFIG_BPF_JIT", "CONFIG_VIRTIO_PCI", "CONFIG_VIRTIO_CONSOLE", "CONFIG_SERIAL_8250_CONSOLE", "CONFIG_DEVTMPFS", "CONFIG_KPROBES", "CONFIG_TRACEPOINTS", "CONFIG_PVH", "CONFIG_KERNEL_GZIP"} {
		if have[want] != "y" {
			t.Errorf("built-in fragment sets %s=%q; want y", want, have[want])
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.config")
	os.WriteFile(bad, []byte("CONFIG_OK=y\nBPF=y\n"), 0o644)
	if _, err := readFragment(bad); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("ReadFragment(bad) error = %v; want one naming line 2", err)
	}
}

// TestFromConfig checks the [build] section's path to build options: its
// fragment list read (nil: the default fragment, empty: none), a bad
// fragment a *FragmentError, negative jobs refused with the key.
func TestFromConfig(t *testing.T) {
	extra := filepath.Join(t.TempDir(), "extra.config")
	os.WriteFile(extra, []byte("CONFIG_EXTRA=y\n"), 0o644)
	b := config.Build{Base: "defconfig", Make: "gmake", MakeFlags: []string{"LLVM=1"}, Jobs: 3, Fragments: []string{"builtin", extra}}
	o, err := FromConfig(b)
	if err != nil || o.Base != "defconfig" || o.Make != "gmake" || !slices.Equal(o.MakeFlags, b.MakeFlags) || o.Jobs != 3 ||
		len(o.Fragments) != 2 || o.Fragments[0].Name != DefaultFragment.Name || o.Fragments[1].Name != extra {
		t.Errorf("FromConfig(%+v) = %+v, %v", b, o, err)
	}
	for _, c := range []struct {
		paths []string
		want  []Fragment
	}{{nil, nil}, {[]string{}, []Fragment{}}} {
		if got, err := ReadFragments(c.paths); err != nil || (got == nil) != (c.want == nil) || len(got) != 0 {
			t.Errorf("ReadFragments(%#v) = %#v, %v; want %#v", c.paths, got, err, c.want)
		}
	}
	var fe *FragmentError
	if _, err := FromConfig(config.Build{Fragments: []string{filepath.Join(t.TempDir(), "missing.config")}}); !errors.As(err, &fe) {
		t.Errorf("FromConfig with a missing fragment: %v; want a *FragmentError", err)
	}
	var ve *config.ValueError
	if _, err := FromConfig(config.Build{Jobs: -1}); !errors.As(err, &ve) || ve.Key != "build.jobs" {
		t.Errorf("FromConfig with jobs -1: %v; want the ValueError of build.jobs", err)
	}
}

// TestBuildKeepsConfiguration checks that a build directory is configured
// once per configuration key: the next build with the same options runs
// make bzImage alone; other fragments, other make flags or a .config
// edited by hand configure it again.
func TestBuildKeepsConfiguration(t *testing.T) {
	src, mk := fakeTree(t)
	out := filepath.Join(t.TempDir(), "build")
	frag := Fragment{Name: "test.config", Data: []byte("CONFIG_BPF_SYSCALL=y\n")}
	o := Options{Src: src, Dir: out, Make: mk, Fragments: []Fragment{frag}, Ccache: ccacheOff}
	build := func(o Options, wantCalls string, wantConfigured bool) *Result {
		t.Helper()
		os.Remove(filepath.Join(out, "calls.txt"))
		r, err := Build(context.Background(), o)
		if err != nil {
			t.Fatalf("Build() error: %v", err)
		}
		if got := readFile(t, filepath.Join(out, "calls.txt")); got != wantCalls {
			t.Errorf("make calls = %q; want %q", got, wantCalls)
		}
		if r.Configured != wantConfigured {
			t.Errorf("Build().Configured = %v; want %v", r.Configured, wantConfigured)
		}
		return r
	}
	const all, buildOnly = " tinyconfig\n olddefconfig\n bzImage\n", " bzImage\n"
	first := build(o, all, true)
	second := build(o, buildOnly, false)
	if second.Hash != first.Hash || len(second.Dropped) != len(first.Dropped) {
		t.Errorf("kept configuration: hash %s, dropped %v; want %s, %v as configured", second.ShortHash(), second.Dropped, first.ShortHash(), first.Dropped)
	}
	if log := readFile(t, second.Log); !strings.Contains(log, "not configured again") {
		t.Errorf("build log does not say the configuration was kept:\n%s", log)
	}
	o2 := o
	o2.Fragments = []Fragment{frag, {Name: "more.config", Data: []byte("CONFIG_MORE=y\n")}}
	build(o2, all, true)
	build(o2, buildOnly, false)
	o3 := o2
	o3.MakeFlags = []string{"W=1"}
	build(o3, all, true)
	config := filepath.Join(out, ".config")
	os.WriteFile(config, append([]byte(readFile(t, config)), "CONFIG_BY_HAND=y\n"...), 0o644)
	r := build(o3, all, true)
	if strings.Contains(readFile(t, config), "CONFIG_BY_HAND") {
		t.Errorf("a .config edited by hand was kept")
	}
	if log := readFile(t, r.Log); !strings.Contains(log, ".config changed since the last build") {
		t.Errorf("build log does not say why it configured again:\n%s", log)
	}

	// A tree that does not compile keeps the configuration too: the next
	// commit of a bisection builds at once.
	os.WriteFile(filepath.Join(src, "BROKEN"), nil, 0o644)
	os.Remove(filepath.Join(out, "calls.txt"))
	if _, err := Build(context.Background(), o3); !errors.Is(err, ErrBuildFailed) {
		t.Fatalf("Build() of a broken tree: %v; want ErrBuildFailed", err)
	}
	os.Remove(filepath.Join(src, "BROKEN"))
	build(o3, buildOnly, false)
}

// TestBuildCcache checks that the compiler is wrapped in the ccache given
// and that the log says how the build used the cache, from ccache's
// counters before and after.
func TestBuildCcache(t *testing.T) {
	src, mk := fakeTree(t)
	out := filepath.Join(t.TempDir(), "build")
	// Every --print-stats call counts 5 more hits and 1 more miss.
	ccache := filepath.Join(t.TempDir(), "ccache")
	script := "#!/bin/sh\nn=$(cat \"$0.n\" 2>/dev/null || echo 0)\nn=$((n+1))\necho $n > \"$0.n\"\n" +
		"printf 'direct_cache_hit\\t%d\\npreprocessed_cache_hit\\t%d\\ncache_miss\\t%d\\nfiles_in_cache\\t9\\n' $((n*3)) $((n*2)) $n\n"
	if err := os.WriteFile(ccache, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := Build(context.Background(), Options{Src: src, Dir: out, Make: mk, MakeFlags: []string{"LLVM=1"}, Ccache: ccache})
	if err != nil {
		t.Fatalf("Build() error: %v", err)
	}
	if r.Ccache == nil || *r.Ccache != (CcacheUse{Hits: 5, Misses: 1}) {
		t.Errorf("Build().Ccache = %v; want 5 hits, 1 miss", r.Ccache)
	}
	log := readFile(t, r.Log)
	for _, want := range []string{"CC=" + ccache + " clang", "ccache: 5 hits, 1 misses (83.3% hit rate)"} {
		if !strings.Contains(log, want) {
			t.Errorf("build log lacks %q:\n%s", want, log)
		}
	}
	// ccache changes no object: the configuration is kept without it.
	r, err = Build(context.Background(), Options{Src: src, Dir: out, Make: mk, MakeFlags: []string{"LLVM=1"}, Ccache: ccacheOff})
	if err != nil || r.Configured || r.Ccache != nil {
		t.Errorf("Build() without ccache = configured %v, ccache %v, %v; want the configuration kept, no ccache", r.Configured, r.Ccache, err)
	}
}

func TestCompilerOf(t *testing.T) {
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{nil, "gcc"},
		{[]string{"LLVM=1"}, "clang"},
		{[]string{"LLVM=-15"}, "clang-15"},
		{[]string{"LLVM=/opt/llvm/bin/"}, "/opt/llvm/bin/clang"},
		{[]string{"LLVM=1", "CC=ccache clang"}, "ccache clang"},
		{[]string{"W=1", "CC=gcc-12"}, "gcc-12"},
	} {
		if got := compilerOf(c.flags); got != c.want {
			t.Errorf("compilerOf(%q) = %q; want %q", c.flags, got, c.want)
		}
	}
	if flags, used := withCcache([]string{"CC=ccache gcc"}, "/usr/bin/ccache"); used != "" || len(flags) != 1 {
		t.Errorf("withCcache of a wrapped compiler = %q, %q; want it left alone", flags, used)
	}
}

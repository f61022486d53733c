package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/lpmbisect/lpmbisect/config"
	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/internal/interrupt"
	"github.com/lpmbisect/lpmbisect/testbed/testkbuild"
)

// fakeKernelTree makes a source tree and a fake make (see testkbuild)
// whose olddefconfig drops CONFIG_BPF_SYSCALL, an option of the fragment.
func fakeKernelTree(t *testing.T) (src, mk string) {
	return testkbuild.Tree(t, testkbuild.Options{Compiler: "fakecc 9", Drop: "BPF_SYSCALL", Image: "image\n",
		CompileError: "lpm_trie.c:1:1: error: broken"})
}

func TestBuildCommand(t *testing.T) {
	src, mk := fakeKernelTree(t)
	out := filepath.Join(t.TempDir(), "copy.bzImage")
	code, stdout, stderr := runCLI(t, "build", "--make", mk, "--out", out, src)
	if code != 0 {
		t.Fatalf("lpmbisect build: exit %d\n%s", code, stderr)
	}
	dir := filepath.Join(src, campaign.DefaultBuildDir)
	if got := strings.TrimSpace(stdout); got != dir {
		t.Errorf("lpmbisect build printed %q; want the build directory %s", got, dir)
	}
	if data, _ := os.ReadFile(out); string(data) != "image\n" {
		t.Errorf("--out holds %q; want the bzImage", data)
	}
	for _, want := range []string{"fakecc 9", "config ", "lpmbisect-build.log", "warning: config fragment option not kept: CONFIG_BPF_SYSCALL"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("lpmbisect build stderr lacks %q:\n%s", want, stderr)
		}
	}

	os.WriteFile(filepath.Join(src, "BROKEN"), nil, 0o644)
	code, _, stderr = runCLI(t, "build", "--make", mk, src)
	if code != exitBuildFailed || !strings.Contains(stderr, filepath.Join(dir, "lpmbisect-build.log")) || !strings.Contains(stderr, "error: broken") {
		t.Errorf("lpmbisect build of a broken tree: exit %d; want %d naming the log and the error\n%s", code, exitBuildFailed, stderr)
	}
}

func TestBuildCommandConfig(t *testing.T) {
	src, mk := fakeKernelTree(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "k.toml")
	os.WriteFile(cfg, []byte("[build]\nsrc = \""+src+"\"\nmake = \""+mk+"\"\nbuild_dir = \"out\"\n"), 0o644)
	code, stdout, stderr := runCLI(t, "build", "--config", cfg)
	if code != 0 || strings.TrimSpace(stdout) != filepath.Join(dir, "out") {
		t.Errorf("lpmbisect build --config: exit %d, printed %q; want 0 and %s (build_dir relative to the file)\n%s", code, stdout, filepath.Join(dir, "out"), stderr)
	}
	os.WriteFile(cfg, []byte("[build]\nmkae = \"x\"\n"), 0o644)
	code, _, stderr = runCLI(t, "build", "--config", cfg, src)
	if code != exitUsage || !strings.Contains(stderr, "build.mkae") {
		t.Errorf("lpmbisect build --config with an unknown key: exit %d; want %d naming build.mkae\n%s", code, exitUsage, stderr)
	}
}

// Every configuration key names a flag of a command that reads --config.
// Every configuration key but the [[series]] and [[kernel]] entries (read
// by the commands that use them) stands for a flag of some command, with
// the key's name in dashes.
func TestConfigKeysAreFlags(t *testing.T) {
	flags := map[string]bool{}
	defaults := config.Defaults()
	for _, cmd := range newApp(&invocation{File: &defaults}, io.Discard, io.Discard).Commands {
		for _, f := range cmd.Flags {
			for _, n := range f.Names() {
				flags[n] = true
			}
		}
	}
	renamed := map[string]string{"bench.select": "bench", "build.base": "base-config", "build.fragments": "fragment",
		"build.make_flags": "make-flag", "build.command": "build-command", "serve.host_names": "host-name"}
	for _, key := range config.Keys() {
		sec, name, _ := strings.Cut(key, ".")
		if sec == "series" || sec == "kernel" || sec == "nightly" {
			continue
		}
		flag := strings.ReplaceAll(name, "_", "-")
		if r, ok := renamed[key]; ok {
			flag = r
		}
		if !flags[flag] {
			t.Errorf("config key %s stands for --%s, which no command has", key, flag)
		}
	}
}

func TestBisectRunUsageAborts(t *testing.T) {
	repo := t.TempDir()
	if out, err := exec.Command("git", "-C", repo, "init", "-q").CombinedOutput(); err != nil {
		t.Skipf("git: %v %s", err, out)
	}
	guest := fakeGuest(t)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"bisect-run", "--no-such-flag"}, "no-such-flag"},
		{"arguments", []string{"bisect-run", "--guest", guest, "--src", repo, "extra"}, "no arguments"},
		{"not a repository", []string{"bisect-run", "--guest", guest, "--src", t.TempDir()}, "git"},
		{"no endpoints", []string{"bisect-run", "--guest", guest, "--src", repo}, "no good endpoint"},
		{"bad accel", []string{"bisect-run", "--guest", guest, "--accel", "hvf", "--src", repo}, "accel"},
		{"parallel wall time", []string{"bisect-run", "--guest", guest, "--accel", "tcg", "--parallel", "2", "--src", repo}, "--parallel"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, c.args...)
			if code != exitRunAbort || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "(exit 255 aborts git bisect run)") {
				t.Errorf("lpmbisect %s: exit %d; want %d (aborts git bisect run) with %q\n%s", strings.Join(c.args, " "), code, exitRunAbort, c.want, stderr)
			}
		})
	}
}

// TestBisectRunCode: bisect-run exits with its verdict's code or a
// signal's, and with 255 for everything else, whatever code the error
// would give another command.
func TestBisectRunCode(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want int
	}{
		{"good", nil, campaign.ExitGood},
		{"bad", &exitError{code: campaign.ExitBad, err: errors.New("BAD"), verdict: true}, campaign.ExitBad},
		{"skip", &exitError{code: campaign.ExitSkip, err: errors.New("SKIP"), verdict: true}, campaign.ExitSkip},
		{"usage", usageError("--boots 0"), exitRunAbort},
		{"regression code without a verdict", &exitError{code: exitRegression, err: errors.New("x")}, exitRunAbort},
		{"infrastructure", errors.New("QEMU died"), exitRunAbort},
		{"SIGTERM", fmt.Errorf("boot: %w", &interrupt.Error{Signal: syscall.SIGTERM}), exitSIGTERM},
	} {
		if got, _ := bisectRunCode(c.err, exitCode(c.err), ""); got != c.want {
			t.Errorf("%s: exit %d; want %d", c.name, got, c.want)
		}
	}
}

func TestBisectUsage(t *testing.T) {
	guest := fakeGuest(t)
	// Two kernels by their magic (a probe could not boot them).
	dir := t.TempDir()
	for _, deb := range []string{"a.deb", "b.deb"} {
		os.WriteFile(filepath.Join(dir, deb), []byte("!<arch>\n"), 0o644)
	}
	kernels := filepath.Join(dir, "kernels.txt")
	os.WriteFile(kernels, []byte("a.deb\nb.deb\n"), 0o644)
	for _, c := range []struct {
		name        string
		args        []string
		want        string
		beforeSetup bool
	}{
		{"nothing to bisect", []string{"bisect", "--guest", guest}, "--repo", false},
		{"both", []string{"bisect", "--guest", guest, "--repo", ".", "--images", "."}, "not both", false},
		{"no good", []string{"bisect", "--guest", guest, "--repo", t.TempDir(), "--bad", "HEAD"}, "--good", false},
		{"missing image", []string{"bisect", "--guest", guest, "--images", "/no/such/kernel", "--images", "/no/other"}, "no such file", false},
		{"min effect", []string{"bisect", "--guest", guest, "--images", ".", "--min-effect", "0"}, "--min-effect", false},
		// Refused before the set-up, which may boot the good end to probe KVM.
		{"memory plugin", []string{"bisect", "--guest", guest, "--images", kernels, "--cache-dir", t.TempDir(), "--memory-plugin", "/no/such/plugin.so"}, "--memory-plugin: stat /no/such/plugin.so", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, c.args...)
			if code != exitUsage || !strings.Contains(stderr, c.want) {
				t.Errorf("lpmbisect %s: exit %d; want %d with %q\n%s", strings.Join(c.args, " "), code, exitUsage, c.want, stderr)
			}
			if c.beforeSetup && strings.Contains(stderr, "accel auto:") {
				t.Errorf("lpmbisect %s: refused after the accelerator was decided; want before the set-up, which may boot a probe\n%s", strings.Join(c.args, " "), stderr)
			}
		})
	}
}

func TestBisectHelp(t *testing.T) {
	for _, cmd := range []string{"build", "bisect-run", "bisect"} {
		code, out, _ := runCLI(t, cmd, "--help")
		if code != 0 || !strings.Contains(out, "Examples:") {
			t.Errorf("lpmbisect %s --help: exit %d, no examples:\n%s", cmd, code, out)
		}
	}
	_, out, _ := runCLI(t, "bisect-run", "--help")
	for _, code := range []string{"125", "255", "130"} {
		if !strings.Contains(out, code) {
			t.Errorf("bisect-run --help does not document exit code %s", code)
		}
	}
}

// TestConfigListKeys sets every list-valued key from a file (build
// fragments and make_flags, bisect images) and checks that each reaches its
// command as the list it is, not as text (they once reached the flags as
// "sl:::[…]").
func TestConfigListKeys(t *testing.T) {
	src, mk := fakeKernelTree(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "extra.config"), []byte("CONFIG_LPMBISECT_LIST_TEST=y\n"), 0o644)
	cfg := filepath.Join(dir, "k.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`[build]
src = %q
make = %q
build_dir = "out"
make_flags = ["W=1", "KCFLAGS=-O2 -g"]
fragments = ["builtin", "extra.config"]
[bisect]
images = ["a.deb", "more/b.deb"]
`, src, mk)), 0o644)
	code, _, stderr := runCLI(t, "build", "--config", cfg)
	if code != 0 {
		t.Fatalf("lpmbisect build --config: exit %d\n%s", code, stderr)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "out", "lpmbisect-build.log"))
	// The flags stand before the target; kbuild puts a ccache wrapper
	// (CC=ccache gcc) between them where ccache is installed.
	if !regexp.MustCompile(` W=1 KCFLAGS=-O2 -g (CC=\S*ccache gcc )?tinyconfig`).MatchString(string(log)) {
		t.Errorf("build with make_flags from the file: the build log lacks \" W=1 KCFLAGS=-O2 -g tinyconfig\"\n%s", log)
	}
	if config, _ := os.ReadFile(filepath.Join(dir, "out", ".config")); !strings.Contains(string(config), "CONFIG_LPMBISECT_LIST_TEST=y") {
		t.Errorf("build with fragments = [builtin, extra.config]: .config lacks extra.config's option\n%s", config)
	}
	code, _, stderr = runCLI(t, "bisect", "--config", cfg, "--guest", fakeGuest(t))
	if code != exitUsage || !strings.Contains(stderr, filepath.Join(dir, "a.deb")) || strings.Contains(stderr, "sl:::") {
		t.Errorf("lpmbisect bisect --config with images = [a.deb, more/b.deb]: exit %d; want %d naming %s\n%s", code, exitUsage, filepath.Join(dir, "a.deb"), stderr)
	}
}

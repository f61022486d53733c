// Package build configures and builds a kernel source tree into a bootable
// bzImage, the way every lpmbisect measurement of a source tree needs it:
//
//  1. a base configuration: a make target such as tinyconfig or defconfig,
//     or a configuration file such as a distribution's /boot/config-*;
//  2. one or more config fragments on top (configs/lpmbisect.config by
//     default: virtio console, 8250 console, BPF syscall and JIT, tracing),
//     appended so that they win over the base;
//  3. make olddefconfig to settle dependencies, then a check that every
//     option of the fragments kept its value (a dropped CONFIG_BPF_SYSCALL
//     would only show up as a guest that cannot run any benchmark);
//  4. make -j bzImage.
//
// The build directory (make O=) is kept between builds: bisection checks out
// one commit after another in the same tree, and make then rebuilds only
// what changed, seconds instead of minutes. Rewriting .config with the same
// options does not rebuild anything: kbuild tracks each option separately.
//
// Everything make prints goes to a log file, whose path a failed build
// names. Every result records the compiler (CONFIG_CC_VERSION_TEXT, what the
// kernel itself was built with) and a hash of the final configuration, so
// results from different toolchains or configurations are never mixed up
// unnoticed.
//
// A Builder is how a bisection or a nightly series builds each commit:
// KbuildBuilder with Build, CommandBuilder with the user's own command, or
// a fleet's build queue (fleet.Builder). BuildKernel runs one and keeps the
// kernel it made where the next build cannot overwrite it.
package kbuild

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lpmbisect/lpmbisect/config"
	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/internal/cachefile"
	"github.com/lpmbisect/lpmbisect/internal/logtail"
	"github.com/lpmbisect/lpmbisect/internal/words"
)

// ErrBuildFailed is wrapped by Build's error when make failed: the tree does
// not build (a reason to skip a commit when bisecting), as opposed to bad
// options or a missing tree.
var ErrBuildFailed = errors.New("kernel build failed")

// Fragment is a kernel config fragment: lines such as CONFIG_BPF=y or
// "# CONFIG_X is not set".
type Fragment struct {
	Name string // where it came from, for messages
	Data []byte
}

// DefaultFragment is host/kbuild/configs/lpmbisect.config, built into the
// binary, named configs/lpmbisect.config in logs and results.
var DefaultFragment = Fragment{Name: builtinFragmentName, Data: builtinFragment}

// readFragment reads a fragment file. The name "builtin" stands for
// DefaultFragment.
func readFragment(path string) (Fragment, error) {
	if path == "builtin" {
		return DefaultFragment, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Fragment{}, fmt.Errorf("config fragment: %w", err)
	}
	if _, err := parseFragment(data); err != nil {
		return Fragment{}, fmt.Errorf("config fragment %s: %w", path, err)
	}
	return Fragment{Name: path, Data: data}, nil
}

// ReadFragments reads the fragment files paths (see readFragment): nil
// stays nil (DefaultFragment), an empty list means no fragment. Its
// errors are *FragmentError.
func ReadFragments(paths []string) ([]Fragment, error) {
	if paths == nil {
		return nil, nil
	}
	frags := []Fragment{}
	for _, p := range paths {
		frag, err := readFragment(p)
		if err != nil {
			return nil, &FragmentError{err}
		}
		frags = append(frags, frag)
	}
	return frags, nil
}

// FragmentError is a fragment file that cannot be read or parsed.
type FragmentError struct{ Err error }

func (e *FragmentError) Error() string { return e.Err.Error() }
func (e *FragmentError) Unwrap() error { return e.Err }

// FromConfig returns the options that a configuration's [build] section
// gives, its fragment files read (ReadFragments), without Src and Dir. Its
// errors are *config.ValueError and *FragmentError.
func FromConfig(b config.Build) (Options, error) {
	if err := b.Check(); err != nil {
		return Options{}, err
	}
	frags, err := ReadFragments(b.Fragments)
	if err != nil {
		return Options{}, err
	}
	return Options{Base: b.Base, Fragments: frags, Make: b.Make, MakeFlags: b.MakeFlags, Jobs: b.Jobs}, nil
}

// defaultBase is the base configuration when none is given: the smallest
// kernel that builds, which the fragment then grows into one that runs
// the benchmarks. About 4.5 minutes cold on two cores.
const defaultBase = "tinyconfig"

// Options says what to build and how.
type Options struct {
	// Src is the kernel source tree.
	Src string
	// Dir is the build directory (make O=Dir). Empty or equal to Src
	// builds in the tree itself.
	Dir string
	// Base is the base configuration: a make target ending in "config"
	// (tinyconfig, defconfig, allnoconfig, …) or a configuration file.
	// Empty means defaultBase.
	Base string
	// Fragments go on top of the base, in order. Nil means
	// DefaultFragment; an empty non-nil slice means none.
	Fragments []Fragment
	// Make is the make program; empty means "make". Tests put a fake here.
	Make string
	// MakeFlags are passed to every make call (CC=clang, LLVM=1, W=1, …).
	MakeFlags []string
	// Jobs is make's -j; 0 means the number of CPUs.
	Jobs int
	// Target is what to build; empty means bzImage.
	Target string
	// Log is the build log file; empty means LogPath(Dir).
	// It is rewritten by each build.
	Log string
	// Notes, when set, gets a warning per fragment option the final
	// configuration did not keep.
	Notes *log.Logger
	// Ccache is the ccache program that wraps the compiler (make
	// CC="ccache gcc"): empty means ccache where it is installed,
	// ccacheOff never. A compiler already wrapped is left alone.
	Ccache string
}

// LogPath is where a build in the directory buildDir writes its log, as
// every Builder does: buildDir/lpmbisect-build.log.
func LogPath(buildDir string) string { return filepath.Join(buildDir, "lpmbisect-build.log") }

// Result is a finished build.
type Result struct {
	// Image is the bootable bzImage.
	Image string
	// Dir is the build directory, which kernel.Resolve also accepts.
	Dir string
	// Config is the final .config.
	Config string
	ConfigInfo
	// Dropped lists the fragment options whose value the final .config
	// does not have.
	Dropped []Dropped
	// Log is the build log.
	Log string
	// Duration is how long configuration and build took.
	Duration time.Duration
	// Configured says the build configured the directory; false when the
	// configuration was kept from the build before (see DirFor).
	Configured bool
	// Ccache is how the build used ccache; nil without ccache.
	Ccache *CcacheUse
}

// CopyImage copies the bzImage to path, atomically: a reader never sees
// part of it, and a failed copy leaves nothing behind.
func (r *Result) CopyImage(path string) error {
	f, err := os.Open(r.Image)
	if err != nil {
		return err
	}
	defer f.Close()
	return cachefile.WriteAtomic(path, func(w io.Writer) error {
		_, err := io.Copy(w, f)
		return err
	})
}

// Summary says what the build reused: "configuration kept, ccache: 3 hits,
// 0 misses (100.0% hit rate)".
func (r *Result) Summary() string {
	s := "configured"
	if !r.Configured {
		s = "configuration kept"
	}
	if r.Ccache != nil {
		s += ", " + r.Ccache.String()
	}
	return s
}

// Dropped is a fragment option that did not keep its value.
type Dropped struct {
	Option string // CONFIG_X
	Want   string // "y", "n" (not set), "m", or a value
	Got    string // what the final .config has; "n" when absent
}

func (d Dropped) String() string {
	return fmt.Sprintf("%s=%s requested, got %s", d.Option, d.Want, d.Got)
}

// Build configures and builds the tree. Errors from make wrap
// ErrBuildFailed and name the log.
func Build(ctx context.Context, o Options) (*Result, error) {
	start := time.Now()
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("build directory: %w (choose another build directory)", err)
	}
	logf, err := os.Create(o.Log)
	if err != nil {
		return nil, fmt.Errorf("build log: %w", err)
	}
	defer logf.Close()
	b := &builder{o: o, log: logf}
	fmt.Fprintf(logf, "# lpmbisect build of %s in %s, %s\n", o.Src, o.Dir, start.Format(time.RFC3339))

	os.Remove(filepath.Join(o.Dir, lastBuiltName))
	key, err := o.configKey(ctx)
	if err != nil {
		return nil, err
	}
	b.o.MakeFlags, b.ccache = withCcache(o.MakeFlags, o.Ccache)
	config := filepath.Join(o.Dir, ".config")
	configured := !b.configured(config, key)
	if configured {
		os.Remove(filepath.Join(o.Dir, stampName))
		if err := b.configure(ctx, config); err != nil {
			return nil, err
		}
		if err := stampConfig(o.Dir, config, key); err != nil {
			return nil, err
		}
	}
	dropped, err := checkFragments(config, o.Fragments)
	if err != nil {
		return nil, err
	}
	for _, d := range dropped {
		fmt.Fprintf(logf, "# lpmbisect: fragment option not kept: %s\n", d)
	}
	var before ccacheCounters
	haveCcache := false
	if b.ccache != "" {
		before, haveCcache = readCcache(ctx, b.ccache)
	}
	err = b.make(ctx, "-j"+strconv.Itoa(o.Jobs), o.Target)
	use := b.logCcache(ctx, before, haveCcache)
	// make keeps .config in step with the tree's Kconfig files (syncconfig),
	// even when the compiler then fails: what it wrote is the configuration
	// the next build starts from.
	if serr := stampConfig(o.Dir, config, key); serr != nil && err == nil {
		err = serr
	}
	if err != nil {
		return nil, err
	}
	image := kernel.BuildImage(o.Dir)
	if _, err := os.Stat(image); err != nil {
		return nil, fmt.Errorf("%w: make %s succeeded but left no %s (see %s)", ErrBuildFailed, o.Target, image, o.Log)
	}
	info, err := InspectConfig(config)
	if err != nil {
		return nil, err
	}
	r := &Result{Image: image, Dir: o.Dir, Config: config, ConfigInfo: info, Dropped: dropped, Log: o.Log, Duration: time.Since(start),
		Configured: configured, Ccache: use}
	if o.Notes != nil {
		for _, d := range dropped {
			o.Notes.Printf("warning: config fragment option not kept: %s (a missing dependency, or a symbol this kernel does not have)", d)
		}
	}
	fmt.Fprintf(logf, "# lpmbisect: built %s in %s (compiler %q, config %s)\n", image, r.Duration.Round(time.Second), info.Compiler, info.Hash)
	return r, nil
}

func (o Options) withDefaults() (Options, error) {
	if o.Src == "" {
		return o, errors.New("build: no kernel source tree given")
	}
	src, err := filepath.Abs(o.Src)
	if err != nil {
		return o, err
	}
	o.Src = src
	for _, f := range []string{"Makefile", "Kconfig"} {
		if _, err := os.Stat(filepath.Join(src, f)); err != nil {
			return o, fmt.Errorf("build: %s is not a kernel source tree (no %s)", src, f)
		}
	}
	if o.Dir == "" {
		o.Dir = src
	}
	if o.Dir, err = filepath.Abs(o.Dir); err != nil {
		return o, err
	}
	if o.Dir != src {
		if _, err := os.Stat(filepath.Join(src, ".config")); err == nil {
			// kbuild refuses O= builds of a tree built in place; say so now,
			// not as a build failure that would skip every commit.
			return o, fmt.Errorf("build: %s has been built in place (it has a .config): give %s itself as the build directory, or clean it with make mrproper", src, src)
		}
	}
	if o.Base == "" {
		o.Base = defaultBase
	}
	if o.Fragments == nil {
		o.Fragments = []Fragment{DefaultFragment}
	}
	if o.Make == "" {
		o.Make = "make"
	}
	if o.Jobs <= 0 {
		o.Jobs = runtime.NumCPU()
	}
	if o.Target == "" {
		o.Target = "bzImage"
	}
	if o.Log == "" {
		o.Log = LogPath(o.Dir)
	}
	if !isMakeTarget(o.Base) {
		if _, err := os.Stat(o.Base); err != nil {
			return o, fmt.Errorf("build: base config %s: %w (give a file or a make target such as tinyconfig or defconfig)", o.Base, err)
		}
	}
	return o, nil
}

// isMakeTarget tells a make config target (tinyconfig) from a file.
func isMakeTarget(base string) bool {
	return !strings.ContainsRune(base, '/') && strings.HasSuffix(base, "config") && !strings.HasPrefix(base, ".")
}

type builder struct {
	o      Options
	log    io.Writer
	ccache string // the ccache program wrapping the compiler, "" for none
}

// logCcache writes how the build used ccache to the log, when it can tell.
func (b *builder) logCcache(ctx context.Context, before ccacheCounters, ok bool) *CcacheUse {
	if !ok {
		return nil
	}
	after, ok := readCcache(context.WithoutCancel(ctx), b.ccache)
	if !ok {
		return nil
	}
	use := after.since(before)
	fmt.Fprintf(b.log, "# lpmbisect: %s\n", use)
	return use
}

// configure writes the final .config: base, fragments, olddefconfig.
func (b *builder) configure(ctx context.Context, config string) error {
	if isMakeTarget(b.o.Base) {
		if err := b.make(ctx, b.o.Base); err != nil {
			return err
		}
	} else {
		data, err := os.ReadFile(b.o.Base)
		if err != nil {
			return fmt.Errorf("build: base config: %w", err)
		}
		if err := os.WriteFile(config, data, 0o644); err != nil {
			return fmt.Errorf("build: write %s: %w", config, err)
		}
	}
	if len(b.o.Fragments) > 0 {
		f, err := os.OpenFile(config, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return fmt.Errorf("build: merge config fragments: %w", err)
		}
		for _, frag := range b.o.Fragments {
			fmt.Fprintf(f, "\n# lpmbisect: fragment %s\n", frag.Name)
			f.Write(frag.Data)
			if !bytes.HasSuffix(frag.Data, []byte("\n")) {
				f.Write([]byte("\n"))
			}
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("build: merge config fragments: %w", err)
		}
	}
	return b.make(ctx, "olddefconfig")
}

// make runs make with the build's flags and targets, output to the log.
func (b *builder) make(ctx context.Context, targets ...string) error {
	args := []string{"-C", b.o.Src}
	if b.o.Dir != b.o.Src {
		args = append(args, "O="+b.o.Dir)
	}
	args = append(append(args, b.o.MakeFlags...), targets...)
	fmt.Fprintf(b.log, "# lpmbisect: %s %s\n", b.o.Make, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, b.o.Make, args...)
	cmd.Env = append(os.Environ(), reproducibleEnv()...)
	cmd.Stdout, cmd.Stderr = b.log, b.log
	// make starts compilers in its own children: end them all on cancel.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("build: make %s: %w", strings.Join(targets, " "), context.Cause(ctx))
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return fmt.Errorf("build: run %s: %w (install make and a compiler: apt-get install build-essential bc flex bison libelf-dev libssl-dev)", b.o.Make, err)
	}
	hint := ""
	if lines := errorLines(b.o.Log); lines != "" {
		hint = "; " + lines
	}
	return fmt.Errorf("%w: make %s: %w (log: %s%s)", ErrBuildFailed, strings.Join(targets, " "), err, b.o.Log, hint)
}

// reproducibleEnv fixes what kbuild would otherwise stamp into every image
// (build time, user, host, build counter), unless the caller's environment
// sets it: rebuilding a commit then gives the same image, so measurements
// cached by image hash are found again, and a commit that does not change
// the kernel gives its parent's image, which is how a bisection spots a
// suspect culprit.
func reproducibleEnv() []string {
	var env []string
	for _, kv := range []string{
		"KBUILD_BUILD_TIMESTAMP=1970-01-01 00:00:00 UTC",
		"KBUILD_BUILD_USER=lpmbisect",
		"KBUILD_BUILD_HOST=lpmbisect",
		"KBUILD_BUILD_VERSION=1",
	} {
		k, _, _ := strings.Cut(kv, "=")
		if _, set := os.LookupEnv(k); !set {
			env = append(env, kv)
		}
	}
	return env
}

// isLogMarker says whether a line of a build log is lpmbisect's own (the
// "# lpmbisect" lines it writes around make) or make's command echo, not
// the compiler's: log tails leave them out.
func isLogMarker(line string) bool {
	return strings.HasPrefix(line, "# lpmbisect") || strings.HasPrefix(line, "make")
}

// LogTail returns the last n lines of the build log at path that the
// compiler or a tool wrote, for a report of a build that failed.
func LogTail(path string, n int) []string {
	return logtail.File(path, n, isLogMarker)
}

// errorLines returns the last error lines of a build log, for the message:
// the last two that say error, else the last two.
func errorLines(path string) string {
	all := logtail.File(path, 1<<20, func(l string) bool { return strings.HasPrefix(l, "# lpmbisect") })
	var errs []string
	for _, l := range all {
		if strings.Contains(l, "error") || strings.Contains(l, "Error") {
			errs = append(errs, l)
		}
	}
	pick := errs
	if len(pick) == 0 {
		pick = all
	}
	if len(pick) > 2 {
		pick = pick[len(pick)-2:]
	}
	return strings.Join(pick, " | ")
}

// ConfigInfo identifies how a kernel was configured and compiled.
type ConfigInfo struct {
	// Compiler is CONFIG_CC_VERSION_TEXT, e.g. "gcc (Debian 12.2.0-14)
	// 12.2.0"; empty for kernels older than 5.8, which lack it.
	Compiler string
	// Hash is the hex SHA-256 over the option lines of the .config
	// ("CONFIG_X=…" and "# CONFIG_X is not set", in file order), leaving out
	// the header comments, which name the kernel version and the date: the
	// same options hash the same on every commit.
	Hash string
}

// ShortHash is the first 12 hex digits of Hash (words.ShortHash), as
// results carry it (wire.KeyKconfig).
func (c ConfigInfo) ShortHash() string { return words.ShortHash(c.Hash) }

// InspectConfig reads the compiler and configuration hash of a .config.
func InspectConfig(path string) (ConfigInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return ConfigInfo{}, fmt.Errorf("kernel config: %w", err)
	}
	defer f.Close()
	var info ConfigInfo
	h := sha256.New()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		opt, val, ok := parseOption(line)
		if !ok {
			continue
		}
		io.WriteString(h, line+"\n")
		if opt == "CONFIG_CC_VERSION_TEXT" {
			info.Compiler, _ = strconv.Unquote(val)
		}
	}
	if err := sc.Err(); err != nil {
		return ConfigInfo{}, fmt.Errorf("kernel config %s: %w", path, err)
	}
	info.Hash = hex.EncodeToString(h.Sum(nil))
	return info, nil
}

// parseOption parses a .config line: CONFIG_X=v gives (CONFIG_X, v), and
// "# CONFIG_X is not set" gives (CONFIG_X, "n").
func parseOption(line string) (opt, val string, ok bool) {
	if rest, found := strings.CutPrefix(line, "# "); found {
		if o, found := strings.CutSuffix(rest, " is not set"); found && strings.HasPrefix(o, "CONFIG_") && !strings.ContainsRune(o, ' ') {
			return o, "n", true
		}
		return "", "", false
	}
	if !strings.HasPrefix(line, "CONFIG_") {
		return "", "", false
	}
	opt, val, ok = strings.Cut(line, "=")
	return opt, val, ok
}

// parseFragment returns a fragment's options in order; anything that is not
// an option line, a comment or blank is an error.
func parseFragment(data []byte) ([][2]string, error) {
	var opts [][2]string
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if opt, val, ok := parseOption(line); ok {
			opts = append(opts, [2]string{opt, val})
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		return nil, fmt.Errorf("line %d: %q is not CONFIG_X=value or \"# CONFIG_X is not set\"", i+1, line)
	}
	return opts, nil
}

// checkFragments compares the final .config with what the fragments asked
// for; the last fragment to mention an option decides what it asked for.
func checkFragments(config string, frags []Fragment) ([]Dropped, error) {
	want := map[string]string{}
	var order []string
	for _, f := range frags {
		opts, err := parseFragment(f.Data)
		if err != nil {
			return nil, fmt.Errorf("config fragment %s: %w", f.Name, err)
		}
		for _, o := range opts {
			if _, seen := want[o[0]]; !seen {
				order = append(order, o[0])
			}
			want[o[0]] = o[1]
		}
	}
	data, err := os.ReadFile(config)
	if err != nil {
		return nil, fmt.Errorf("build: read final config: %w", err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if opt, val, ok := parseOption(line); ok {
			got[opt] = val
		}
	}
	var dropped []Dropped
	for _, opt := range order {
		g, ok := got[opt]
		if !ok {
			g = "n"
		}
		if g != want[opt] {
			dropped = append(dropped, Dropped{Option: opt, Want: want[opt], Got: g})
		}
	}
	return dropped, nil
}

package kbuild

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/internal/cachefile"
	"github.com/lpmbisect/lpmbisect/internal/words"
)

// Builder turns a checked-out source tree into a kernel.
type Builder interface {
	// Build builds the tree src, using buildDir for its output, and
	// returns the kernel (anything kernel.Resolve accepts). An error
	// wrapping ErrBuildFailed means this tree does not build (a bisection
	// skips the commit); any other error is the host's.
	Build(ctx context.Context, src, buildDir string) (*BuildOutput, error)
}

// BuildOutput is a built kernel.
type BuildOutput struct {
	Kernel   string
	Log      string
	Duration time.Duration
	// Config is the .config when the builder knows it.
	Config string
}

// KbuildBuilder builds with Build: base config, fragments, olddefconfig,
// make bzImage. Options.Src and Options.Dir are set per build.
type KbuildBuilder struct {
	Options Options
	// Log receives the fragment options that were not kept.
	Log *log.Logger
}

// Build implements Builder.
func (b *KbuildBuilder) Build(ctx context.Context, src, buildDir string) (*BuildOutput, error) {
	o := b.Options
	o.Src, o.Dir, o.Notes = src, buildDir, b.Log
	r, err := Build(ctx, o)
	if err != nil {
		return nil, err
	}
	if b.Log != nil {
		b.Log.Printf("build in %s: %s", buildDir, r.Summary())
	}
	return &BuildOutput{Kernel: r.Dir, Log: r.Log, Duration: r.Duration, Config: r.Config}, nil
}

// CommandBuilder builds with a shell command of the user's, run with sh -c
// in the source tree. The command prints the kernel it built (a bzImage, a
// .deb or a build directory; relative to the tree) as the last line of its
// standard output. Exiting non-zero means the tree does not build (the
// commit is skipped). LPMBISECT_BUILD_DIR tells it where build output may go.
// Its output goes to LogPath(buildDir).
type CommandBuilder struct {
	Command string
}

// Build implements Builder.
func (b *CommandBuilder) Build(ctx context.Context, src, buildDir string) (*BuildOutput, error) {
	start := time.Now()
	if err := os.MkdirAll(buildDir, 0o755); err != nil {
		return nil, fmt.Errorf("build directory: %w", err)
	}
	logPath := LogPath(buildDir)
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("build log: %w", err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "# lpmbisect: sh -c %q in %s\n", b.Command, src)
	var stdout bytes.Buffer
	cmd := exec.CommandContext(ctx, "sh", "-c", b.Command)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "LPMBISECT_BUILD_DIR="+buildDir)
	cmd.Stdout = io.MultiWriter(&stdout, logf)
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("%w: build command %q: %w (log: %s)", ErrBuildFailed, b.Command, err, logPath)
		}
		return nil, fmt.Errorf("build command %q: %w", b.Command, err)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	out := strings.TrimSpace(lines[len(lines)-1])
	if out == "" {
		return nil, fmt.Errorf("%w: build command %q printed no kernel path (log: %s)", ErrBuildFailed, b.Command, logPath)
	}
	if !filepath.IsAbs(out) {
		out = filepath.Join(src, out)
	}
	return &BuildOutput{Kernel: out, Log: logPath, Duration: time.Since(start)}, nil
}

// Built is a kernel built from a commit, or given, and kept to boot again:
// what a bisection's state and a nightly series record of it.
type Built struct {
	// Kernel is the kernel input kept to boot again; empty when the build
	// failed.
	Kernel   string `json:"kernel,omitempty"`
	Image    string `json:"image,omitempty"` // SHA-256 of the bzImage
	Release  string `json:"release,omitempty"`
	Compiler string `json:"compiler,omitempty"`
	Kconfig  string `json:"kconfig,omitempty"` // .config hash
	// BuildLog is the build's log (kept for failed builds).
	BuildLog     string  `json:"build_log,omitempty"`
	BuildSeconds float64 `json:"build_seconds,omitempty"`
	// Failed says why the build failed; the commit is then skipped.
	Failed string `json:"failed,omitempty"`
}

// Stands says whether a recorded build can be used again without building:
// it failed (a fact, kept), or the kernel it kept is still there.
func (b *Built) Stands() bool {
	if b == nil {
		return false
	}
	if b.Failed != "" {
		return true
	}
	_, err := os.Stat(b.Kernel)
	return err == nil
}

// BuildKernel builds the tree src (checked out at commit) in buildDir and
// keeps the kernel it made under <keep>/kernels/<image sha256>, where the
// next build cannot overwrite it, with its compiler and configuration hash.
// A tree that does not build (or builds no kernel) gives a Built with
// Failed set, its log kept as <keep>/logs/<commit>.log; an error means the
// host failed.
func BuildKernel(ctx context.Context, builder Builder, src, buildDir, commit, keep string, resolve func(string) (*kernel.Kernel, error), log *log.Logger) (*Built, error) {
	if log != nil {
		log.Printf("building %s in %s", words.ShortHash(commit), buildDir)
	}
	os.Remove(filepath.Join(buildDir, lastBuiltName))
	out, err := builder.Build(ctx, src, buildDir)
	if errors.Is(err, ErrBuildFailed) && ctx.Err() == nil {
		kept := filepath.Join(keep, "logs", commit+".log")
		msg := err.Error()
		orig := LogPath(buildDir)
		if data, rerr := os.ReadFile(orig); rerr == nil {
			if werr := cachefile.WriteBytes(kept, data); werr == nil {
				msg = strings.ReplaceAll(msg, orig, kept)
			}
		}
		return &Built{Failed: msg, BuildLog: kept}, nil
	}
	if err != nil {
		return nil, err
	}
	kept, k, err := keepKernel(out.Kernel, filepath.Join(keep, "kernels"), resolve)
	if err != nil {
		if kernel.IsBadInput(err) {
			return &Built{Failed: fmt.Sprintf("the build produced no kernel: %v (log: %s)", err, out.Log), BuildLog: out.Log}, nil
		}
		return nil, err
	}
	if err := SetLastBuilt(buildDir, commit); err != nil {
		return nil, err
	}
	b := &Built{Kernel: kept, Image: k.SHA256, Release: k.Release, BuildLog: out.Log, BuildSeconds: out.Duration.Seconds()}
	config := out.Config
	if config == "" {
		config = k.ConfigPath
	}
	if config != "" {
		if info, err := InspectConfig(config); err == nil {
			b.Compiler, b.Kconfig = info.Compiler, info.ShortHash()
		}
	}
	if log != nil {
		log.Printf("built %s in %s: %s, image %s, compiler %q, config %s",
			words.ShortHash(commit), out.Duration.Round(100*time.Millisecond), b.Release, words.ShortHash(b.Image), b.Compiler, b.Kconfig)
	}
	return b, nil
}

// keepKernel copies a built kernel where the next build cannot overwrite it,
// <dir>/<image sha256>/, and returns what to boot it from:
//
//   - a .deb is copied as it is;
//   - otherwise the bzImage is copied to boot/vmlinuz-<release> with its
//     config beside it (boot/config-<release>), and the modules directory of
//     a package tree (dpkg -x layout) is linked as lib/modules/<release>.
//     Modules of a build directory are not kept: its kernel must have the
//     results channel built in (the fragment does).
func keepKernel(input, dir string, resolve func(string) (*kernel.Kernel, error)) (string, *kernel.Kernel, error) {
	k, err := resolve(input)
	if err != nil {
		return "", nil, err
	}
	dst := filepath.Join(dir, k.SHA256)
	if f, _ := kernel.Sniff(input); f == kernel.FormatDeb {
		kept := filepath.Join(dst, filepath.Base(input))
		if err := copyFile(input, kept); err != nil {
			return "", nil, fmt.Errorf("keep kernel: %w", err)
		}
		return kept, k, nil
	}
	kept := filepath.Join(dst, "boot", "vmlinuz-"+k.Release)
	if err := copyFile(k.Image, kept); err != nil {
		return "", nil, fmt.Errorf("keep kernel: %w", err)
	}
	if k.ConfigPath != "" {
		if err := copyFile(k.ConfigPath, filepath.Join(dst, "boot", "config-"+k.Release)); err != nil {
			return "", nil, fmt.Errorf("keep kernel config: %w", err)
		}
	}
	// The build's vmlinux gives the culprit re-check's insight exact sizes
	// and code (kernel.BuildVmlinux finds it beside the kept image); the
	// build directory's own is overwritten by the next step's build.
	if vmlinux := kernel.BuildVmlinux(k.Image); vmlinux != "" {
		if err := copyFile(vmlinux, filepath.Join(dst, "boot", "vmlinux-"+k.Release)); err != nil {
			return "", nil, fmt.Errorf("keep kernel vmlinux: %w", err)
		}
	}
	if k.ModulesDir != "" && filepath.Base(k.ModulesDir) == k.Release {
		// Link to where the modules really are: the build output that
		// pointed at them may be gone by the time the kernel boots again.
		target, err := filepath.EvalSymlinks(k.ModulesDir)
		if err != nil {
			return "", nil, fmt.Errorf("keep kernel modules: %w", err)
		}
		link := filepath.Join(dst, "lib", "modules", k.Release)
		if _, err := os.Lstat(link); err != nil {
			os.MkdirAll(filepath.Dir(link), 0o755)
			if err := os.Symlink(target, link); err != nil {
				return "", nil, fmt.Errorf("keep kernel modules: %w", err)
			}
		}
	}
	return kept, k, nil
}

// copyFile copies src to dst (atomically), unless dst exists with the same
// size.
func copyFile(src, dst string) error {
	si, err := os.Stat(src)
	if err != nil {
		return err
	}
	if di, err := os.Stat(dst); err == nil && di.Size() == si.Size() {
		return nil
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return cachefile.WriteBytes(dst, data)
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/build"
	"github.com/lpmbisect/lpmbisect/config"
)

// exitBuildFailed is build's exit code for a tree that does not build.
const exitBuildFailed = 1

// defaultBuildDir is where a tree is built when --build-dir is not given:
// inside the tree, so every lpmbisect command that builds it (build,
// bisect-run, bisect) reuses the same objects. Kernel trees ignore
// dot-directories (.gitignore has ".*"), so git does not see it.
const defaultBuildDir = ".lpmbisect-build"

// configFlag is the flag naming a configuration file.
var configFlag = &cli.StringFlag{Name: "config", Usage: "TOML configuration file; flags given on the command line win (see kernels.example.toml)"}

// buildFlags say how a kernel source tree is configured and built.
func buildFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "build-dir", Usage: "build directory (make O=), kept for incremental builds (default: SRC/" + defaultBuildDir + "; give SRC itself to build in the tree)"},
		&cli.StringFlag{Name: "base-config", Value: build.DefaultBase, Usage: "base configuration: a make target (tinyconfig, defconfig, …) or a config file such as /boot/config-$(uname -r)"},
		&cli.StringSliceFlag{Name: "fragment", Usage: "config fragment merged over the base, repeatable; \"builtin\" is configs/lpmbisect.config (default: builtin)"},
		&cli.StringFlag{Name: "make", Value: "make", Usage: "make program"},
		&cli.StringSliceFlag{Name: "make-flag", Usage: "argument passed to every make call, repeatable (CC=clang, LLVM=1, …)"},
		&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Usage: "make -j (default: number of CPUs)"},
	}
}

// buildOptions turns the build flags into build.Options (without Src/Dir).
func buildOptions(c *cli.Context) (build.Options, error) {
	o := build.Options{Base: c.String("base-config"), Make: c.String("make"), MakeFlags: c.StringSlice("make-flag"), Jobs: c.Int("jobs")}
	if c.Int("jobs") < 0 {
		return o, usageError("--jobs must not be negative")
	}
	if frags := c.StringSlice("fragment"); len(frags) > 0 {
		for _, f := range frags {
			frag, err := build.ReadFragment(f)
			if err != nil {
				return o, usageError("--fragment: %v", err)
			}
			o.Fragments = append(o.Fragments, frag)
		}
	}
	return o, nil
}

// buildDirFor returns the build directory for the tree src.
func buildDirFor(c *cli.Context, src string) string {
	if d := c.String("build-dir"); d != "" {
		return d
	}
	return filepath.Join(src, defaultBuildDir)
}

// applyConfig reads --config and sets every flag the file sets that the
// command line did not. Keys for flags this command does not have are
// ignored; unknown keys are a usage error.
func applyConfig(c *cli.Context) (*config.File, error) {
	path := c.String("config")
	if path == "" {
		return nil, nil
	}
	f, err := config.Load(path)
	if err != nil {
		return nil, usageError("--config: %v", err)
	}
	names := map[string]bool{}
	for _, fl := range c.Command.Flags {
		for _, n := range fl.Names() {
			names[n] = true
		}
	}
	for _, fv := range f.FlagValues() {
		if !names[fv.Flag] || c.IsSet(fv.Flag) {
			continue
		}
		value := fv.Values
		var err error
		if isSliceFlag(c, fv.Flag) {
			js, _ := json.Marshal(value)
			err = c.Set(fv.Flag, "sl:::"+string(js)) // urfave's exact-slice form: no splitting at commas
		} else if len(value) == 1 {
			err = c.Set(fv.Flag, value[0])
		}
		if err != nil {
			return nil, usageError("--config %s: %s: %v", path, fv.Key, err)
		}
	}
	return f, nil
}

func isSliceFlag(c *cli.Context, name string) bool {
	for _, fl := range c.Command.Flags {
		if _, ok := fl.(*cli.StringSliceFlag); ok && slices.Contains(fl.Names(), name) {
			return true
		}
	}
	return false
}

func buildCommand() *cli.Command {
	return &cli.Command{
		Name:         "build",
		Usage:        "configure and build a kernel source tree for lpmbisect (base config + fragment, olddefconfig, make bzImage)",
		OnUsageError: onUsageError,
		ArgsUsage:    "[SRC]",
		Description: `Configures the kernel tree SRC from a base configuration (make tinyconfig by
default, or a config file) with lpmbisect's config fragment on top (BPF
syscall and JIT, virtio PCI and console, 8250 console, devtmpfs, kprobes and
tracepoints; see configs/lpmbisect.config), runs make olddefconfig, checks
that every fragment option kept its value, and runs make -j bzImage.

The build directory is kept, so the next build of the tree (another commit)
is incremental: seconds instead of minutes. Builds are reproducible
(KBUILD_BUILD_TIMESTAMP and friends are fixed), so the same source gives the
same image. make's output goes to <build-dir>/lpmbisect-build.log, which a
failed build names. The compiler and a hash of the final .config are printed
and recorded with every result measured from the build.

Prints the build directory, a KERNEL for run, compare and bisect; --out also
copies the bzImage, which the next build would overwrite.

Exit codes: 0 built, 1 the tree does not build (see the log), 2 usage error.

Examples:
   lpmbisect build ~/linux
   lpmbisect build --out /tmp/after.bzImage ~/linux
   lpmbisect build --base-config /boot/config-$(uname -r) --make-flag LLVM=1 ~/linux`,
		Flags: append(buildFlags(),
			configFlag,
			&cli.StringFlag{Name: "src", Usage: "kernel source tree (or give it as the argument)"},
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}, Usage: "also copy the bzImage to this file"},
		),
		Action: func(c *cli.Context) error {
			if _, err := applyConfig(c); err != nil {
				return err
			}
			if c.NArg() > 1 {
				return usageError("build takes one source tree, got %d arguments", c.NArg())
			}
			src := c.Args().First()
			if src == "" {
				src = c.String("src")
			}
			if src == "" {
				return usageError("build needs a kernel source tree: lpmbisect build SRC")
			}
			o, err := buildOptions(c)
			if err != nil {
				return err
			}
			o.Src, o.Dir = src, buildDirFor(c, src)
			log := c.App.ErrWriter
			fmt.Fprintf(log, "lpmbisect: building %s in %s (log: %s)\n", src, o.Dir, filepath.Join(o.Dir, "lpmbisect-build.log"))
			r, err := build.Build(c.Context, o)
			if err != nil {
				if errors.Is(err, build.ErrBuildFailed) {
					return &exitError{code: exitBuildFailed, err: err}
				}
				if c.Context.Err() != nil {
					return err
				}
				return usageError("%v", err)
			}
			for _, d := range r.Dropped {
				fmt.Fprintf(log, "lpmbisect: warning: config fragment option not kept: %s (a missing dependency, or a symbol this kernel does not have)\n", d)
			}
			fmt.Fprintf(log, "lpmbisect: built %s in %s: compiler %q, config %s\n", r.Image, r.Duration.Round(100*time.Millisecond), r.Compiler, r.ShortHash())
			if out := c.String("out"); out != "" {
				data, err := os.ReadFile(r.Image)
				if err == nil {
					err = os.WriteFile(out, data, 0o644)
				}
				if err != nil {
					return usageError("--out: %v", err)
				}
				fmt.Fprintf(log, "lpmbisect: copied the bzImage to %s\n", out)
			}
			fmt.Fprintln(c.App.Writer, r.Dir)
			return nil
		},
	}
}

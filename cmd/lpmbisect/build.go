package main

import (
	"errors"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/config/cliflag"
	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/host/kbuild"
)

// exitBuildFailed is build's exit code for a tree that does not build.
const exitBuildFailed = 1

// buildOpts say how a kernel source tree is configured and built.
func buildOpts(r *invocation) []opt { return cliflag.Keys(r.File, "build") }

// buildOptions turns the build settings into kbuild.Options (without Src/Dir).
func (r *invocation) buildOptions() (kbuild.Options, error) {
	o, err := kbuild.FromConfig(r.Build)
	var fe *kbuild.FragmentError
	if errors.As(err, &fe) {
		return o, usageError("--fragment: %v", err)
	}
	return o, flagError(err)
}

// buildTree builds the tree src with the build settings; its build
// directory is a KERNEL for run, compare and bisect.
func (r *invocation) buildTree(c *cli.Context, src string) (*kbuild.Result, error) {
	o, err := r.buildOptions()
	if err != nil {
		return nil, err
	}
	o.Src, o.Dir, o.Notes = src, campaign.BuildDirFor(src, r.Build.BuildDir), r.log
	r.log.Printf("building %s in %s (log: %s)", src, o.Dir, kbuild.LogPath(o.Dir))
	res, err := kbuild.Build(c.Context, o)
	switch {
	case errors.Is(err, kbuild.ErrBuildFailed):
		return nil, &exitError{code: exitBuildFailed, err: err}
	case err != nil && c.Context.Err() != nil:
		return nil, err
	case err != nil:
		return nil, usageError("%v", err)
	}
	r.log.Printf("built %s in %s (%s): compiler %q, config %s", res.Image, res.Duration.Round(100*time.Millisecond), res.Summary(), res.Compiler, res.ShortHash())
	return res, nil
}

func buildCommand(r *invocation) *cli.Command {
	opts := append(buildOpts(r), configOpt(r),
		cliflag.Key(r.File, "build.src", "kernel source tree (or give it as the argument)"),
		opt{Name: "out", Alias: "o", Ptr: &r.out, Usage: "also copy the bzImage to this file"})
	return command("build", "configure and build a kernel source tree for lpmbisect (base config + fragment, olddefconfig, make bzImage)", "[SRC]", opts, func(c *cli.Context) error {
		if c.NArg() > 1 {
			return usageError("build takes one source tree, got %d arguments", c.NArg())
		}
		src := c.Args().First()
		if src == "" {
			src = r.Build.Src
		}
		if src == "" {
			return usageError("build needs a kernel source tree: lpmbisect build SRC")
		}
		res, err := r.buildTree(c, src)
		if err != nil {
			return err
		}
		if r.out != "" { // build's own --out: compare's is its results file
			if err := res.CopyImage(r.out); err != nil {
				return usageError("--out: %v", err)
			}
			r.log.Printf("copied the bzImage to %s", r.out)
		}
		_, err = c.App.Writer.Write([]byte(res.Dir + "\n"))
		return err
	})
}

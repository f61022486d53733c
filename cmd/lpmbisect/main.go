// Command lpmbisect tells whether a kernel change made BPF map operations
// faster or slower, with statistics, by booting kernels under QEMU with a
// benchmark guest as PID 1. See the README for the whole workflow.
//
// The command is a thin layer: it turns flags (and a configuration file)
// into the options of the library packages, and their errors into exit
// codes. What a command does lives in those packages.
package main

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/config"
	"github.com/lpmbisect/lpmbisect/config/cliflag"
	"github.com/lpmbisect/lpmbisect/flow/fleet"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/internal/interrupt"
	"github.com/lpmbisect/lpmbisect/internal/shellquote"
	"github.com/lpmbisect/lpmbisect/internal/version"
	"github.com/lpmbisect/lpmbisect/wire"
)

func main() {
	os.Exit(runMain(os.Args, os.Stdout, os.Stderr))
}

// runMain runs the CLI and returns the exit code.
func runMain(args []string, stdout, stderr io.Writer) int {
	ctx, stop := interrupt.Context()
	defer stop()
	defaults := config.Defaults()
	r := &invocation{File: &defaults, failOn: "regression", format: "text", src: ".", remote: &remote{ctx: ctx}}
	defer r.remote.close()
	err := func() (err error) {
		defer func() { // a panic is our bug: exit 4 (255 for bisect-run), not Go's 2 ("bad input")
			if p := recover(); p != nil {
				err = fmt.Errorf("internal error: %v\n%s", p, debug.Stack())
			}
		}()
		if path := cliflag.FlagValue(args, "config"); path != "" {
			f, err := config.Load(path)
			if err != nil {
				return usageError("--config: %v", err)
			}
			r.File = f
		}
		app := newApp(r, stdout, stderr)
		args = cliflag.ReorderArgs(app, args)
		if i := cliflag.CommandIndex(args); i > 0 && app.Command(args[i]) == nil {
			return usageError("no command %q%s: see lpmbisect --help", args[i], cliflag.SuggestCommand(app, args[i]))
		}
		return app.RunContext(ctx, args)
	}()
	code, hint := exitCode(err), flagHint(err)
	if i := cliflag.CommandIndex(args); i > 0 && args[i] == "bisect-run" {
		code, hint = bisectRunCode(err, code, hint)
	}
	if err != nil {
		fmt.Fprintf(stderr, "lpmbisect: %v%s\n", err, hint)
	}
	return code
}

func newApp(r *invocation, stdout, stderr io.Writer) *cli.App {
	r.log = log.New(stderr, "lpmbisect: ", 0)
	if r.remote == nil {
		r.remote = &remote{}
	}
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version"} // -v is --verbose
	return &cli.App{
		Name:                      "lpmbisect",
		Usage:                     "tell whether a kernel change made BPF map operations faster or slower",
		Version:                   version.String(),
		Description:               help("lpmbisect"),
		Writer:                    stdout,
		ErrWriter:                 stderr,
		EnableBashCompletion:      true,
		HideHelpCommand:           true,
		DisableSliceFlagSeparator: true, // paths may hold commas
		OnUsageError:              onUsageError,
		ExitErrHandler:            func(*cli.Context, error) {}, // exit codes are ours
		Commands: []*cli.Command{runCommand(r), compareCommand(r), statCommand(r), listCommand(r), buildCommand(r),
			bisectRunCommand(r), bisectCommand(r), seriesCommand(r), nightlyCommand(r), historyCommand(r), calibrateCommand(r),
			workerCommand(r), fleetCommand(r), serveCommand(r), hostCommand(r)},
	}
}

// onUsageError says what was wrong with the line, suggesting the flag a
// mistyped one is closest to.
func onUsageError(c *cli.Context, err error, _ bool) error {
	if s := cliflag.SuggestFlag(c.Command, err); s != "" {
		return usageError("%v (did you mean %s?)", err, s)
	}
	return usageError("%v (see --help)", err)
}

// setup checks the boot options and decides the accelerator, before
// anything is planned and before any VM of the run starts; controls adds
// the harness controls to the plan, paired asks for pairs, and kernels
// are the run's kernels, which probe KVM if it must be probed.
func (r *invocation) setup(paired, controls bool, kernels ...string) (*measure.Setup, error) {
	o := measure.FromConfig(r.Measure, r.Bench)
	o.RunDir, o.Paired, o.Log, o.ProbeKernels = r.runDir, paired, r.log, kernels
	o.CPUProfileB, o.AppendB = r.cpuProfileB, strings.Fields(r.appendB)
	if r.verbose {
		o.Verbose = r.log
	}
	// --bench as the default selection means "not given": the --workload
	// program then runs alone.
	if err := r.applyWorkload(&o, r.Bench.Select != wire.DefaultBench); err != nil {
		return nil, err
	}
	if controls {
		o.Plan = o.Plan.WithControls()
	}
	if err := r.checkFleet(); err != nil {
		return nil, err
	}
	// On a fleet, auto is the queue's accelerator, decided once for every
	// job of the run (workers never decide it).
	if r.remote != nil && r.remote.queue != "" {
		queue := r.remote.queue
		o.DecideAuto = func() (wire.Accel, string, error) { return fleet.ResolveAccel(wire.AccelAuto, queue) }
	}
	s, err := measure.NewSetup(o)
	var decide *measure.DecideAutoError
	if errors.As(err, &decide) {
		return nil, queueError("queue", decide.Err)
	}
	if err != nil {
		return nil, flagError(err)
	}
	if err := r.useFleet(s); err != nil {
		return nil, err
	}
	return s, nil
}

// kernels returns a command's kernels: its arguments, or, when it has none,
// the configuration's [[kernel]] entries (config.File.KernelInputs).
func (r *invocation) kernels(c *cli.Context, cmd, want string, n int) ([]string, error) {
	args, err := r.KernelInputs(c.Args().Slice(), n, func(src string) (string, error) {
		res, err := r.buildTree(c, src)
		if err != nil {
			return "", err
		}
		return res.Dir, nil
	})
	if err == nil && len(args) != n {
		err = argsError(cmd, want, args)
	}
	return args, err
}

// commandLine is the command line a report prints for its reader to run
// again: the program as lpmbisect (not the path this one was run by), and
// every argument quoted as a shell needs it (a --bench regexp such as
// 'LPMTrie/op=(lookup|update)' is not a shell word as it stands).
func commandLine(args []string) string {
	return shellquote.Join(append([]string{"lpmbisect"}, args[1:]...))
}

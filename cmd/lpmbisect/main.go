// Command lpmbisect tells whether a kernel change made BPF map operations
// faster or slower, with statistics, by booting kernels under QEMU with a
// benchmark guest as PID 1. See the README for the whole workflow.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/initramfs"
	"github.com/lpmbisect/lpmbisect/measure"
	"github.com/lpmbisect/lpmbisect/vmrunner"
)

func main() {
	os.Exit(runMain(os.Args, os.Stdout, os.Stderr))
}

// runMain runs the CLI and returns the exit code.
func runMain(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signalContext()
	defer stop()
	app := newApp(stdout, stderr)
	err := app.RunContext(ctx, args)
	if err != nil {
		fmt.Fprintf(stderr, "lpmbisect: %v%s\n", err, flagHint(err))
	}
	return exitCode(err)
}

// signalContext is canceled by SIGINT or SIGTERM, with a cause that records
// which, so the exit code can follow the shell convention (130, 143).
func signalContext() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		for sig := range ch {
			if sig == syscall.SIGTERM {
				cancel(&signalError{name: "SIGTERM", code: exitSIGTERM})
			} else {
				cancel(&signalError{name: "SIGINT", code: exitSIGINT})
			}
		}
	}()
	return ctx, func() { signal.Stop(ch); cancel(nil) }
}

func newApp(stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:  "lpmbisect",
		Usage: "tell whether a kernel change made BPF map operations faster or slower",
		Description: `lpmbisect boots kernels under QEMU with a small initramfs whose PID 1 runs
BPF map benchmarks (cilium/ebpf), collects the samples over virtio-serial, and
compares kernels with benchstat's statistics, counting each boot as one unit.

A KERNEL is a bzImage/vmlinuz file, a Debian linux-image .deb, or a kernel
build directory (with arch/x86/boot/bzImage).

Exit codes: 0 success, 1 regression, 2 usage error or bad input,
3 inconclusive, 4 infrastructure failure (QEMU missing, a kernel that did
not boot), 130/143 interrupted by SIGINT/SIGTERM.`,
		Writer:               stdout,
		ErrWriter:            stderr,
		EnableBashCompletion: true,
		HideHelpCommand:      true,
		OnUsageError:         onUsageError,
		ExitErrHandler:       func(*cli.Context, error) {}, // exit codes are ours
		Commands:             []*cli.Command{runCommand(), compareCommand(), statCommand(), listCommand(), buildCommand(), bisectRunCommand(), bisectCommand()},
		CommandNotFound: func(c *cli.Context, name string) {
			fmt.Fprintf(stderr, "lpmbisect: no command %q (see lpmbisect --help)\n", name)
		},
	}
}

func onUsageError(_ *cli.Context, err error, _ bool) error {
	return usageError("%v (see --help)", err)
}

// Flags shared by the commands that boot kernels.
func vmFlags() []cli.Flag {
	return append(benchFlags(), []cli.Flag{
		&cli.StringFlag{Name: "accel", Value: "auto", Usage: "auto, kvm, tcg or icount (TCG counting instructions: deterministic, unit insn/op)"},
		&cli.IntFlag{Name: "memory", Value: 1024, Usage: "guest memory in MiB"},
		&cli.IntFlag{Name: "cpus", Value: 1, Usage: "guest vCPUs"},
		&cli.DurationFlag{Name: "boot-timeout", Value: 90 * time.Second, Usage: "deadline for the guest's first results"},
		&cli.DurationFlag{Name: "progress-timeout", Value: 60 * time.Second, Usage: "longest silence from a booted guest"},
		&cli.StringFlag{Name: "cache-dir", EnvVars: []string{"LPMBISECT_CACHE"}, Usage: "cache for unpacked kernels and initramfs images (default: user cache dir)"},
		&cli.StringFlag{Name: "run-dir", Usage: "where console logs of each boot go (default: <cache-dir>/runs/<time>)"},
		&cli.StringFlag{Name: "guest", EnvVars: []string{"LPMBISECT_GUEST"}, Usage: "guest binary (default: lpmbisect-guest beside this executable)"},
		&cli.StringFlag{Name: "qemu", Value: "qemu-system-x86_64", Usage: "QEMU binary"},
		&cli.StringFlag{Name: "append", Usage: "extra kernel parameters, e.g. \"mitigations=off\""},
		&cli.BoolFlag{Name: "no-modules", Usage: "do not pack kernel modules (results then use virtio only if built in, else the serial fallback)"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "print QEMU command lines and decisions"},
	}...)
}

// session is what a command needs to boot kernels, built from the flags.
type session struct {
	cacheDir, runDir, guest string
	plan                    measure.GuestPlan
	selector                *vmrunner.Selector
	vm                      vmrunner.Config
	noModules               bool
	extraKernelArgs         []string
	log                     io.Writer // progress and notes (stderr)
	verbose                 bool
	// paired runs two kernels in pairs (compare --paired, wall-clock accelerators).
	paired bool
}

func newSession(c *cli.Context) (*session, error) {
	accel, err := vmrunner.ParseAccel(c.String("accel"))
	if err != nil {
		return nil, usageError("--accel: %v", err)
	}
	plan, err := guestPlan(c)
	if err != nil {
		return nil, err
	}
	if accel == vmrunner.Icount && c.Int("cpus") != 1 {
		// Single-threaded TCG counts instructions; guests hang bringing up a
		// second vCPU under icount, and counts stop being deterministic.
		return nil, usageError("--accel icount needs --cpus 1")
	}
	if c.Int("memory") < 128 || c.Int("cpus") < 1 || c.Int("cpus") > 64 {
		return nil, usageError("--memory must be at least 128 (MiB) and --cpus between 1 and 64")
	}
	cacheDir := c.String("cache-dir")
	if cacheDir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return nil, usageError("no cache directory: %v (set --cache-dir or LPMBISECT_CACHE)", err)
		}
		cacheDir = filepath.Join(base, "lpmbisect")
	}
	guest := c.String("guest")
	if guest == "" {
		if guest, err = initramfs.FindGuest(); err != nil {
			return nil, usageError("%v", err)
		}
	}
	runDir := c.String("run-dir")
	if runDir == "" {
		runDir = filepath.Join(cacheDir, "runs", time.Now().Format("20060102-150405")+fmt.Sprintf("-%d", os.Getpid()))
	}
	s := &session{
		cacheDir: cacheDir, runDir: runDir, guest: guest, plan: plan,
		noModules: c.Bool("no-modules"), extraKernelArgs: strings.Fields(c.String("append")), log: c.App.ErrWriter, verbose: c.Bool("verbose"),
		vm: vmrunner.Config{
			QEMU: c.String("qemu"), MemoryMB: c.Int("memory"), CPUs: c.Int("cpus"),
			BootDeadline: c.Duration("boot-timeout"), ProgressDeadline: c.Duration("progress-timeout"),
		},
	}
	logger := log.New(c.App.ErrWriter, "lpmbisect: ", 0)
	s.selector = &vmrunner.Selector{Requested: accel, Log: logger}
	if s.verbose {
		s.vm.Log = logger
	}
	return s, nil
}

// prepare resolves kernels and packs their initramfs, before any VM starts.
func (s *session) prepare(inputs []string) ([]*measure.Side, error) {
	start := time.Now()
	sides, err := measure.Prepare(inputs, s.guest, s.cacheDir, s.noModules)
	if err != nil {
		return nil, err
	}
	for _, side := range sides {
		if s.verbose {
			fmt.Fprintf(s.log, "lpmbisect: %s = %s (release %s, sha256 %s, initramfs %s, cached %v) in %s\n",
				side.Name, side.Kernel.Input, side.Kernel.Release, side.Kernel.SHA256[:12], filepath.Base(side.Image.Path), side.Image.Cached, measure.Elapsed(start))
		}
		if side.ChannelNote != "" {
			fmt.Fprintf(s.log, "lpmbisect: %s: %s\n", side.Name, side.ChannelNote)
		}
	}
	return sides, nil
}

// measure runs the boots, printing a line per boot.
func (s *session) measure(ctx context.Context, sides []*measure.Side, boots int, seed uint64, out *measure.ResultsFile) (*measure.Summary, error) {
	return s.measureAdaptive(ctx, sides, boots, boots, nil, seed, out)
}

// measureAdaptive is measure with rounds added while more says so, up to
// maxBoots per side.
func (s *session) measureAdaptive(ctx context.Context, sides []*measure.Side, boots, maxBoots int, more func() bool, seed uint64, out *measure.ResultsFile) (*measure.Summary, error) {
	prog := newProgress(s.log)
	defer prog.done()
	if len(sides) > 1 && s.verbose {
		fmt.Fprintf(s.log, "lpmbisect: boot order seed %d\n", seed)
	}
	p := measure.Plan{
		Sides: sides, Boots: boots, MaxBoots: maxBoots, More: more, Seed: seed, GuestArgs: append(s.plan.KernelArgs(), s.extraKernelArgs...), Selector: s.selector,
		VM: s.vm, RunDir: s.runDir, Results: out.Writer,
		OnBootStart: prog.bootStarts,
		Paired:      s.paired && len(sides) == 2,
		OnBoot: func(r measure.BootReport) {
			if r.Result.Outcome == vmrunner.OK {
				out.Sync()
			}
			prog.bootEnded(r)
		},
	}
	sum, err := measure.Run(ctx, p)
	prog.done()
	if p.Paired && s.verbose {
		where := fmt.Sprintf("host CPU %d", sum.PinnedCPU)
		if sum.PinnedCPU < 0 {
			where = "no pinned CPU (affinity unreadable)"
		}
		fmt.Fprintf(s.log, "lpmbisect: paired: %d complete pairs on %s, %d steps taken in turn\n", sum.Pairs, where, sum.Steps)
	}
	for _, n := range sum.Notes {
		fmt.Fprintf(s.log, "lpmbisect: %s: %s\n", n.Key, n.Text)
	}
	return sum, err
}

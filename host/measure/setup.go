package measure

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lpmbisect/lpmbisect/host/initramfs"
	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/internal/cachefile"
	"github.com/lpmbisect/lpmbisect/internal/words"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Options say how kernels are booted: what every command that boots shares
// (run, compare, bisect, nightly, calibrate, a fleet worker). The zero value
// of a field means its default.
type Options struct {
	// Accel is the accelerator asked for (default Auto: KVM where it
	// runs real kernels, else icount). NewSetup decides it once, for
	// every boot of the setup (vmrunner.ChooseAccel).
	Accel wire.Accel
	// ProbeKernels are the kernel inputs to probe KVM with when Auto (or
	// KVM) must be decided and no verdict is kept for this host: the
	// run's own kernels (a compare's A and B). They are resolved only
	// then.
	ProbeKernels []string
	// DecideAuto, when set, decides Auto instead of this host: a fleet's
	// run takes its boot queue's accelerator (fleet.ResolveAccel). why
	// says what Auto became, for the log; an error is NewSetup's as a
	// *DecideAutoError.
	DecideAuto func() (accel wire.Accel, why string, err error)
	// Plan is the guest's plan; Samples and Rounds of 0 take the
	// accelerator's defaults (wire.DefaultSamples, wire.DefaultRounds).
	Plan GuestPlan
	// MemoryMB and CPUs size the guest (default 1024 MiB, 1 vCPU).
	MemoryMB, CPUs int
	// BootTimeout bounds the wait for the guest's first results,
	// ProgressTimeout its longest silence once booted.
	BootTimeout, ProgressTimeout time.Duration
	QEMU                         string // default qemu-system-x86_64
	// CacheDir holds unpacked kernels, initramfs images and run logs
	// (default: the user cache directory's lpmbisect).
	CacheDir string
	// RunDir gets the console log and raw capture of every boot (default
	// <CacheDir>/runs/<time>-<pid>).
	RunDir string
	// Guest is the guest binary (default: lpmbisect-guest beside the
	// running executable).
	Guest string
	// Append are extra kernel parameters ("mitigations=off").
	Append []string
	// CPUProfile names the CPU profile TCG boots emulate
	// (vmrunner.LookupCPUProfile; "" or "default": the default model). A
	// profile makes Auto icount, and cannot be used under KVM.
	CPUProfile string
	// CPUProfileB and AppendB, when set, make the second kernel of a run
	// of two (side B of a comparison) boot with another CPU profile, and
	// with these kernel parameters after Append: one kernel compared with
	// itself under two CPUs or command lines. CPUProfileB follows
	// CPUProfile's rules.
	CPUProfileB string
	AppendB     []string
	// Files are packed into every initramfs besides the guest: a user's
	// BPF object and its inputs (Plan.Workload).
	Files []initramfs.File
	// NoModules packs no kernel modules (results then travel over virtio
	// only when it is built in, else over the serial fallback).
	NoModules bool
	// Parallel is how many boots may run at once (see Workers; 0: its
	// default).
	Parallel int
	// Paired runs two kernels in pairs under wall-clock accelerators (see
	// Paired); ignored under icount, whose counts need no pairs.
	Paired bool
	// Remote, when set, runs the boots instead of this host: a fleet's
	// queue (fleet.Executor). Boots, looks and verdicts stay the same
	// code; only where QEMU runs changes. Workers and Paired still shape
	// the runs (a remote policy groups a paired round into one job).
	Remote Executor
	// Log gets progress lines and notes; Verbose, when set, every QEMU
	// command line and the decisions behind a run.
	Log, Verbose *log.Logger

	kvmDevice string // "": vmrunner.defaultKVMDevice; tests name another
}

// OptionError is an Options field that cannot be used. Option names it as
// its configuration key does ("cpus", "memory", "cache_dir"), so that a
// command line can name its flag.
type OptionError struct {
	Option string
	Err    error
}

func (e *OptionError) Error() string { return e.Option + ": " + e.Err.Error() }
func (e *OptionError) Unwrap() error { return e.Err }

// DecideAutoError is NewSetup's error when Options.DecideAuto failed.
type DecideAutoError struct{ Err error }

func (e *DecideAutoError) Error() string { return "accel auto: " + e.Err.Error() }
func (e *DecideAutoError) Unwrap() error { return e.Err }

// ErrIcountCPUs says that icount runs one vCPU: single-threaded TCG counts
// instructions, guests hang bringing up a second vCPU under icount, and
// counts stop being deterministic.
var ErrIcountCPUs = errors.New("icount needs exactly 1 vCPU")

// Setup is Options checked and completed: what a command boots kernels
// with. Its Accel is decided (never Auto), and every boot of the setup
// runs under it.
type Setup struct {
	Options
	// KVM is what was found of KVM when the accelerator was decided (nil
	// under tcg and icount asked for by name, or on a fleet).
	KVM     *vmrunner.KVMStatus
	VM      vmrunner.Config // its CPU is every side's but B's (Variants)
	Workers int             // boots at once

	cpuB vmrunner.CPUProfile // side B's CPU profile (Options.CPUProfileB, else VM.CPU)
}

// NewSetup checks o and decides its accelerator, before anything is
// planned and before any boot of the run: Auto is the fleet's
// (DecideAuto), or KVM where this host's KVM runs real kernels, else
// icount (vmrunner.ChooseAccel: a verdict kept for this host, or a probe
// boot of ProbeKernels, said in one line on Log). Its errors are
// *OptionError, *DecideAutoError, the plan's *wire.ParamError, a
// *vmrunner.KVMUnusableError for KVM asked for where it does not run
// guests, and the probe kernels' own.
func NewSetup(o Options) (*Setup, error) {
	accel, err := o.check()
	if err != nil {
		return nil, err
	}
	// A CPU profile is an emulated CPU: it makes auto icount, before any
	// probe of KVM, and is refused under kvm.
	profile, accel, err := cpuProfile(o, "cpu_profile", o.CPUProfile, accel)
	if err != nil {
		return nil, err
	}
	profileB := profile
	if o.CPUProfileB != "" {
		if profileB, accel, err = cpuProfile(o, "cpu_profile_b", o.CPUProfileB, accel); err != nil {
			return nil, err
		}
	}
	kvm, err := o.decideAccel(accel)
	if err != nil {
		return nil, err
	}
	if o.Plan.Samples == 0 {
		o.Plan.Samples = wire.DefaultSamples(o.Accel)
	}
	if o.Plan.Rounds == 0 {
		o.Plan.Rounds = wire.DefaultRounds(o.Accel)
	}
	if o.Accel == wire.AccelIcount && o.CPUs != 1 { // auto decided icount
		return nil, &OptionError{"cpus", ErrIcountCPUs}
	}
	workers, err := workers(o.Accel, o.Parallel)
	if err != nil {
		return nil, &OptionError{"parallel", err}
	}
	if o.RunDir == "" {
		o.RunDir = filepath.Join(o.CacheDir, "runs", time.Now().Format("20060102-150405")+fmt.Sprintf("-%d", os.Getpid()))
	}
	s := &Setup{Options: o, Workers: workers, KVM: kvm, cpuB: profileB,
		VM: vmrunner.Config{QEMU: o.QEMU, Accel: o.Accel, MemoryMB: o.MemoryMB, CPUs: o.CPUs, CPU: profile,
			BootDeadline: o.BootTimeout, ProgressDeadline: o.ProgressTimeout, Log: o.Verbose},
	}
	return s, nil
}

// check fills in o's defaults and checks what does not depend on the
// accelerator first, so that a usage error is reported before any VM
// starts, a probe's included (the accelerators' default samples and
// rounds are in range alike); it returns the accelerator asked for.
func (o *Options) check() (wire.Accel, error) {
	if o.Accel == "" {
		o.Accel = wire.AccelAuto
	}
	accel, err := wire.ParseAccel(string(o.Accel))
	if err != nil {
		return "", &OptionError{"accel", err}
	}
	if o.Log == nil {
		o.Log = log.New(io.Discard, "", 0)
	}
	if o.MemoryMB == 0 {
		o.MemoryMB = 1024
	}
	if o.CPUs == 0 {
		o.CPUs = 1
	}
	plan := o.Plan
	plan.Samples, plan.Rounds = cmp.Or(plan.Samples, 1), cmp.Or(plan.Rounds, 1)
	if err := plan.Validate(); err != nil {
		return "", err
	}
	switch {
	case accel == wire.AccelIcount && o.CPUs != 1:
		return "", &OptionError{"cpus", ErrIcountCPUs}
	case o.MemoryMB < 128:
		return "", &OptionError{"memory", fmt.Errorf("%d MiB is too little: at least 128", o.MemoryMB)}
	case o.CPUs < 1 || o.CPUs > 64:
		return "", &OptionError{"cpus", fmt.Errorf("%d vCPUs: between 1 and 64", o.CPUs)}
	}
	if o.CacheDir == "" {
		if o.CacheDir, err = DefaultCacheDir(); err != nil {
			return "", &OptionError{"cache_dir", err}
		}
	}
	if o.Guest == "" {
		if o.Guest, err = initramfs.FindGuest(); err != nil {
			return "", &OptionError{"guest", err}
		}
	}
	return accel, nil
}

// decideAccel decides the accelerator here, once, so that the plan's
// defaults, the parameters' key, the calibration, the comparison rule and
// every boot are those of one accelerator: auto is the fleet's
// (DecideAuto), else vmrunner.ChooseAccel's, whose KVM status it returns.
// It sets o.Accel.
func (o *Options) decideAccel(accel wire.Accel) (*vmrunner.KVMStatus, error) {
	var kvm *vmrunner.KVMStatus
	if accel == wire.AccelAuto && o.DecideAuto != nil {
		decided, why, err := o.DecideAuto()
		if err != nil {
			return nil, &DecideAutoError{err}
		}
		if why != "" {
			o.Log.Print(why)
		}
		accel = decided
	} else {
		choice, err := vmrunner.ChooseAccel(context.Background(), accel, vmrunner.KVMCheck{
			QEMU: o.QEMU, Device: o.kvmDevice, CacheDir: o.CacheDir, Kernels: ProbeKernels(o.CacheDir, o.ProbeKernels...)})
		if err != nil {
			return nil, err
		}
		if choice.Line != "" {
			o.Log.Print(choice.Line)
		}
		accel, kvm = choice.Accel, choice.KVM
	}
	o.Accel = accel
	return kvm, nil
}

// cpuProfile returns the CPU profile named name (the option's value) and
// the accelerator its boots run under: a profile is an emulated CPU's
// identity, so it makes Auto icount and refuses KVM.
func cpuProfile(o Options, option, name string, accel wire.Accel) (vmrunner.CPUProfile, wire.Accel, error) {
	p, err := vmrunner.LookupCPUProfile(name)
	switch {
	case err != nil:
		return p, accel, &OptionError{option, err}
	case p.IsDefault():
		return p, accel, nil
	case accel == wire.AccelKVM:
		return p, accel, &OptionError{option, vmrunner.ErrCPUProfileUnderKVM}
	case accel == wire.AccelAuto:
		o.Log.Printf("accel auto: CPU profile %s is an emulated CPU: using icount", p.Name)
		return p, wire.AccelIcount, nil
	}
	return p, accel, nil
}

// ProbeKernels returns the kernels of a probe of KVM
// (vmrunner.KVMCheck.Kernels): each input resolved (kernel.Resolve, into
// cacheDir) to its bzImage, which a KVM boot runs through its
// decompressor, named by its release. Nothing is resolved until a probe
// asks.
func ProbeKernels(cacheDir string, inputs ...string) func() ([]vmrunner.ProbeKernel, error) {
	return func() ([]vmrunner.ProbeKernel, error) {
		var out []vmrunner.ProbeKernel
		for _, input := range inputs {
			k, err := kernel.Resolve(input, cacheDir)
			if err != nil {
				return nil, err
			}
			out = append(out, vmrunner.ProbeKernel{Image: k.Image, Name: k.Release})
		}
		return out, nil
	}
}

// boot boots cfg, which the runner made under the setup's accelerator.
// A boot that KVM failed (after the probe had passed, or with no probe)
// ends the run with its *vmrunner.KVMUnusableError, and the verdict kept
// for this host is changed to say so, so that the next run does not plan
// for KVM: the run's boots are never moved to another accelerator.
func (s *Setup) boot(ctx context.Context, cfg vmrunner.Config) (*vmrunner.Result, error) {
	res, err := vmrunner.Boot(ctx, cfg)
	var kvm *vmrunner.KVMUnusableError
	if !errors.As(err, &kvm) {
		return res, err
	}
	when := "KVM failed a boot of this run"
	if s.KVM != nil && s.KVM.Verdict != nil {
		when += " after its probe had passed"
		if merr := s.KVM.MarkBroken(kvm.Reason); merr != nil {
			s.Log.Printf("warning: KVM's failure not kept for the next run: %v", merr)
		}
	}
	return res, &vmrunner.KVMUnusableError{Reason: when + ", so the run stops (its boots never move to another accelerator): " + kvm.Reason}
}

// prepare resolves kernel inputs and packs the initramfs of each (see the
// package function Prepare), saying how results will travel when that is
// worth knowing.
func (s *Setup) prepare(inputs []string) ([]*Side, error) {
	start := time.Now()
	sides, err := prepare(inputs, s.Guest, s.CacheDir, s.NoModules, s.Files...)
	if err != nil {
		return nil, err
	}
	for _, side := range sides {
		if s.Verbose != nil {
			s.Verbose.Printf("%s = %s (release %s, sha256 %s, initramfs %s, cached %v) in %s",
				side.Name, side.Kernel.Input, side.Kernel.Release, words.ShortHash(side.Kernel.SHA256), filepath.Base(side.Image.Path), side.Image.Cached, Elapsed(start))
		}
		if side.ChannelNote != "" {
			s.Log.Printf("%s: %s", side.Name, side.ChannelNote)
		}
		if s.Accel == wire.AccelIcount {
			s.usePVH(side)
		}
	}
	return sides, nil
}

// usePVH makes side boot its kernel ELF through PVH (pvhImage) when the
// kernel has a PVH entry, and keeps the bzImage otherwise, saying why.
// On a fleet the ELF is the blob its workers fetch and boot: larger than
// the bzImage (tens of MiB, sent once per kernel), but every boot skips
// the decompressor, and local and fleet boots count the same.
func (s *Setup) usePVH(side *Side) {
	elf, err := pvhImage(side.Kernel, s.CacheDir)
	switch {
	case err == nil:
		side.BootImage = elf
		if s.Verbose != nil {
			s.Verbose.Printf("%s: boots %s through PVH (no decompressor)", side.Name, elf)
		}
	case errors.Is(err, ErrNoPVHEntry):
		if s.Verbose != nil {
			s.Verbose.Printf("%s: boots the bzImage: %v", side.Name, err)
		}
	default:
		s.Log.Printf("%s: boots the bzImage: kernel ELF for a PVH boot: %v", side.Name, err)
	}
}

// Pairs reports whether a run of n kernels runs in pairs: asked for, two
// kernels, a wall-clock accelerator (icount counts need no pairs).
func (s *Setup) Pairs(n int) bool { return s.Paired && n == 2 && s.Accel != wire.AccelIcount }

// RunOptions are one measurement's own choices, besides its setup's.
type RunOptions struct {
	// Seed draws the order of the sides within each round (Runner.Seed).
	Seed uint64
	// Labels are added to every result of every side (Side.Labels); each
	// side gets its own copy.
	Labels map[string]string
	// Names, when set, are what results call each input (Side.Label), in
	// the inputs' order; "" keeps the kernel's release.
	Names []string
	// RunDir, when set, replaces the setup's run directory.
	RunDir string
	// Unpaired boots the inputs unpaired even where the setup pairs two
	// kernels (a bisection measures candidates, not an A/B).
	Unpaired bool
	// Insight, when set, explains the first two inputs (A against B):
	// it arms the guest's insight pass in the first boot of each side,
	// unless the setup boots on a fleet, and Runner.InsightDiff builds
	// the block once the boots are done.
	Insight *Insight
}

// Start begins a measurement of inputs with this setup: it resolves them
// and packs their initramfs images (Prepare), then returns a runner of
// them, booting with this setup's executor (pairs when Pairs, else
// Workers boots at once here, or the remote queue). Every command that
// boots kernels begins here; the caller then sets what it wants to hear
// of (OnBoot, Sink) and calls Measure (or hands the runner to
// compare.Decide), and Finish at the end.
func (s *Setup) Start(inputs []string, o RunOptions) (*Runner, error) {
	sides, err := s.prepare(inputs)
	if err != nil {
		return nil, err
	}
	for i, side := range sides {
		if o.Labels != nil {
			side.Labels = maps.Clone(o.Labels)
		}
		if i < len(o.Names) && o.Names[i] != "" {
			side.Label = o.Names[i]
		}
	}
	variants := s.Variants(len(sides))
	// The key hashes the guest binary: once per variant, not per side
	// (a profile is known by its name, LookupCPUProfile).
	keys := map[string]string{}
	for i, side := range sides {
		side.Variant = variants[i]
		side.kernelParams = strings.Join(slices.Concat(s.Append, side.Variant.Append), " ")
		id := side.Variant.CPU.Name + "\x00" + strings.Join(side.Variant.Append, "\x00")
		if _, ok := keys[id]; !ok {
			// "" when the guest cannot be read: Prepare says why.
			keys[id], _ = s.paramsKey(side.Variant)
		}
		side.Params = keys[id]
	}
	paired := !o.Unpaired && s.Pairs(len(sides))
	r := &Runner{
		Sides: sides, Seed: o.Seed, GuestArgs: s.GuestArgs(),
		VM: s.VM, RunDir: s.RunDir, Exec: s.Executor(paired, o.Seed), Paired: paired,
	}
	if o.RunDir != "" {
		r.RunDir = o.RunDir
	}
	if r.insight = o.Insight.forSetup(s); r.insight != nil {
		r.static = r.insight.static(sides)
		if err := r.insight.arm(r, r.static); err != nil {
			return nil, err
		}
	}
	if len(sides) > 1 && s.Verbose != nil {
		s.Verbose.Printf("boot order seed %d", o.Seed)
	}
	return r, nil
}

// GuestArgs is the guest's plan on the kernel command line, with --append.
func (s *Setup) GuestArgs() []string { return append(s.Plan.KernelArgs(), s.Append...) }

// Variant is the CPU profile a side's boots emulate and the kernel
// parameters they get after the setup's (Options.Append); Setup.Variants
// gives each side its own.
type Variant struct {
	CPU    vmrunner.CPUProfile
	Append []string
}

// Variants are the CPU profile and extra kernel parameters of each of n
// inputs: the setup's (VM.CPU), and for the second of two, B's
// (Options.CPUProfileB, Options.AppendB).
func (s *Setup) Variants(n int) []Variant {
	out := make([]Variant, n)
	for i := range out {
		out[i] = Variant{CPU: s.VM.CPU}
	}
	if n == 2 {
		out[1] = Variant{CPU: s.cpuB, Append: s.AppendB}
	}
	return out
}

// paramsKey is this setup's measurement parameters (the package's
// paramsKey).
func (s *Setup) ParamsKey() (string, error) { return s.paramsKey(Variant{CPU: s.VM.CPU}) }

// paramsKey is the measurement parameters of a side with variant v.
func (s *Setup) paramsKey(v Variant) (string, error) {
	return paramsKey(s.Accel, v.CPU, append(s.GuestArgs(), v.Append...), s.MemoryMB, s.CPUs, s.Guest, s.Files...)
}

// paramsKey identifies measurement parameters: results measured with
// different keys are never compared (bisect keeps them apart), and every
// result carries its key (wire.KeyParams). It covers the accelerator asked
// for, the CPU profile (its model and kernel parameters; nothing for the
// default, whose keys stay those of boots from before profiles), the
// guest's run plan and extra kernel parameters, the VM shape, the guest
// binary itself and the files packed beside it (a user's BPF object and
// its inputs).
func paramsKey(accel wire.Accel, cpu vmrunner.CPUProfile, guestArgs []string, memoryMB, cpus int, guest string, files ...initramfs.File) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "accel=%s\nmemory=%d\ncpus=%d\n", accel, memoryMB, cpus)
	fmt.Fprintf(h, "kernel-args=%s\n", strings.Join(vmrunner.FixedKernelArgs(accel, cpu), " "))
	if !cpu.IsDefault() {
		fmt.Fprintf(h, "cpu-profile=%s %s\n", cpu.Name, cpu.QEMUModel(accel))
	}
	for _, a := range guestArgs {
		fmt.Fprintf(h, "arg=%s\n", a)
	}
	f, err := os.Open(guest)
	if err != nil {
		return "", fmt.Errorf("guest binary: %w", err)
	}
	defer f.Close()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("guest binary: %w", err)
	}
	for _, file := range files {
		sum, err := cachefile.SHA256(file.Host)
		if err != nil {
			return "", fmt.Errorf("%s: %w", file.Archive, err)
		}
		fmt.Fprintf(h, "file=%s %s\n", file.Archive, sum)
	}
	return string(accel) + "-" + words.ShortHash(hex.EncodeToString(h.Sum(nil))), nil
}

// Executor is where this setup's boots run: Remote when set, else pairs
// (drawn from seed) when paired, else Workers boots at once here.
func (s *Setup) Executor(paired bool, seed uint64) Executor {
	switch {
	case s.Remote != nil:
		return s.Remote
	case paired:
		return &Paired{Boot: s.boot, Seed: seed}
	}
	return Local{Boot: s.boot, Workers: s.Workers}
}

// Finish says what a finished run noted: pairs and pinning of a paired run
// (verbose), and each distinct note of the guests (unsupported benchmarks,
// failures).
func (s *Setup) Finish(r *Runner) {
	sum := r.Summary()
	if r.Paired && s.Verbose != nil {
		where := fmt.Sprintf("host CPU %d", sum.PinnedCPU)
		if sum.PinnedCPU < 0 {
			where = "no pinned CPU (affinity unreadable)"
		}
		s.Verbose.Printf("paired: %d complete pairs on %s, %d steps taken in turn", sum.Pairs, where, sum.Steps)
	}
	for _, n := range sum.Notes {
		s.Log.Printf("%s: %s", n.Key, n.Text)
	}
}

// Record boots each side of r boots times, writing every completed boot
// to out, and closes out: complete under its final name when every boot
// was taken, else under the partial name with the finished boots. hook,
// when set, gets the runner first (progress). It returns where the
// results are, and the run's error before out's.
func (s *Setup) Record(ctx context.Context, r *Runner, boots int, out *ResultsFile, hook func(*Runner)) (string, error) {
	r.Sink = out
	if hook != nil {
		hook(r)
	}
	runErr := r.Measure(ctx, boots)
	s.Finish(r)
	path, closeErr := s.CloseResults(out, runErr)
	if runErr != nil {
		return path, runErr
	}
	return path, closeErr
}

// CloseResults closes out after a run that ended with runErr: renamed to
// its final name when the run completed, else kept as FILE.partial, which
// it then names in the log, so no finished boot is lost from sight.
func (s *Setup) CloseResults(out *ResultsFile, runErr error) (string, error) {
	path, err := out.Close(runErr == nil)
	if runErr != nil && out.Path() != "" && s.Log != nil {
		s.Log.Printf("finished boots kept in %s", path)
	}
	return path, err
}

// DefaultCacheDir is where lpmbisect caches unpacked kernels, initramfs
// images, run logs, calibrations and (by default) nightly's history: the
// user cache directory's lpmbisect.
func DefaultCacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("%w (name a cache directory)", err)
	}
	return filepath.Join(base, "lpmbisect"), nil
}

package vmrunner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lpmbisect/lpmbisect/wire"
)

// maxCommandLine is COMMAND_LINE_SIZE on x86, less the NUL.
const maxCommandLine = 2047

// CommandLineTooLongError is returned when the kernel command line (the
// fixed console options, the run plan and the extra kernel parameters) is
// longer than the kernel accepts: it would be cut off silently, and the
// guest would run another plan than the one asked for.
type CommandLineTooLongError struct {
	Len int // bytes in the command line
	Max int // the most x86 accepts
}

func (e *CommandLineTooLongError) Error() string {
	return fmt.Sprintf("kernel command line is %d bytes, more than x86's %d (pass fewer or shorter kernel parameters)", e.Len, e.Max)
}

// Files QEMU writes into the run directory when a boot is re-run by hand.
const (
	consoleFile  = "console.log"
	resultsFile  = "results.out"
	fallbackFile = "serial1.out"
)

// KernelCommandLine is the kernel command line for a boot: console on
// ttyS0 (early, so even the decompressor's output shows progress), a panic
// ends the VM at once, oopses are panics, the boot work skipped that no
// benchmark measures and the CPU profile's parameters (FixedKernelArgs),
// then the run plan.
func (c *Config) KernelCommandLine() string {
	args := []string{"console=ttyS0,115200", "earlyprintk=serial,ttyS0,115200", "panic=-1", "oops=panic"}
	args = append(args, FixedKernelArgs(c.Accel, c.CPU)...)
	return strings.Join(append(args, c.KernelArgs...), " ")
}

// FixedKernelArgs are the kernel parameters every boot under accel with
// the CPU profile p gets besides its plan: the boot work skipped
// (skippedBootWork), under icount the local APIC timer's calibration
// (icountBootWork), and the profile's KernelArgs (none for the default).
func FixedKernelArgs(accel wire.Accel, p CPUProfile) []string {
	args := skippedBootWork
	if accel == wire.AccelIcount {
		args = slices.Concat(skippedBootWork, icountBootWork)
	}
	if len(p.KernelArgs) > 0 && accel != wire.AccelKVM {
		args = slices.Concat(args, p.KernelArgs)
	}
	return args
}

// icountBootWork skips, under icount only, the calibration of the local
// APIC timer: noapictimer takes the tick off the local APIC (the HPET or
// PIT gives it, through the IO-APIC; icount boots have one vCPU). The
// calibration spins about 108 million instructions reading the APIC's
// timer, and under icount every such read ends a translation block: it
// took half the host's CPU time of a Debian 6.12 boot, about 3 of 6 s
// (QEMU 7.2, Westmere-v1, sampled through QEMU's monitor). Without it a
// boot of one lookup benchmark took 3.05 s of CPU against 6.1 s, and
// 555.7 million instructions to /init against 662.9; with lookups and
// controls, 5.9 s against 9.2 on 6.12 and 5.0 against 7.8 on 6.1, though
// the benchmarks' phase counts more ticks outside the timed samples
// (6.12: 261 → 544 million, 160 of them idle). Calibrated on both Debian
// kernels (6 boots each, lookups and controls, 10000 entries) the
// benchmarks stayed deterministic, their boot-to-boot differences as
// small as with the APIC timer (largest: 6.1 random lookups 0.100 %
// against 0.059 %, 6.12 random lookups 0.028 % against 0.070 %), and
// their centres moved by at most 0.06 % (6.12 random lookups 829.4 →
// 829.9 insn/op, random baseline 83.05 → 83.10). FixedKernelArgs are part
// of the measurement's parameters (measure.Setup.ParamsKey), so boots from
// before the change are not taken for boots of the same parameters.
var icountBootWork = []string{"noapictimer"}

// skippedBootWork are kernel parameters that skip boot work no benchmark
// touches: the crypto self-tests (cryptomgr.notests), and the initcalls of
// the jitter-entropy RNG's self-test and of the trace events' enum maps
// (initcall_blacklist, which needs CONFIG_KALLSYMS). Measured under icount
// on Debian 6.12 (1000 entries, 2 samples): 2.32 → 1.28 billion guest
// instructions from power-on to power-off, 1.69 → 0.95 to /init (the enum
// maps are also built after /init starts), lookup counts unchanged within
// 0.03 %. A kernel that does not know a parameter ignores it (a dotted
// one is a module's; initcall_blacklist names nothing then).
//
// The second list skips more of the same kind (the kernel adds up every
// initcall_blacklist it is given): ftrace's scan for overridden weak
// functions, a work item that runs 75–88 million instructions beside the
// initcalls (it keeps the function tracer off mcount records of weak
// functions that were overridden; fentry, fexit and kprobes attach by
// symbol and do not use it); the BPF TCP congestion control and the
// test-only dummy struct_ops, whose registration looks types up in the
// kernel's BTF (50 million on 6.12); ext4 and jbd2 (no disk); the sysfs
// files of built-in modules' parameters; and the ACPI PM timer clocksource
// (the TSC is the clocksource). no_timer_check skips the boot-time test
// that the IO-APIC delivers timer interrupts, which waits four ticks (13
// million). Measured under icount (QEMU 7.2, Westmere-v1, --bench
// lookup,controls, 5 samples × 5 rounds): on Debian 6.12, 1.643 → 1.474
// billion from power-on to /init by the guest's TSC (0.959 → 0.781 by the
// console's timestamps); on 6.1, where ftrace's scan is 75 million, 0.664
// → 0.566 by the timestamps. The noop, baseline and lookup medians stayed
// within their calibrated bounds of the earlier command line (on 6.12 the
// random baseline −0.012 %, the lookups +0.004 % and −0.001 %; on 6.1 at
// most −0.006 %). Left out on purpose: the system certificates (29
// million on 6.12), which module signatures need on kernels that enforce
// them. The local APIC timer's calibration (108 million) is skipped under
// icount alone (icountBootWork): it moves the tick off the local APIC and
// the counts with it, by up to 0.06 %, and costs the host far more time
// than its number of instructions says.
var skippedBootWork = []string{"cryptomgr.notests", "initcall_blacklist=jent_mod_init,trace_eval_init",
	"initcall_blacklist=ftrace_check_for_weak_functions,bpf_tcp_ca_kfunc_init,bpf_dummy_struct_ops_init,ext4_init_fs,journal_init,param_sysfs_builtin_init,init_acpi_pm_clocksource",
	"no_timer_check"}

// qemuArgs builds QEMU's arguments; chardev gives the -chardev value (the
// backend) with the given id for each of the three guest-to-host channels
// (console, results, fallback).
func (c *Config) qemuArgs(chardev func(id, file string) string, paced bool) []string {
	args := []string{
		"-nodefaults", "-no-user-config", "-no-reboot", "-display", "none",
	}
	args = append(args, qemuAccelArgs(c.Accel, c.CPU, c.codeCacheMiB())...)
	cmdline := c.KernelCommandLine()
	if paced {
		cmdline += " " + wire.PacedArg
	}
	args = append(args,
		"-m", strconv.Itoa(c.MemoryMB), "-smp", strconv.Itoa(c.CPUs),
		"-kernel", c.Kernel, "-initrd", c.Initramfs,
		"-append", cmdline,
		"-chardev", chardev("console", consoleFile), "-serial", "chardev:console",
		"-chardev", chardev("fallback", fallbackFile), "-serial", "chardev:fallback",
		"-device", "virtio-serial-pci",
		"-chardev", chardev("results", resultsFile),
		"-device", "virtserialport,chardev=results,name="+wire.PortName,
	)
	return append(args, c.pluginArgs(c.RunDir)...)
}

func fileChardev(path func(file string) string) func(id, file string) string {
	return func(id, file string) string { return "file,id=" + id + ",path=" + path(file) }
}

// CommandLine returns a shell command that reproduces the boot by hand,
// writing the console and results into the run directory. A paced boot is
// reproduced unpaced: by hand nobody answers the guest. Nor does anybody
// acknowledge its flush marker (wire.FlushLine): the guest powers off after
// waiting for that as long as it is bounded to.
func (c Config) CommandLine() []string {
	c.setDefaults()
	return append([]string{c.QEMU}, c.qemuArgs(fileChardev(func(f string) string { return filepath.Join(c.RunDir, f) }), false)...)
}

// QEMUVersion returns the version of the QEMU binary qemu (a path, or a
// name looked up in PATH) as its --version prints it, e.g. "7.2.22" for
// "QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)". The
// answer is cached per binary, by path, size and modification time, so a
// QEMU upgraded while the process runs is asked again.
func QEMUVersion(qemu string) (string, error) {
	path, err := exec.LookPath(qemu)
	if err != nil {
		return "", ErrQEMUMissing
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("read QEMU version: %w", err)
	}
	key := qemuBinary{path, fi.Size(), fi.ModTime().UnixNano()}
	if v, ok := qemuVersions.Load(key); ok {
		return v.(string), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), qemuVersionTimeout)
	defer cancel()
	out := boundedBuffer{max: 4 << 10}
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("read QEMU version: %s --version: %w (is it a QEMU binary?)", path, err)
	}
	v, err := parseQEMUVersion(out.String())
	if err != nil {
		return "", fmt.Errorf("read QEMU version of %s: %w", path, err)
	}
	qemuVersions.Store(key, v)
	return v, nil
}

// qemuVersionTimeout bounds a QEMU that does not answer --version.
const qemuVersionTimeout = 10 * time.Second

// qemuBinary identifies one build of QEMU on disk.
type qemuBinary struct {
	path  string
	size  int64
	mtime int64 // UnixNano
}

var qemuVersions sync.Map // qemuBinary → version string

var qemuVersionLine = regexp.MustCompile(`^QEMU emulator version ([0-9]+(?:\.[0-9]+)+)`)

// parseQEMUVersion finds the version in the output of qemu --version.
func parseQEMUVersion(out string) (string, error) {
	first, _, _ := strings.Cut(out, "\n")
	m := qemuVersionLine.FindStringSubmatch(strings.TrimSpace(first))
	if m == nil {
		return "", fmt.Errorf("no version in %q (want \"QEMU emulator version X.Y.Z\")", first)
	}
	return m[1], nil
}

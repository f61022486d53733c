package guestfaults

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/sys/unix"

	"github.com/lpmbisect/lpmbisect/guest/agent"
	"github.com/lpmbisect/lpmbisect/guest/workloads"
)

// Faults. Each applies after the guest wrote its first result, except
// NoBPF, Bimodal and Throttle; a boot that writes no result never applies
// its fault.
const (
	Hang     = "hang"     // stop writing and block forever, no power-off
	Flood    = "flood"    // write valid benchmark lines in an endless loop
	Longline = "longline" // write one endless line with no newline
	Garbage  = "garbage"  // write endless pseudo-random bytes
	Panic    = "panic"    // crash the kernel (sysrq 'c')
	Exit     = "exit"     // PID 1 exits, which panics the kernel
	// NoBPF acts at once: bpf() fails with ENOSYS, as on a kernel built
	// without CONFIG_BPF_SYSCALL.
	NoBPF = "nobpf"
	// Bimodal acts at once: in about half the boots (the parity of the
	// second the guest boots at, from the host's clock through the RTC)
	// every value is BimodalShift higher, a second mode that a
	// deterministic instrument must not hide.
	Bimodal = "bimodal"
	// Throttle acts in the profile pass: it lowers
	// perf_event_max_sample_rate to 1000 instead of raising it, so that
	// the kernel throttles the sampling event and the pass reports the
	// samples lost.
	Throttle = "throttle"
)

// BimodalShift is how far Bimodal's second mode lies above the first:
// beyond the jitter bounds (0.1 % by default), inside the default minimum
// effect (1 %), so a kernel compared with itself must stay SAME or UNKNOWN.
const BimodalShift = 0.005

// All lists every fault.
var All = append([]string{Hang, Flood, Longline, Garbage, Panic, Exit, NoBPF, Bimodal, Throttle}, Hostile...)

// param is the kernel command line's parameter that arms a fault.
const param = "lpmbisect_fault"

// Arg is the kernel parameter that arms fault kind, for --append.
func Arg(kind string) string { return param + "=" + kind }

// FromCmdline is the injector of the fault the kernel command line arms,
// nil when it arms none or one this package does not know (which the
// console says).
func FromCmdline(cmdline string) agent.Injector {
	for _, arg := range strings.Fields(cmdline) {
		kind, ok := strings.CutPrefix(arg, param+"=")
		if !ok {
			continue
		}
		if !slices.Contains(All, kind) {
			agent.Logf("%s: unknown fault %q; want one of %s", param, kind, strings.Join(All, ", "))
			return nil
		}
		return injector(kind)
	}
	return nil
}

// injector is the agent.Injector of one fault.
type injector string

func (f injector) SetUp() error {
	if f == NoBPF {
		return denyBPFSyscall()
	}
	return nil
}

func (f injector) Stream(ch io.Writer) io.Writer { return newLiar(ch, string(f)) }

func (f injector) Results(out workloads.Output, ch io.Writer, drain func() error) workloads.Output {
	return &faultyOutput{out: out, ch: ch, drain: drain, fault: string(f)}
}

func (f injector) LowSampleRate() bool { return f == Throttle }

// faultyOutput is the results output of a guest with a fault: it
// misbehaves right after writing the first result.
type faultyOutput struct {
	out   workloads.Output
	ch    io.Writer
	drain func() error
	fault string
	lied  bool // a hostile fault has tampered with the first result
}

func (f *faultyOutput) Note(key, text string) error { return f.out.Note(key, text) }

func (f *faultyOutput) Result(r *benchfmt.Result) error {
	if slices.Contains(Hostile, f.fault) {
		if !f.lied {
			f.lied = true
			lie(f.fault, r, f.out.Note)
		}
		return f.out.Result(r)
	}
	if f.fault == Bimodal {
		if secondMode() {
			for i := range r.Values {
				r.Values[i].Value *= 1 + BimodalShift
			}
		}
		return f.out.Result(r)
	}
	if err := f.out.Result(r); err != nil {
		return err
	}
	if f.fault != NoBPF && f.fault != Throttle {
		f.apply(r)
	}
	return nil
}

// bootSecond is the wall-clock second this guest booted at (the RTC gives
// the host's time; under icount the guest's own clock and its randomness
// repeat from boot to boot).
var bootSecond = time.Now().Unix()

// secondMode tells whether this boot is in FaultBimodal's second mode.
func secondMode() bool {
	if bootSecond%2 == 1 {
		logf("fault %q: this boot is in the second mode (+%g%%)", Bimodal, 100*BimodalShift)
		return true
	}
	return false
}

// apply misbehaves as f's fault says, after the first result r. It
// returns only for a fault it does not apply.
func (f *faultyOutput) apply(r *benchfmt.Result) {
	logf("fault %q: misbehaving on purpose", f.fault)
	switch f.fault {
	case Hang:
		sleepForever()
	case Flood:
		for f.out.Result(r) == nil {
		}
	case Longline:
		f.ch.Write([]byte("Benchmark"))
		chunk := []byte(strings.Repeat("x", 4096))
		for {
			if _, err := f.ch.Write(chunk); err != nil {
				break
			}
		}
	case Garbage:
		rng := rand.NewChaCha8([32]byte{'l', 'p', 'm'})
		chunk := make([]byte, 4096)
		for {
			rng.Read(chunk)
			if _, err := f.ch.Write(chunk); err != nil {
				break
			}
		}
	case Panic:
		f.drain()
		if err := os.WriteFile("/proc/sysrq-trigger", []byte("c"), 0); err != nil {
			logf("fault panic: %v", err)
		}
		time.Sleep(time.Second)
		os.Exit(3) // PID 1 exiting panics the kernel too
	case Exit:
		f.drain()
		os.Exit(0)
	default:
		return
	}
	logf("fault %q: the channel broke; blocking forever", f.fault)
	sleepForever()
}

func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}

func logf(format string, args ...any) { agent.Logf(format, args...) }

// denyBPFSyscall installs a seccomp filter, on every thread of the guest,
// that fails bpf() with ENOSYS: the guest then sees what it would see on a
// kernel built without CONFIG_BPF_SYSCALL (NoBPF).
func denyBPFSyscall() error {
	const (
		ldAbsW  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeqK    = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		retK    = unix.BPF_RET | unix.BPF_K
		nrField = 0 // offsetof(struct seccomp_data, nr)
	)
	filter := []unix.SockFilter{
		{Code: ldAbsW, K: nrField},
		{Code: jeqK, Jt: 0, Jf: 1, K: unix.SYS_BPF},
		{Code: retK, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		{Code: retK, K: unix.SECCOMP_RET_ALLOW},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	if errno != 0 {
		return fmt.Errorf("fault nobpf: seccomp: %w", errno)
	}
	logf("fault %q: bpf() now fails with ENOSYS", NoBPF)
	return nil
}

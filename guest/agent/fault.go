package agent

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/sys/unix"

	"github.com/lpmbisect/lpmbisect/wire"
)

// faultyOutput is the guest's results output. With a fault set (TEST-ONLY,
// lpmbisect.fault=KIND, one of wire.Faults) it misbehaves right after
// writing the first result, so that the host's handling of hung, flooding,
// garbled and crashed guests can be tested with a real guest. Without a
// fault it is the wire writer.
type faultyOutput struct {
	w     *wire.Writer
	ch    *channel
	fault string
	lied  bool // a hostile fault has tampered with the first result
}

func (f *faultyOutput) Note(key, text string) error { return f.w.Note(key, text) }

func (f *faultyOutput) Result(r *benchfmt.Result) error {
	if slices.Contains(wire.HostileFaults, f.fault) {
		if !f.lied {
			f.lied = true
			lie(f.fault, r, f.w.Note)
		}
		return f.w.Result(r)
	}
	if f.fault == wire.FaultBimodal {
		if secondMode() {
			for i := range r.Values {
				r.Values[i].Value *= 1 + wire.BimodalShift
			}
		}
		return f.w.Result(r)
	}
	if err := f.w.Result(r); err != nil {
		return err
	}
	if f.fault != "" && f.fault != wire.FaultNoBPF && f.fault != wire.FaultThrottle {
		applyFault(f.fault, f.w, f.ch, r)
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
		logf("TEST-ONLY fault %q: this boot is in the second mode (+%g%%)", wire.FaultBimodal, 100*wire.BimodalShift)
		return true
	}
	return false
}

// applyFault misbehaves as kind says. It returns only for an unknown kind.
func applyFault(kind string, w *wire.Writer, ch *channel, r *benchfmt.Result) {
	logf("TEST-ONLY fault %q: misbehaving on purpose", kind)
	switch kind {
	case wire.FaultHang:
		sleepForever()
	case wire.FaultFlood:
		for w.Result(r) == nil {
		}
	case wire.FaultLongline:
		ch.Write([]byte("Benchmark"))
		chunk := []byte(strings.Repeat("x", 4096))
		for {
			if _, err := ch.Write(chunk); err != nil {
				break
			}
		}
	case wire.FaultGarbage:
		rng := rand.NewChaCha8([32]byte{'l', 'p', 'm'})
		chunk := make([]byte, 4096)
		for {
			rng.Read(chunk)
			if _, err := ch.Write(chunk); err != nil {
				break
			}
		}
	case wire.FaultPanic:
		ch.drain()
		if err := os.WriteFile("/proc/sysrq-trigger", []byte("c"), 0); err != nil {
			logf("fault panic: %v", err)
		}
		time.Sleep(time.Second)
		os.Exit(3) // PID 1 exiting panics the kernel too
	case wire.FaultExit:
		ch.drain()
		os.Exit(0)
	default:
		return
	}
	logf("fault %q: the channel broke; blocking forever", kind)
	sleepForever()
}

// denyBPFSyscall installs a seccomp filter, on every thread of the guest,
// that fails bpf() with ENOSYS: the guest then sees what it would see on a
// kernel built without CONFIG_BPF_SYSCALL (TEST-ONLY, lpmbisect.fault=nobpf).
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
		return fmt.Errorf("TEST-ONLY fault nobpf: seccomp: %v", errno)
	}
	logf("TEST-ONLY fault %q: bpf() now fails with ENOSYS", wire.FaultNoBPF)
	return nil
}

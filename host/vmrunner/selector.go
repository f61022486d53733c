package vmrunner

import (
	"context"
	"fmt"
	"log"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lpmbisect/lpmbisect/wire"
)

// KVMProbeDeadline is how long a guest may stay silent under KVM before the
// accelerator is judged not to work. A working KVM prints the kernel's first
// lines well within a second.
const KVMProbeDeadline = 10 * time.Second

// Selector boots guests with a requested accelerator, resolving Auto once
// per process: KVM when /dev/kvm opens and a guest actually makes progress
// under it, Icount otherwise. Present is not the same as working: on nested
// virtualization /dev/kvm may open and the guest then hangs forever. TCG
// wall time is never chosen for Auto: without KVM it measures the emulator
// and the host's load, while instruction counts do not move.
type Selector struct {
	Requested wire.Accel
	// Log receives one line saying which accelerator Auto chose and why (a
	// warning when KVM was present but did not work); nil means silent.
	Log *log.Logger
	// Probe says whether /dev/kvm can be used; nil opens /dev/kvm. Tests
	// give a fake.
	Probe KVMProbe

	mu      sync.Mutex
	decided wire.Accel
}

// KVMUnusableError is returned when KVM was requested explicitly (not Auto)
// and cannot work: /dev/kvm does not open, or the guest makes no progress
// under it. The remedy is another accelerator (TCG, or Auto, which falls
// back by itself); callers that know their own option names add them.
type KVMUnusableError struct{ Reason string }

func (e *KVMUnusableError) Error() string {
	return "KVM unusable: " + e.Reason
}

// Accel returns the accelerator decided so far ("" while Auto is unresolved).
func (s *Selector) Accel() wire.Accel {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Requested != wire.AccelAuto {
		return s.Requested
	}
	return s.decided
}

// autoFallback is the accelerator Auto uses where KVM does not work.
const autoFallback = wire.AccelIcount

// icountWhy is what the line about Auto's choice says Icount gives.
const icountWhy = "using icount: instruction counts, deterministic"

func (s *Selector) probe() (bool, string) {
	if s.Probe != nil {
		return s.Probe()
	}
	return kvmUsable()
}

// Resolve decides Auto where no boot is needed to decide it: when /dev/kvm
// cannot be used, Auto is Icount, said once on Log. It returns the
// accelerator boots will use: the requested one, the decided one, or ""
// while /dev/kvm opens and the first boot must show whether KVM runs
// guests (Boot then decides, falling back to Icount).
func (s *Selector) Resolve() wire.Accel {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Requested != wire.AccelAuto {
		return s.Requested
	}
	if s.decided == "" {
		s.fallBackWithoutKVM()
	}
	return s.decided
}

// fallBackWithoutKVM decides Auto as autoFallback, said once on Log, when
// /dev/kvm cannot be used, and reports whether it did. s.mu is held.
func (s *Selector) fallBackWithoutKVM() bool {
	ok, why := s.probe()
	if !ok {
		s.decided = autoFallback
		s.say("accel auto: no usable /dev/kvm: %s; %s", why, icountWhy)
	}
	return !ok
}

// Boot boots cfg (whose Accel is ignored) with the selected accelerator. It
// may be called from several goroutines at once (the two VMs of a pair):
// while Auto is unresolved, the first call decides and the others wait, but
// only until the deciding guest has shown that it runs (its kernel banner),
// not until its boot ends.
func (s *Selector) Boot(ctx context.Context, cfg Config) (*Result, error) {
	switch s.Requested {
	case wire.AccelTCG, wire.AccelIcount:
		cfg.Accel = s.Requested
		return Boot(ctx, cfg)
	case wire.AccelKVM:
		if ok, why := s.probe(); !ok {
			return nil, &KVMUnusableError{Reason: "/dev/kvm cannot be used: " + why}
		}
		cfg.Accel, cfg.StartDeadline = wire.AccelKVM, KVMProbeDeadline
		r, err := Boot(ctx, cfg)
		if err == nil && kvmFailed(r) {
			return r, &KVMUnusableError{Reason: "/dev/kvm is present but " + kvmFailure(r)}
		}
		return r, err
	}

	// Auto.
	s.mu.Lock()
	if s.decided != "" {
		cfg.Accel = s.decided
		s.mu.Unlock()
		if cfg.Accel == wire.AccelKVM {
			cfg.StartDeadline = KVMProbeDeadline
		}
		return Boot(ctx, cfg)
	}
	if s.fallBackWithoutKVM() {
		s.mu.Unlock()
		cfg.Accel = autoFallback
		return Boot(ctx, cfg)
	}
	// Probe with this boot. The lock is held until the guest shows it runs
	// under KVM, or until the boot ended and the choice is made.
	var released atomic.Bool
	release := func(decided wire.Accel, format string, args ...any) {
		if released.CompareAndSwap(false, true) {
			s.decided = decided
			s.say(format, args...)
			s.mu.Unlock()
		}
	}
	cfg.Accel, cfg.StartDeadline = wire.AccelKVM, KVMProbeDeadline
	cfg.onKernelStart = func() { release(wire.AccelKVM, "accel auto: using KVM") }
	r, err := Boot(ctx, cfg)
	switch {
	case released.Load():
		return r, err // decided KVM while it ran
	case err != nil:
		released.Store(true)
		s.mu.Unlock() // undecided: the next boot probes again
		return r, err
	case !kvmFailed(r):
		release(wire.AccelKVM, "accel auto: using KVM")
		return r, err
	}
	release(autoFallback, "warning: /dev/kvm is present but %s; %s", kvmFailure(r), icountWhy)
	cfg.Accel, cfg.StartDeadline, cfg.onKernelStart = autoFallback, 0, nil
	cfg.KernelArgs = wire.RetellAccel(cfg.KernelArgs, wire.Accel(autoFallback))
	return Boot(ctx, cfg)
}

func (s *Selector) say(format string, args ...any) {
	if s.Log != nil {
		s.Log.Printf(format, args...)
	}
}

// kvmFailed tells a KVM that does not run guests from a guest that failed on
// its own: under a broken KVM the kernel never starts, or QEMU itself gives up.
func kvmFailed(r *Result) bool {
	return r.Outcome == NoProgress || r.Outcome == QEMUError
}

func kvmFailure(r *Result) string {
	if r.Outcome == QEMUError {
		detail, _, _ := strings.Cut(strings.TrimPrefix(r.Detail, "QEMU failed: "), ";")
		return "QEMU could not run the guest under KVM (" + strings.TrimPrefix(detail, "qemu-system-x86_64: ") + ")"
	}
	return fmt.Sprintf("the guest made no progress under KVM in %s (nested or broken virtualization?)", KVMProbeDeadline)
}

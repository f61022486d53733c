package vmrunner

import (
	"fmt"
	"os"
	"strings"
)

// Accel is how QEMU executes the guest.
type Accel string

// Accelerators. Results from different accelerators are never comparable:
// Icount results are instruction counts, the others wall-clock time.
const (
	// Auto uses KVM when the guest makes progress under it, else TCG.
	Auto Accel = "auto"
	// KVM runs the guest on the host CPU (needs a working /dev/kvm).
	KVM Accel = "kvm"
	// TCG is QEMU's software emulation: slower, wall-clock times.
	TCG Accel = "tcg"
	// Icount is TCG with -icount shift=0,align=off,sleep=off: the guest
	// clock advances one nanosecond per guest instruction, so in-guest
	// timings are deterministic instruction counts (reported as insn/op).
	// They say nothing about cycles, cache misses or memory latency.
	Icount Accel = "icount"
)

// ParseAccel parses an accelerator name (auto, kvm, tcg or icount, in any case).
func ParseAccel(s string) (Accel, error) {
	switch a := Accel(strings.ToLower(s)); a {
	case Auto, KVM, TCG, Icount:
		return a, nil
	}
	return "", fmt.Errorf("unknown accelerator %q (use auto, kvm, tcg or icount)", s)
}

// Unit is the benchmark unit results carry under this accelerator.
func (a Accel) Unit() string {
	if a == Icount {
		return "insn/op"
	}
	return "ns/op"
}

// kvmUsable reports whether /dev/kvm can be opened for reading and writing,
// and if not, why. Usable is not the same as working: nested or broken
// virtualization may accept the open and then never run the guest.
func kvmUsable() (bool, string) {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return false, err.Error()
	}
	f.Close()
	return true, ""
}

// args returns QEMU's accelerator and CPU options.
func (a Accel) args() []string {
	switch a {
	case KVM:
		return []string{"-accel", "kvm", "-cpu", "host"}
	case Icount:
		return []string{"-accel", "tcg", "-icount", "shift=0,align=off,sleep=off", "-cpu", "max"}
	default:
		return []string{"-accel", "tcg", "-cpu", "max"}
	}
}

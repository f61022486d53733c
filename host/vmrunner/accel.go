package vmrunner

import (
	"strconv"

	"github.com/lpmbisect/lpmbisect/wire"
)

// IcountCPUModel is the QEMU CPU model that Icount boots emulate.
//
// Instruction counts depend on the CPU the guest sees: the kernel patches
// its code for the CPU's features and vendor (alternatives, static keys,
// mitigations), so another CPU runs other instructions. "max", which TCG
// boots use, is whatever the QEMU at hand implements and grows with QEMU
// versions (7.2 added AVX to it), so counts under it would move when QEMU
// is upgraded. A versioned named model is defined once and kept the same
// by later QEMUs, so counts stay comparable across hosts and upgrades.
//
// Westmere-v1 is the newest model that TCG implements without "TCG doesn't
// support requested feature" warnings (checked on QEMU 7.2: SandyBridge-v1
// already asks for x2apic and tsc-deadline, Haswell also for pcid and
// invpcid, and newer models for more); a model with features TCG silently
// drops would depend on QEMU's TCG after all. It has SSE4.2, POPCNT,
// AES-NI and PCLMULQDQ, no XSAVE or AVX. Debian's 6.1 and 6.12 kernels
// boot on it and JIT BPF programs. The kernel takes it for an Intel CPU
// with Meltdown and MDS, so page-table isolation is on: syscalls and
// interrupts cost more instructions than under -cpu max, while code inside
// a BPF test run does not.
//
// Measured with QEMU 7.2 (LPM lookup, 10,000 entries, random keys):
// 1003.9 insn/op on Debian 6.1 and 829.6 on 6.12, against 1001.8 and 827.5
// under -cpu max; under either model two boots' medians agree within
// 0.02 % and the samples within 0.05 %. A whole boot runs 1 % fewer guest
// instructions than under -cpu max on 6.1 and 2 % more on 6.12; its wall
// and CPU time showed no difference beyond this machine's noise.
const IcountCPUModel = "Westmere-v1"

// emulatedCPUOff are the CPU features every TCG boot (Icount and TCG)
// takes off its model, because QEMU's emulation of them breaks guests.
//
// cx16 (CMPXCHG16B): under QEMU 7.2 (Debian 12's), now and then the
// guest's RFLAGS just after the instruction are the low bits of a pointer
// register: reserved bits set, often TF (a debug trap) or NT (IRET then
// faults). 7.2 emulates it in a helper that derives the other flags from
// QEMU's lazily computed flags, which a stale state would explain; later
// QEMUs emit it inline. SLUB's per-CPU fast path runs it on every kmalloc
// and kfree, so Debian's 6.12 panicked in about one boot in 30 under load,
// in __kmalloc_node_noprof just after the instruction ("Fatal exception in
// interrupt" after a double fault, or a WARN in exc_debug_kernel). Without
// cx16 the kernel uses its
// this_cpu_cmpxchg16b_emu fallback. Under a kernel compile, 3 of 65 boots
// with cx16 panicked and none of 90 without, and the lookups, noop and
// baselines counted the same to within their bounds (829.73 and 829.92
// insn/op, random keys; 829.56 to 830.36 over 60 boots). Allocation paths
// run a few more instructions than on hardware with CMPXCHG16B. It is off
// whatever the QEMU version, so counts stay comparable across hosts.
const emulatedCPUOff = ",-cx16"

// CPUModel is the QEMU CPU model (-cpu) boots under a emulate, with
// emulatedCPUOff under TCG: "host" under KVM, IcountCPUModel under Icount,
// "max" under TCG, whose wall-clock results gain from every feature QEMU
// emulates. It is recorded with every result (wire.KeyCPUModel), so
// results, calibrations and history of another model never mix. It is the
// default CPU profile's model; a profile's is CPUProfile.QEMUModel.
func CPUModel(a wire.Accel) string {
	switch a {
	case wire.AccelKVM:
		return "host"
	case wire.AccelIcount:
		return IcountCPUModel + emulatedCPUOff
	default:
		return "max" + emulatedCPUOff
	}
}

// qemuAccelArgs returns QEMU's accelerator and CPU options for boots under
// a with the CPU profile p; codeCacheMiB, when positive, sets TCG's code
// cache (tb-size; KVM has none).
func qemuAccelArgs(a wire.Accel, p CPUProfile, codeCacheMiB int) []string {
	tcg := "tcg"
	if codeCacheMiB > 0 {
		tcg += ",tb-size=" + strconv.Itoa(codeCacheMiB)
	}
	switch a {
	case wire.AccelKVM:
		return []string{"-accel", "kvm", "-cpu", p.QEMUModel(a)}
	case wire.AccelIcount:
		return []string{"-accel", tcg, "-icount", "shift=0,align=off,sleep=off", "-cpu", p.QEMUModel(a)}
	default:
		return []string{"-accel", tcg, "-cpu", p.QEMUModel(a)}
	}
}

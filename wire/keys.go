package wire

import (
	"fmt"
	"slices"
	"strings"
)

// Configuration keys of results files. Each is written as a benchfmt
// configuration line ("kernel: 6.12.117+deb12-cloud-amd64") and applies to
// the results that follow it, so plain benchstat can group by any of them
// (benchstat -col kernel). The guest writes the first group once per boot;
// the host adds the others to every result of a boot it keeps. Keys are
// lower case, without spaces, and never start with "lpmbisect-" (the prefix
// of notes).
const (
	// Written by the guest before its first result.

	// KeyKernel is the guest kernel's release (uname -r). The host
	// replaces it with the label of the side the boot belongs to, which is
	// the release unless two different images share one.
	KeyKernel = "kernel"
	// KeyAccel is the accelerator (an Accel, or "unknown" when the host did
	// not say). The host replaces it with the accelerator QEMU actually
	// used, which under auto selection may differ from the one it told the
	// guest.
	KeyAccel = "accel"
	// KeyCPU is the CPU model name from the guest's /proc/cpuinfo.
	KeyCPU = "cpu"
	// KeyChannel says how the results travelled: ChannelVirtio,
	// ChannelSerial or ChannelStdout.
	KeyChannel = "channel"
	// KeySamples is Plan.Samples, the samples per benchmark of the boot.
	KeySamples = "samples"
	// KeyRounds is Plan.Rounds, the program runs per sample.
	KeyRounds = "rounds"
	// KeyLoops is the number of operations one program run does (the
	// bpf_loop iterations of the in-kernel timed benchmarks).
	KeyLoops = "loops"
	// KeyVCPUs is the number of vCPUs the guest sees.
	KeyVCPUs = "vcpus"
	// KeyBPFJIT is the state of the BPF JIT (net.core.bpf_jit_enable).
	KeyBPFJIT = "bpf-jit"
	// KeyHashSeed says how the hash maps and bloom filters of the
	// MapBatch, HashMap and BloomFilter benchmarks are seeded:
	// HashSeedRandom or HashSeedZero.
	KeyHashSeed = "hash-seed"

	// Written by the host on every result of a boot it keeps.

	// KeySide is the side of a comparison, "A" or "B" ("A" for a run of
	// one kernel).
	KeySide = "side"
	// KeyBoot is the boot's number within its side, from 1. Together with
	// KeySide it identifies a boot, the unit of measurement.
	KeyBoot = "boot"
	// KeyPair is the round of a paired run: the A and B boots with the same
	// pair ran side by side. Either every result of a run has it or none.
	KeyPair = "pair"
	// KeyImage is the first 12 hex digits of the SHA-256 of the kernel
	// image, which tells rebuilt kernels of one release apart.
	KeyImage = "image"
	// KeyOrderSeed is the seed of the randomized order of the boots, to
	// reproduce a run's order.
	KeyOrderSeed = "order-seed"
	// KeyQEMU is the version of QEMU that ran the boot ("7.2.19"). Icount
	// results depend on it through the emulated CPU.
	KeyQEMU = "qemu"
	// KeyCPUModel is the model QEMU emulated (its -cpu value, "host" under
	// KVM). Icount instruction counts are comparable only for one model.
	KeyCPUModel = "cpu-model"
	// KeyAppend is the kernel parameters a boot got besides its run plan
	// and the fixed ones (lpmbisect's --append, and a comparison's
	// --append-b on side B), on the results of boots that got any. A CPU
	// profile's own parameters are not in it: the model (KeyCPUModel)
	// names the profile, whose parameters are its own.
	KeyAppend = "append"
	// KeyPhases is where an icount boot's guest clock went, phase by
	// phase (FormatPhases): instructions, and the idle time the clock
	// skipped, from QEMU's start to the guest's flush, read from the
	// guest's console (PhaseMark).
	KeyPhases = "phases"
	// KeyVersion is the version of lpmbisect that measured (the host's;
	// the guest is built with it).
	KeyVersion = "lpmbisect"
	// KeyParams identifies the measurement parameters of a boot besides
	// its kernel (measure.Setup.ParamsKey): the accelerator asked for, the plan
	// on the kernel command line, the VM's memory and vCPUs, and the guest
	// program. Under icount, boots of one kernel with one params, QEMU
	// version and CPU model count the same instructions.
	KeyParams = "params"
	// KeyDate is when the run started, in RFC 3339 in UTC
	// (time.RFC3339).
	KeyDate = "date"

	// Written by bisect, which builds the kernels it measures.

	// KeyCommit is the commit the kernel was built from.
	KeyCommit = "commit"
	// KeyCompiler is the compiler that built it (CONFIG_CC_VERSION_TEXT).
	KeyCompiler = "compiler"
	// KeyKconfig is the first 12 hex digits of the hash of its .config.
	KeyKconfig = "kconfig"
	// KeyJitterBounds and KeyMinEffects record the calibrated statistics a
	// comparison was decided with: per benchmark, "NAME:FRACTION …" (see
	// compare.FormatBounds), so a results file is decided again the same
	// way.
	KeyJitterBounds = "jitter-bounds"
	KeyMinEffects   = "min-effects"

	// Read by nightly's import of results from elsewhere.

	// KeyRole marks an imported result as the reference's ("reference")
	// or the tip's ("tip"): without it, a night whose results have sides A
	// and B takes A as the reference and B as the tip (as lpmbisect compare
	// writes them), and a night with one side has no reference.
	KeyRole = "role"
)

// Units of the per-operation values. The guest writes the unit its clock
// implies (see Accel.Unit); the host rewrites it to the unit of the
// accelerator QEMU actually used. Values in different units are never
// compared.
const (
	// UnitNsPerOp is wall-clock nanoseconds per operation (KVM, TCG).
	UnitNsPerOp = "ns/op"
	// UnitInsnPerOp is guest instructions per operation: under TCG with
	// -icount shift=0 the guest clock advances one nanosecond per
	// instruction. Deterministic, but it measures the length of a code
	// path, not its speed.
	UnitInsnPerOp = "insn/op"
)

// Accel is how QEMU executes the guest: the accelerator asked for (Auto
// among them), the one a boot ran under, as the guest is told it
// (lpmbisect.accel) and as results name it (KeyAccel). It is the one
// accelerator type of lpmbisect, parsed in one place (ParseAccel).
// Results from different accelerators are never comparable: icount
// results are instruction counts, the others wall-clock time.
type Accel string

// Accelerators.
const (
	// AccelAuto asks the host to choose: KVM when the guest makes progress
	// under it, else AccelIcount. Where there is no working KVM (CI
	// runners, cloud VMs, nested virtualization), wall time under TCG
	// measures the emulator and whatever else the host runs, while
	// instruction counts stay the same on a busy machine; TCG wall time is
	// only ever used when asked for. It is never a boot's accelerator: by
	// the time a guest runs, the host has decided (Decided).
	AccelAuto Accel = "auto"
	// AccelKVM runs the guest on the host CPU (needs a working /dev/kvm):
	// wall-clock times.
	AccelKVM Accel = "kvm"
	// AccelTCG is QEMU's software emulation: slower, wall-clock times.
	AccelTCG Accel = "tcg"
	// AccelIcount is TCG with -icount shift=0,align=off,sleep=off: the
	// guest clock advances one nanosecond per guest instruction, so
	// in-guest timings are deterministic instruction counts (insn/op).
	// They say nothing about cycles, cache misses or memory latency.
	AccelIcount Accel = "icount"
)

// Accels lists the accelerators a boot runs under, in the order messages
// name them.
var Accels = []Accel{AccelKVM, AccelTCG, AccelIcount}

// ErrUnknownAccel is returned by ParseAccel for a name that is not an Accel.
var ErrUnknownAccel = fmt.Errorf("not an accelerator (want %s)", orList(append([]Accel{AccelAuto}, Accels...)))

// ErrNotBootAccel is returned by parseBootAccel where a boot's accelerator
// must be named (a guest's plan, a fleet job) and was not: AccelAuto, or
// no accelerator at all.
var ErrNotBootAccel = fmt.Errorf("not a boot's accelerator (want %s)", AccelNames())

// AccelNames names the accelerators a boot runs under, for messages:
// "kvm, tcg or icount".
func AccelNames() string { return orList(Accels) }

// ParseAccel returns the Accel named s, in any case: AccelAuto or one of
// Accels.
func ParseAccel(s string) (Accel, error) {
	name := Accel(strings.ToLower(s))
	if name == AccelAuto || slices.Contains(Accels, name) {
		return name, nil
	}
	return "", fmt.Errorf("accelerator %q: %w", s, ErrUnknownAccel)
}

// parseBootAccel returns the Accel a boot runs under named s, in any
// case: one of Accels, never AccelAuto (ErrNotBootAccel).
func parseBootAccel(s string) (Accel, error) {
	if a, err := ParseAccel(s); err == nil && a.Decided() {
		return a, nil
	}
	return "", fmt.Errorf("accelerator %q: %w", s, ErrNotBootAccel)
}

// Decided reports whether a is a boot's accelerator, not AccelAuto.
func (a Accel) Decided() bool { return a != AccelAuto && a != "" }

// CountsInstructions reports whether the guest clock counts instructions
// rather than nanoseconds under a.
func (a Accel) CountsInstructions() bool { return a == AccelIcount }

// Unit is the unit of per-operation values measured under a: UnitInsnPerOp
// for AccelIcount, else UnitNsPerOp.
func (a Accel) Unit() string {
	if a.CountsInstructions() {
		return UnitInsnPerOp
	}
	return UnitNsPerOp
}

// Values of KeyHashSeed.
const (
	// HashSeedRandom is the kernel's default: every hash map hashes its
	// keys with its own random seed, so the bucket layout of one key set,
	// and with it the cost of the operations, differs from map to map
	// and from boot to boot (by up to 0.4 % for batch lookups under
	// icount).
	HashSeedRandom = "random"
	// HashSeedZero is BPF_F_ZERO_SEED (Linux 5.0): seed 0, one fixed
	// layout of a key set, so icount boots of one kernel agree. It
	// measures one layout rather than an average over layouts.
	HashSeedZero = "zero"
)

// Values of KeyChannel: how the results reached the host.
const (
	// ChannelVirtio is the virtio-serial port named PortName (or
	// Plan.Port).
	ChannelVirtio = "virtio"
	// ChannelSerial is the fallback for kernels without a virtio console:
	// the guest's second 8250 UART (/dev/ttyS1) in raw mode.
	ChannelSerial = "serial"
	// ChannelStdout is a guest run by hand, not as PID 1.
	ChannelStdout = "stdout"
)

// Layout of the initramfs the host packs for the guest. The host writes the
// kernel modules the guest needs (for the virtio-serial port) into
// ModuleDir and lists their absolute paths, dependencies first, one a line,
// in LoadOrderFile; the guest loads them in that order.
const (
	ModuleDir     = "/lib/modules/lpmbisect"
	LoadOrderFile = ModuleDir + "/load-order"
)

// orList joins names as "a, b or c".
func orList[T ~string](names []T) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// The verifier's rows: every program the guest loads for its verifier
// statistics is a benchmark VerifierPrefix+NAME whose samples are loads
// of the program. Its first value is the verifier's own verification time
// in the clock's unit per load (Accel.Unit: instructions under icount,
// where the kernel's clock counts them); the others are counts, in these
// units, read from the verifier log's statistics (BPF_LOG_STATS, Linux
// 5.2) and BPF_OBJ_GET_INFO_BY_FD. Lower is better for all of them
// (LowerIsBetter).
const (
	// VerifierPrefix starts the name of a verifier row; the program's
	// name follows.
	VerifierPrefix = "Verifier/prog="
	// UnitInsnsProcessed is the instructions the verifier processed
	// ("processed N insns"; veristat's Insns).
	UnitInsnsProcessed = "insns-processed"
	// UnitInsnsVerified is bpf_prog_info.verified_insns (Linux 5.16): the
	// kernel's own record of the same count, absent on older kernels and
	// for a rejected program.
	UnitInsnsVerified = "insns-verified"
	// UnitStatesTotal is the verifier states it created ("total_states";
	// veristat's States).
	UnitStatesTotal = "states-total"
	// UnitStatesPeak is the most states it held at once ("peak_states").
	UnitStatesPeak = "states-peak"
	// UnitStatesPerInsnMax is "max_states_per_insn".
	UnitStatesPerInsnMax = "states-per-insn-max"
	// UnitMarkReadMax is "mark_read", the longest read-mark chain; kernels
	// that no longer print it have no value.
	UnitMarkReadMax = "mark-read-max"
	// UnitStackBytes is the stack depth the verifier computed, in bytes,
	// summed over the program's subprograms ("stack depth A+B" of the
	// statistics log, Linux 5.2; veristat's stack_depth).
	UnitStackBytes = "stack-bytes"
	// UnitProgInsns is the program's size as loaded, in instructions of 8
	// bytes (a 64-bit immediate load counts 2), its subprograms included
	// (veristat's prog_size: what the loader gave the kernel, before the
	// verifier rewrote it).
	UnitProgInsns = "prog-insns"
	// UnitJitedBytes is the size of the program's JITed code in bytes
	// (bpf_prog_info.jited_prog_len, Linux 4.13; veristat's
	// prog_size_jited); absent for a rejected program and when the kernel
	// does not say (JIT off, or restricted by sysctl).
	UnitJitedBytes = "jited-bytes"
	// UnitVerdict is the verifier's verdict on a load: VerdictAccepted
	// or VerdictRejected. Both are positive, so a program one kernel
	// rejects and the other accepts is a relative change of this row like
	// any other, with a verdict, and bisectable ("which commit made my
	// program stop verifying"); lower is better. A rejected load's result
	// also carries the verifier's last lines (KeyVerifierError).
	UnitVerdict = "verifier-verdict"

	// KeyVerifierError is a rejected load's reason: the last lines of the
	// verifier log, joined by " | ", at most MaxVerifierErrorLen bytes.
	// Only the results of rejected loads carry it.
	KeyVerifierError = "verifier-error"
	// MaxVerifierErrorLen bounds KeyVerifierError's value.
	MaxVerifierErrorLen = 240
	// KeyProgType and KeyAttachType are the program type and expected
	// attach type a verifier row's load gave the kernel, as libbpf names
	// them (libbpf_bpf_prog_type_str, libbpf_bpf_attach_type_str: "xdp",
	// "kprobe", "trace_fentry"; the attach type 0 of a program that has
	// none is "cgroup_inet_ingress", as veristat writes it). Every result
	// of a verifier row carries them.
	KeyProgType   = "prog-type"
	KeyAttachType = "attach-type"
)

// verifierUnits are the count units of a verifier row, in the order
// reports show them.
var verifierUnits = []string{UnitInsnsProcessed, UnitInsnsVerified, UnitStatesTotal, UnitStatesPeak,
	UnitStatesPerInsnMax, UnitMarkReadMax, UnitStackBytes, UnitProgInsns, UnitJitedBytes, UnitVerdict}

// LoadedProgramUnits are the units of a verifier row that describe the
// program as the kernel took it (its size as loaded, its JITed size, the
// stack the verifier gave it) rather than what verifying it cost: reported
// with their verdicts, as veristat reports them, but not weighed in a
// comparison's outcome. A kernel whose JIT writes 15 more bytes for every
// program does not fail a user's CI by that.
var LoadedProgramUnits = []string{UnitStackBytes, UnitProgInsns, UnitJitedBytes}

// ResultKeys are the configuration keys that annotate a single result
// rather than say what was measured: a verifier row's load carries them.
// They are no dimension of a benchmark, and benchstat, which puts the
// results of each combination of keys in a table of its own, must ignore
// them, or a program that one boot's verifier rejects has its samples
// split across tables.
var ResultKeys = []string{KeyVerifierError, KeyProgType, KeyAttachType}

// IsVerifierTime reports whether a row of results (benchmark name, unit)
// is a verifier row's verification time: its value in the clock's unit,
// not one of verifierUnits. It is the verifier's own running time, which
// moves with the verifier's allocations from one load to the next even
// under icount (two loads of one program in one Debian 6.1 boot took
// 175000 and 185000 instructions, another program's 312000 and 429000),
// while the counts beside it repeat exactly.
func IsVerifierTime(bench, unit string) bool {
	return strings.HasPrefix(bench, VerifierPrefix) && !slices.Contains(verifierUnits, unit)
}

// Values of UnitVerdict.
const (
	VerdictAccepted = 1
	VerdictRejected = 2
)

// LowerIsBetter reports whether unit is one of verifierUnits, all of which
// are costs: fewer instructions and states verify faster, and a rejection
// (VerdictRejected) is worse than an acceptance.
func LowerIsBetter(unit string) bool {
	for _, u := range verifierUnits {
		if u == unit {
			return true
		}
	}
	return false
}

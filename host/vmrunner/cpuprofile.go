package vmrunner

import (
	"errors"
	"fmt"
	"strings"

	"github.com/lpmbisect/lpmbisect/wire"
)

// CPUProfile is the identity of a production CPU that TCG boots (icount
// and tcg) give the guest: its vendor, family, model and stepping on the
// TCG-safe model icount boots emulate (IcountCPUModel, less
// emulatedCPUOff and profileCPUOff), and the kernel parameters that make
// the kernel run closer to what it runs on that CPU.
//
// The kernel chooses its speculation mitigations from the CPU's identity
// and from what the CPU says of itself: CPUID's speculation-control bits
// and the *_NO bits of IA32_ARCH_CAPABILITIES. QEMU 7.2's TCG has neither
// (it drops spec-ctrl, stibp, ssbd, md-clear, ibpb, ibrs and
// arch-capabilities with a "TCG doesn't support requested feature"
// warning, and a named EPYC or Xeon model asks for a dozen more features
// TCG lacks), so a profile is an identity only: the kernel takes every
// *_NO bit as clear, and what the identity does not rule out it takes as
// vulnerable. KernelArgs switch off, by the kernel's own parameters, what
// the real CPU's *_NO bits would; what needs microcode or a CPUID feature
// (IBRS, eIBRS, IBPB, BHI_DIS_S, the microcode behind VERW) cannot be
// added. Mitigations lists, per Debian kernel, what the kernels choose on
// the profile under TCG, measured, beside what the real CPU runs, cited in
// docs/cpu-profiles.md; TestCPUProfilesBoot checks the measured lines
// against boots.
//
// The zero CPUProfile is the default: the model of CPUModel, with no
// identity and no parameters, so that results, calibrations and histories
// of boots without a profile keep their keys.
type CPUProfile struct {
	// Name is what --cpu-profile takes; "" for the default.
	Name string
	// CPU says which processors the identity is, for people.
	CPU string
	// Vendor is CPUID's vendor string (AuthenticAMD, GenuineIntel);
	// Family, Model and Stepping are CPUID's (decimal, as QEMU takes
	// them).
	Vendor                  string
	Family, Model, Stepping int
	// KernelArgs are the kernel parameters every boot of the profile gets
	// after the fixed ones (FixedKernelArgs): they remove mitigations the
	// real CPU does not need, which the kernel applies under TCG only
	// because the CPU cannot say it is not affected.
	KernelArgs []string
	// Mitigations are what Debian's kernels run on the profile, measured
	// under TCG, and what the real CPU runs.
	Mitigations []ProfileMitigation
}

// ProfileMitigation is one vulnerability as the kernels see it on a
// profile under TCG (their /sys/devices/system/cpu/vulnerabilities lines,
// measured on Debian 6.1 and 6.12, with the profile's KernelArgs) and as
// the real CPU's kernel reports it (cited in docs/cpu-profiles.md).
type ProfileMitigation struct {
	// Name is the file's name in /sys/devices/system/cpu/vulnerabilities.
	Name string
	// TCG61 and TCG612 are its line on Debian 6.1 and 6.12 under TCG.
	TCG61, TCG612 string
	// Real is what the real CPU's kernel runs, in the kernel's words
	// where the documentation gives them.
	Real string
	// Differs says how the boots under TCG differ from the real CPU in
	// what they execute; "" when they run the same code.
	Differs string
}

// CPUProfiles are the profiles --cpu-profile takes, in the order lists
// show them. Each is checked to boot Debian 6.1 and 6.12 under icount
// without a TCG warning (TestCPUProfilesBoot).
var CPUProfiles = []CPUProfile{
	zen2, zen3, zen4, skylakeServer, icelakeServer, sapphireRapids,
}

// DefaultCPUProfile names the default profile where a name is asked for
// (--cpu-profile default, a side's profile in a report).
const DefaultCPUProfile = "default"

// ErrUnknownCPUProfile is wrapped by LookupCPUProfile's error for a name
// that is no profile.
var ErrUnknownCPUProfile = errors.New("not a CPU profile")

// LookupCPUProfile returns the profile named name: one of CPUProfiles,
// or the default for "" and DefaultCPUProfile.
func LookupCPUProfile(name string) (CPUProfile, error) {
	if name == "" || name == DefaultCPUProfile {
		return CPUProfile{}, nil
	}
	for _, p := range CPUProfiles {
		if p.Name == name {
			return p, nil
		}
	}
	names := []string{DefaultCPUProfile}
	for _, p := range CPUProfiles {
		names = append(names, p.Name)
	}
	return CPUProfile{}, fmt.Errorf("%q: %w (want %s; lpmbisect list --cpu-profiles shows them)", name, ErrUnknownCPUProfile, strings.Join(names, ", "))
}

// CPUProfileOfModel returns the profile whose model (under a) is model:
// the default for CPUModel(a), false for a model no profile emulates
// (results of another lpmbisect, or of KVM's host CPU).
func CPUProfileOfModel(a wire.Accel, model string) (CPUProfile, bool) {
	if model == CPUModel(a) {
		return CPUProfile{}, true
	}
	for _, p := range CPUProfiles {
		if p.QEMUModel(a) == model {
			return p, true
		}
	}
	return CPUProfile{}, false
}

// IsDefault reports whether p is the default profile.
func (p CPUProfile) IsDefault() bool { return p.Name == "" }

// Label is the profile's name, DefaultCPUProfile for the default.
func (p CPUProfile) Label() string {
	if p.IsDefault() {
		return DefaultCPUProfile
	}
	return p.Name
}

// QEMUModel is the -cpu value of boots under a with p: CPUModel(a) for
// the default and under KVM (whose guest runs the host's CPU), else the
// TCG-safe model with the profile's identity.
func (p CPUProfile) QEMUModel(a wire.Accel) string {
	if p.IsDefault() || a == wire.AccelKVM {
		return CPUModel(a)
	}
	return fmt.Sprintf("%s%s%s,vendor=%s,family=%d,model=%d,stepping=%d", IcountCPUModel, emulatedCPUOff, profileCPUOff, p.Vendor, p.Family, p.Model, p.Stepping)
}

// profileCPUOff are the features a profile takes off the model besides
// emulatedCPUOff. hypervisor (CPUID.1:ECX[31]): a kernel that sees it
// assumes it may run on, or migrate to, any vulnerable CPU where the
// hypervisor did not say otherwise, and turns mitigations on by that
// rather than by the CPU's identity (ITS's aligned thunks on every Intel
// CPU without ITS_NO, BHI on every CPU without BHI_CTRL, MMIO Stale
// Data "Unknown"). Without it the kernel decides as on the bare CPU
// whose identity the profile gives, from its own tables of affected
// models (on Debian 6.1 and 6.12 measured: ITS and BHI then follow the
// model, vmscape becomes "Vulnerable", and SRSO on Zen 3 and 4 says
// "Mitigation: Safe RET" as on hardware; the boots' instructions to
// /init changed by under 3 %). The default model keeps it, so that its
// counts stay those of boots from before profiles.
const profileCPUOff = ",-hypervisor"

// ErrCPUProfileUnderKVM says that a CPU profile was asked for a boot under
// KVM, whose guest runs the host's own CPU.
var ErrCPUProfileUnderKVM = errors.New("a CPU profile is an emulated CPU's identity: it applies under tcg and icount, not kvm, whose guest runs the host's CPU")

// The profiles. Identities are CPUID's family, model and stepping of a
// shipping part of each generation. Their mitigations were measured with
// QEMU 7.2 under icount on Debian's 6.1.0-57 and 6.12.117 cloud kernels
// (TestCPUProfilesBoot boots each again and compares); what the real CPU
// runs is cited in docs/cpu-profiles.md.
var (
	zen2 = CPUProfile{Name: "zen2", CPU: "AMD EPYC 7002 (Zen 2, Rome)", Vendor: "AuthenticAMD", Family: 23, Model: 49, Stepping: 0,
		Mitigations: []ProfileMitigation{
			{Name: "retbleed", TCG61: "Mitigation: untrained return thunk; SMT disabled", TCG612: "Mitigation: untrained return thunk; SMT disabled",
				Real: "Mitigation: untrained return thunk; SMT enabled with STIBP protection"},
			{Name: "spec_rstack_overflow", TCG61: "Mitigation: safe RET, no microcode", TCG612: "Vulnerable: Safe RET, no microcode",
				Real: "Mitigation: Safe RET", Differs: noIBPB},
			amdSSBPrctl, spectreV1,
			{Name: "spectre_v2", TCG61: retpolines, TCG612: retpolines,
				Real: "Mitigation: Retpolines; IBPB: conditional; STIBP: always-on; RSB filling; PBRSB-eIBRS: Not affected; BHI: Not affected", Differs: noIBPB},
			vmscape,
		}}
	zen3 = CPUProfile{Name: "zen3", CPU: "AMD EPYC 7003 (Zen 3, Milan)", Vendor: "AuthenticAMD", Family: 25, Model: 1, Stepping: 1,
		Mitigations: []ProfileMitigation{
			srsoSafeRET, ssbNoSSBD, spectreV1,
			{Name: "spectre_v2", TCG61: retpolines, TCG612: retpolines,
				Real: "Mitigation: Retpolines; IBPB: conditional; IBRS_FW; STIBP: always-on; RSB filling; PBRSB-eIBRS: Not affected; BHI: Not affected", Differs: noIBPB},
			tsaVERW, vmscape,
		}}
	zen4 = CPUProfile{Name: "zen4", CPU: "AMD EPYC 9004 (Zen 4, Genoa)", Vendor: "AuthenticAMD", Family: 25, Model: 17, Stepping: 1,
		KernelArgs: []string{"spectre_v2=off"},
		Mitigations: []ProfileMitigation{
			srsoSafeRET, ssbNoSSBD, spectreV1,
			{Name: "spectre_v2", TCG61: spectreV2Off, TCG612: spectreV2Off,
				Real:    "Mitigation: Enhanced / Automatic IBRS; IBPB: conditional; STIBP: always-on; RSB filling; PBRSB-eIBRS: Not affected; BHI: Not affected",
				Differs: "spectre_v2=off: plain indirect branches, as under Automatic IBRS (a mode TCG cannot offer); no RSB filling at task switch, " + noIBPB},
			tsaVERW, vmscape,
		}}

	skylakeServer = CPUProfile{Name: "skylake-server", CPU: "Intel Xeon Scalable 1st generation (Skylake-SP)", Vendor: "GenuineIntel", Family: 6, Model: 85, Stepping: 4,
		KernelArgs: []string{"spectre_v2=off"},
		Mitigations: []ProfileMitigation{
			{Name: "gather_data_sampling", TCG61: notAffected, TCG612: notAffected, Real: "Mitigation: Microcode"},
			itlbMultihit("KVM: Mitigation: VMX disabled"),
			{Name: "l1tf", TCG61: pteInversion, TCG612: pteInversion, Real: "Mitigation: PTE Inversion; VMX: conditional cache flushes, SMT vulnerable"},
			{Name: "mds", TCG61: verwNoMicrocode, TCG612: verwNoMicrocode, Real: "Mitigation: Clear CPU buffers; SMT vulnerable"},
			{Name: "meltdown", TCG61: "Mitigation: PTI", TCG612: "Mitigation: PTI", Real: "Mitigation: PTI"},
			{Name: "mmio_stale_data", TCG61: verwNoMicrocode, TCG612: verwNoMicrocode, Real: "Mitigation: Clear CPU buffers; SMT vulnerable"},
			{Name: "retbleed", TCG61: "Vulnerable", TCG612: "Vulnerable", Real: "Mitigation: IBRS",
				Differs: "returns are plain on both; " + noIBRS},
			ssbNoSSBD, spectreV1,
			{Name: "spectre_v2", TCG61: spectreV2Off, TCG612: spectreV2Off,
				Real:    "Mitigation: IBRS; IBPB: conditional; STIBP: conditional; RSB filling; PBRSB-eIBRS: Not affected; BHI: Not affected",
				Differs: "spectre_v2=off: plain indirect branches, as under IBRS; " + noIBRS + "; no RSB filling at task switch, " + noIBPB},
			{Name: "tsx_async_abort", TCG61: notAffected, TCG612: notAffected, Real: "Mitigation: Clear CPU buffers; SMT vulnerable",
				Differs: "none: the model has no TSX, and MDS's VERW is the same"},
			vmscape,
		}}
	icelakeServer = CPUProfile{Name: "icelake-server", CPU: "Intel Xeon Scalable 3rd generation (Ice Lake-SP)", Vendor: "GenuineIntel", Family: 6, Model: 106, Stepping: 6,
		KernelArgs: []string{"pti=off", "mds=off", "mmio_stale_data=off"},
		Mitigations: []ProfileMitigation{
			{Name: "gather_data_sampling", TCG61: notAffected, TCG612: notAffected, Real: "Mitigation: Microcode"},
			{Name: "indirect_target_selection", TCG61: itsAligned, TCG612: itsAligned, Real: itsAligned},
			itlbMultihit(notAffected), l1tfNotAffected,
			{Name: "mds", TCG61: "Vulnerable; SMT disabled", TCG612: "Vulnerable; SMT disabled", Real: notAffected},
			{Name: "meltdown", TCG61: "Vulnerable", TCG612: "Vulnerable", Real: notAffected},
			{Name: "mmio_stale_data", TCG61: "Vulnerable", TCG612: "Vulnerable", Real: "Mitigation: Clear CPU buffers; SMT vulnerable",
				Differs: "none outside KVM: on a CPU not affected by MDS the kernel clears the buffers only on VM entry"},
			ssbNoSSBD, spectreV1,
			{Name: "spectre_v2", TCG61: retpolines, TCG612: retpolines,
				Real: "Mitigation: Enhanced / Automatic IBRS; IBPB: conditional; RSB filling; PBRSB-eIBRS: SW sequence; BHI: SW loop, KVM: SW loop",
				Differs: "retpolines where eIBRS runs plain indirect branches (spectre_v2=off would also switch off ITS's return thunks, which the real CPU runs); " +
					"no BHI clearing loop at syscall entry (the kernel assumes BHI only on CPUs with eIBRS); " + noIBPB},
		}}
	sapphireRapids = CPUProfile{Name: "sapphirerapids", CPU: "Intel Xeon Scalable 4th generation (Sapphire Rapids)", Vendor: "GenuineIntel", Family: 6, Model: 143, Stepping: 8,
		KernelArgs: []string{"pti=off", "mds=off", "spectre_v2=off"},
		Mitigations: []ProfileMitigation{
			itlbMultihit(notAffected), l1tfNotAffected,
			{Name: "mds", TCG61: "Vulnerable; SMT disabled", TCG612: "Vulnerable; SMT disabled", Real: notAffected},
			{Name: "meltdown", TCG61: "Vulnerable", TCG612: "Vulnerable", Real: notAffected},
			{Name: "mmio_stale_data", TCG61: "Unknown: No mitigations", TCG612: "Unknown: No mitigations", Real: notAffected},
			ssbNoSSBD, spectreV1,
			{Name: "spectre_v2", TCG61: spectreV2Off, TCG612: spectreV2Off,
				Real:    "Mitigation: Enhanced / Automatic IBRS; IBPB: conditional; RSB filling; PBRSB-eIBRS: SW sequence; BHI: BHI_DIS_S",
				Differs: "spectre_v2=off: plain indirect branches, as under eIBRS; no RSB filling at task switch, " + noIBPB},
			vmscape,
		}}
)

// Lines and rows that several profiles share.
const (
	notAffected     = "Not affected"
	retpolines      = "Mitigation: Retpolines; STIBP: disabled; RSB filling; PBRSB-eIBRS: Not affected; BHI: Not affected"
	spectreV2Off    = "Vulnerable; STIBP: disabled; PBRSB-eIBRS: Not affected; BHI: Not affected"
	verwNoMicrocode = "Vulnerable: Clear CPU buffers attempted, no microcode; SMT disabled"
	pteInversion    = "Mitigation: PTE Inversion"
	itsAligned      = "Mitigation: Aligned branch/return thunks"
	noIBPB          = "no IBPB at task switch (IBPB needs microcode TCG lacks)"
	noIBRS          = "no writes of SPEC_CTRL at kernel entry and exit (IBRS needs microcode TCG lacks)"
)

var (
	spectreV1 = ProfileMitigation{Name: "spectre_v1", TCG61: "Mitigation: usercopy/swapgs barriers and __user pointer sanitization",
		TCG612: "Mitigation: usercopy/swapgs barriers and __user pointer sanitization", Real: "Mitigation: usercopy/swapgs barriers and __user pointer sanitization"}
	amdSSBPrctl = ProfileMitigation{Name: "spec_store_bypass", TCG61: "Mitigation: Speculative Store Bypass disabled via prctl",
		TCG612: "Mitigation: Speculative Store Bypass disabled via prctl", Real: "Mitigation: Speculative Store Bypass disabled via prctl"}
	ssbNoSSBD = ProfileMitigation{Name: "spec_store_bypass", TCG61: "Vulnerable", TCG612: "Vulnerable", Real: "Mitigation: Speculative Store Bypass disabled via prctl",
		Differs: "no SSBD (a CPUID feature TCG lacks): only tasks that ask for it by prctl or seccomp would differ"}
	srsoSafeRET = ProfileMitigation{Name: "spec_rstack_overflow", TCG61: "Mitigation: safe RET", TCG612: "Mitigation: Safe RET", Real: "Mitigation: Safe RET"}
	tsaVERW     = ProfileMitigation{Name: "tsa", TCG61: "Vulnerable: Clear CPU buffers attempted, no microcode", TCG612: "Vulnerable: Clear CPU buffers attempted, no microcode",
		Real: "Mitigation: Clear CPU buffers", Differs: "none: the same VERW runs, which without microcode clears nothing"}
	vmscape = ProfileMitigation{Name: "vmscape", TCG61: "Vulnerable", TCG612: "Vulnerable", Real: "Mitigation: IBPB before exit to userspace",
		Differs: "none outside KVM: the IBPB follows a VM exit"}
	l1tfNotAffected = ProfileMitigation{Name: "l1tf", TCG61: pteInversion, TCG612: pteInversion, Real: notAffected,
		Differs: "PTE inversion of non-present page table entries (l1tf=off keeps it; only mitigations=off removes it)"}
)

// itlbMultihit is the row of a CPU whose real kernel reports real: the
// mitigation is KVM's, and a guest without VMX reports it unsupported.
func itlbMultihit(real string) ProfileMitigation {
	return ProfileMitigation{Name: "itlb_multihit", TCG61: "KVM: Mitigation: VMX unsupported", TCG612: "KVM: Mitigation: VMX unsupported", Real: real}
}

// defaultMitigations are what Debian's kernels run on the default model
// (Westmere-v1 without cx16, with the hypervisor bit), measured as the
// profiles' are; a default boot is no production CPU, so Real is empty.
var defaultMitigations = []ProfileMitigation{
	{Name: "indirect_target_selection", TCG61: itsAligned, TCG612: itsAligned},
	itlbMultihit(""),
	{Name: "l1tf", TCG61: pteInversion, TCG612: pteInversion},
	{Name: "mds", TCG61: verwHostUnknown, TCG612: verwHostUnknown},
	{Name: "meltdown", TCG61: "Mitigation: PTI", TCG612: "Mitigation: PTI"},
	{Name: "mmio_stale_data", TCG61: "Unknown: No mitigations", TCG612: "Unknown: No mitigations"},
	{Name: "spec_store_bypass", TCG61: "Vulnerable", TCG612: "Vulnerable"},
	{Name: "spectre_v1", TCG61: spectreV1.TCG61, TCG612: spectreV1.TCG612},
	{Name: "spectre_v2", TCG61: retpolinesBHI, TCG612: retpolinesBHI},
}

const (
	verwHostUnknown = "Vulnerable: Clear CPU buffers attempted, no microcode; SMT Host state unknown"
	retpolinesBHI   = "Mitigation: Retpolines; STIBP: disabled; RSB filling; PBRSB-eIBRS: Not affected; BHI: Retpoline"
)

// KernelMitigations are the mitigations Debian's kernels run on p under
// TCG, beside the real CPU's: the profile's Mitigations, or the default
// model's. Every vulnerability they leave out the kernels report "Not
// affected" on both.
func (p CPUProfile) KernelMitigations() []ProfileMitigation {
	if p.IsDefault() {
		return defaultMitigations
	}
	return p.Mitigations
}

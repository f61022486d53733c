package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/wire"
)

// WriteCPUProfiles writes the CPU profiles --cpu-profile takes (lpmbisect
// list --cpu-profiles), the default model first: each one's QEMU model,
// the kernel parameters it adds, the return thunk and the mitigations
// Debian's 6.1 and 6.12 kernels run on it under TCG (measured), beside
// what they run on the real CPU, and how the two differ in what they
// execute. Vulnerabilities a profile does not list are "Not affected" on
// both kernels.
func WriteCPUProfiles(w io.Writer, profiles []vmrunner.CPUProfile) error {
	fmt.Fprintln(w, "CPU PROFILES (--cpu-profile NAME; tcg and icount boots)")
	fmt.Fprintln(w, wrap("QEMU 7.2's TCG has no speculation-control CPUID bits and no IA32_ARCH_CAPABILITIES: a profile is an identity (vendor, family, model, stepping) on the TCG-safe model, which the kernel chooses its mitigations by, taking every *_NO bit as clear; the kernel parameters take off what the real CPU's *_NO bits would. What needs microcode (IBPB, IBRS, eIBRS, BHI_DIS_S, SSBD) cannot be added. Measured on Debian 6.1.0-57 and 6.12.117 under icount; docs/cpu-profiles.md cites what the real CPUs run.", 78, "  "))
	for _, p := range profiles {
		fmt.Fprintln(w)
		name := p.Label()
		if p.CPU != "" {
			name += " — " + p.CPU
		}
		fmt.Fprintln(w, name)
		fmt.Fprintf(w, "  QEMU -cpu %s\n", p.QEMUModel(wire.AccelIcount))
		args := "none"
		if len(p.KernelArgs) > 0 {
			args = strings.Join(p.KernelArgs, " ")
		}
		fmt.Fprintf(w, "  kernel parameters: %s\n", args)
		ms := p.KernelMitigations()
		var on61, on612 []wire.Vulnerability
		for _, m := range ms {
			on61 = append(on61, wire.Vulnerability{Name: m.Name, Text: m.TCG61})
			on612 = append(on612, wire.Vulnerability{Name: m.Name, Text: m.TCG612})
		}
		fmt.Fprintf(w, "  return thunk: %s\n", sameOrEach(wire.ReturnThunk(on61), wire.ReturnThunk(on612)))
		for _, m := range ms {
			fmt.Fprintf(w, "  %s\n", m.Name)
			fmt.Fprintf(w, "    TCG:      %s\n", sameOrEach(m.TCG61, m.TCG612))
			if p.IsDefault() {
				continue
			}
			fmt.Fprintf(w, "    real CPU: %s\n", m.Real)
			switch {
			case m.Differs != "":
				fmt.Fprintf(w, "    differs:  %s\n", m.Differs)
			case m.TCG61 != m.Real || m.TCG612 != m.Real:
				fmt.Fprintln(w, "    same code: the lines differ in words, or in what only KVM runs")
			}
		}
	}
	return nil
}

// sameOrEach is a when both kernels say the same, else each one's.
func sameOrEach(on61, on612 string) string {
	if on61 == on612 {
		return on61 + " (6.1, 6.12)"
	}
	return "6.1 " + on61 + "; 6.12 " + on612
}

package vmrunner

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/wire"
)

// TestCPUProfiles: the profiles the issue asks for exist, each once, with
// an identity of its own, a model TCG emulates without warnings (the
// default's, less features, plus the identity) and no KVM model.
func TestCPUProfiles(t *testing.T) {
	var names, models []string
	for _, p := range CPUProfiles {
		names = append(names, p.Name)
		m := p.QEMUModel(wire.AccelIcount)
		if slices.Contains(models, m) {
			t.Errorf("profile %s: model %s is another profile's", p.Name, m)
		}
		models = append(models, m)
		if !strings.HasPrefix(m, CPUModel(wire.AccelIcount)+",") || strings.Contains(m, "+") {
			t.Errorf("profile %s: model %s; want the icount model with features only taken off", p.Name, m)
		}
		if p.QEMUModel(wire.AccelTCG) != m || p.QEMUModel(wire.AccelKVM) != "host" {
			t.Errorf("profile %s: tcg model %q, kvm model %q; want %q and host", p.Name, p.QEMUModel(wire.AccelTCG), p.QEMUModel(wire.AccelKVM), m)
		}
		if got, err := LookupCPUProfile(p.Name); err != nil || got.Name != p.Name {
			t.Errorf("LookupCPUProfile(%s) = %q, %v", p.Name, got.Name, err)
		}
		if got, ok := CPUProfileOfModel(wire.AccelIcount, m); !ok || got.Name != p.Name {
			t.Errorf("CPUProfileOfModel(%s) = %q, %v; want %s", m, got.Name, ok, p.Name)
		}
		if p.Vendor != "AuthenticAMD" && p.Vendor != "GenuineIntel" || p.CPU == "" || len(p.Mitigations) == 0 {
			t.Errorf("profile %s: vendor %q, CPU %q, %d mitigations; want a vendor, the CPU it is and what its kernels run", p.Name, p.Vendor, p.CPU, len(p.Mitigations))
		}
	}
	for _, want := range []string{"zen2", "zen3", "zen4", "skylake-server", "icelake-server", "sapphirerapids"} {
		if !slices.Contains(names, want) {
			t.Errorf("no CPU profile %s (have %q)", want, names)
		}
	}
	if got := CPUProfiles[0].QEMUModel(wire.AccelIcount); got != "Westmere-v1,-cx16,-hypervisor,vendor=AuthenticAMD,family=23,model=49,stepping=0" {
		t.Errorf("zen2's model = %q", got)
	}
}

// TestDefaultCPUProfile: the default profile is the model of boots from
// before profiles, with their kernel parameters, under every name it has.
func TestDefaultCPUProfile(t *testing.T) {
	for _, name := range []string{"", DefaultCPUProfile} {
		p, err := LookupCPUProfile(name)
		if err != nil || !p.IsDefault() || p.Label() != DefaultCPUProfile {
			t.Errorf("LookupCPUProfile(%q) = %+v, %v; want the default", name, p, err)
		}
	}
	for _, a := range wire.Accels {
		if got := (CPUProfile{}).QEMUModel(a); got != CPUModel(a) {
			t.Errorf("default QEMUModel(%s) = %q; want %q", a, got, CPUModel(a))
		}
		if got, ok := CPUProfileOfModel(a, CPUModel(a)); !ok || !got.IsDefault() {
			t.Errorf("CPUProfileOfModel(%s, %s) = %q, %v; want the default", a, CPUModel(a), got.Name, ok)
		}
	}
	if got, want := strings.Join(FixedKernelArgs(wire.AccelIcount, CPUProfile{}), " "), strings.Join(slices.Concat(skippedBootWork, icountBootWork), " "); got != want {
		t.Errorf("FixedKernelArgs(icount, default) = %q; want %q", got, want)
	}
	if _, err := LookupCPUProfile("zen9"); !errors.Is(err, ErrUnknownCPUProfile) || !strings.Contains(err.Error(), "zen2") {
		t.Errorf("LookupCPUProfile(zen9) = %v; want ErrUnknownCPUProfile naming the profiles", err)
	}
	if _, ok := CPUProfileOfModel(wire.AccelIcount, "EPYC-v4"); ok {
		t.Errorf("CPUProfileOfModel(EPYC-v4) found a profile")
	}
}

// TestCPUProfileKernelArgs: a profile's parameters follow the fixed ones on
// TCG boots, and no boot under KVM runs a profile.
func TestCPUProfileKernelArgs(t *testing.T) {
	p, err := LookupCPUProfile("sapphirerapids")
	if err != nil || len(p.KernelArgs) == 0 {
		t.Fatalf("LookupCPUProfile(sapphirerapids) = %+v, %v; want a profile with kernel parameters", p, err)
	}
	cfg := Config{Accel: wire.AccelIcount, CPU: p, KernelArgs: []string{"lpmbisect.samples=1"}}
	line := cfg.KernelCommandLine()
	want := strings.Join(FixedKernelArgs(wire.AccelIcount, CPUProfile{}), " ") + " " + strings.Join(p.KernelArgs, " ") + " lpmbisect.samples=1"
	if !strings.HasSuffix(line, want) {
		t.Errorf("KernelCommandLine() = %q; want it to end %q", line, want)
	}
	if got := FixedKernelArgs(wire.AccelKVM, p); slices.Contains(got, p.KernelArgs[0]) {
		t.Errorf("FixedKernelArgs(kvm, %s) = %q; want none of the profile's", p.Name, got)
	}
	kvm := fakeConfig(t, "ok")
	kvm.Accel, kvm.CPU = wire.AccelKVM, p
	if _, err := Boot(context.Background(), kvm); !errors.Is(err, ErrCPUProfileUnderKVM) {
		t.Errorf("Boot(kvm, %s) = %v; want ErrCPUProfileUnderKVM", p.Name, err)
	}
}

// TestBootCPUProfile: QEMU gets the profile's model, the result records
// it, and QEMU's warnings come back with the result.
func TestBootCPUProfile(t *testing.T) {
	t.Parallel()
	p, err := LookupCPUProfile("zen4")
	if err != nil {
		t.Fatal(err)
	}
	cfg := fakeConfig(t, "ok")
	cfg.Accel, cfg.CPU = wire.AccelIcount, p
	cfg.KernelArgs = append(cfg.KernelArgs, "fake.qemu-warning=1")
	r := bootFake(t, context.Background(), cfg) // checks the -cpu QEMU got against CPUModel
	if r.Outcome != OK || r.CPUModel != p.QEMUModel(wire.AccelIcount) {
		t.Errorf("Boot(zen4) = %s, CPU %q; want %s on %q", r.Outcome, r.CPUModel, OK, p.QEMUModel(wire.AccelIcount))
	}
	if len(r.QEMUWarnings) != 1 || !strings.Contains(r.QEMUWarnings[0], "TCG doesn't support requested feature") {
		t.Errorf("Boot(zen4).QEMUWarnings = %q; want QEMU's one warning", r.QEMUWarnings)
	}
	plain := bootFake(t, context.Background(), fakeConfig(t, "ok"))
	if len(plain.QEMUWarnings) != 0 {
		t.Errorf("Boot(ok).QEMUWarnings = %q; want none", plain.QEMUWarnings)
	}
}

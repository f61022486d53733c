package vmrunner

import (
	"regexp"
	"strings"
	"testing"
)

func TestParseAccel(t *testing.T) {
	for in, want := range map[string]Accel{"auto": Auto, "KVM": KVM, "tcg": TCG, "icount": Icount} {
		if got, err := ParseAccel(in); err != nil || got != want {
			t.Errorf("ParseAccel(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseAccel("hvf"); err == nil {
		t.Errorf("ParseAccel(hvf) = nil error; want error")
	}
}

func TestUnit(t *testing.T) {
	if got := Icount.Unit(); got != "insn/op" {
		t.Errorf("Icount.Unit() = %q; want insn/op", got)
	}
	for _, a := range []Accel{KVM, TCG} {
		if got := a.Unit(); got != "ns/op" {
			t.Errorf("%s.Unit() = %q; want ns/op", a, got)
		}
	}
}

func TestAccelArgs(t *testing.T) {
	for a, want := range map[Accel]string{
		KVM: "-accel kvm -cpu host", TCG: "-accel tcg -cpu max,-cx16",
		Icount: "-accel tcg -icount shift=0,align=off,sleep=off -cpu " + IcountCPUModel + ",-cx16",
	} {
		if got := strings.Join(a.args(), " "); got != want {
			t.Errorf("%s.args() = %q; want %q", a, got, want)
		}
	}
}

func TestCPUModel(t *testing.T) {
	for a, want := range map[Accel]string{KVM: "host", TCG: "max,-cx16", Icount: IcountCPUModel + ",-cx16"} {
		if got := a.CPUModel(); got != want {
			t.Errorf("%s.CPUModel() = %q; want %q", a, got, want)
		}
	}
	// A model whose definition moves with QEMU versions would make
	// instruction counts move with them.
	if !regexp.MustCompile(`-v[0-9]+$`).MatchString(IcountCPUModel) {
		t.Errorf("IcountCPUModel = %q; want a versioned model (NAME-vN), fixed across QEMU versions", IcountCPUModel)
	}
}

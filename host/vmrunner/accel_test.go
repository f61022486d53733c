package vmrunner

import (
	"regexp"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/wire"
)

func TestParseAccel(t *testing.T) {
	for in, want := range map[string]wire.Accel{"auto": wire.AccelAuto, "KVM": wire.AccelKVM, "tcg": wire.AccelTCG, "icount": wire.AccelIcount} {
		if got, err := wire.ParseAccel(in); err != nil || got != want {
			t.Errorf("ParseAccel(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := wire.ParseAccel("hvf"); err == nil {
		t.Errorf("ParseAccel(hvf) = nil error; want error")
	}
}

func TestUnit(t *testing.T) {
	if got := wire.AccelIcount.Unit(); got != "insn/op" {
		t.Errorf("Icount.Unit() = %q; want insn/op", got)
	}
	for _, a := range []wire.Accel{wire.AccelKVM, wire.AccelTCG} {
		if got := a.Unit(); got != "ns/op" {
			t.Errorf("%s.Unit() = %q; want ns/op", a, got)
		}
	}
}

func TestAccelArgs(t *testing.T) {
	for a, want := range map[wire.Accel]string{
		wire.AccelKVM: "-accel kvm -cpu host", wire.AccelTCG: "-accel tcg -cpu max,-cx16",
		wire.AccelIcount: "-accel tcg -icount shift=0,align=off,sleep=off -cpu " + IcountCPUModel + ",-cx16",
	} {
		if got := strings.Join(qemuAccelArgs(a, CPUProfile{}, 0), " "); got != want {
			t.Errorf("qemuAccelArgs(%s) = %q; want %q", a, got, want)
		}
	}
}

func TestCPUModel(t *testing.T) {
	for a, want := range map[wire.Accel]string{wire.AccelKVM: "host", wire.AccelTCG: "max,-cx16", wire.AccelIcount: IcountCPUModel + ",-cx16"} {
		if got := CPUModel(a); got != want {
			t.Errorf("CPUModel(%s) = %q; want %q", a, got, want)
		}
	}
	// A model whose definition moves with QEMU versions would make
	// instruction counts move with them.
	if !regexp.MustCompile(`-v[0-9]+$`).MatchString(IcountCPUModel) {
		t.Errorf("IcountCPUModel = %q; want a versioned model (NAME-vN), fixed across QEMU versions", IcountCPUModel)
	}
}

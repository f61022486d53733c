package fleet

import (
	"errors"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/wire"
)

var (
	sumA = strings.Repeat("a", 64)
	sumB = strings.Repeat("b", 64)
)

func validBoot() BootArgs {
	return BootArgs{Version: ArgsVersion, Accel: wire.AccelIcount, Guest: sumA, StuckAfterMS: 60_000,
		Class: HostClass{QEMUVersion: "7.2.22", CPUModel: vmrunner.CPUModel(wire.AccelIcount)},
		Boot: BootSpec{Kernel: sumA, Initramfs: sumB, KernelArgs: []string{"lpmbisect.samples=3", `lpmbisect.bench="LPMTrie/op=lookup"`},
			Labels: Labels{Run: "r1", Side: "A", Boot: 1}}}
}

func TestBootArgsValidate(t *testing.T) {
	if err := validBoot().Validate(); err != nil {
		t.Fatalf("Validate(valid) = %v", err)
	}
	zen2 := validBoot()
	zen2.Boot.CPUProfile = "zen2"
	if err := zen2.Validate(); err != nil {
		t.Fatalf("Validate(a boot of CPU profile zen2) = %v", err)
	}
	for _, tc := range []struct {
		name  string
		edit  func(*BootArgs)
		field string
		want  error
	}{
		{"version", func(a *BootArgs) { a.Version = 2 }, "version", ErrArgsVersion},
		{"accel auto", func(a *BootArgs) { a.Accel = wire.AccelAuto }, "accel", ErrBadArgs},
		{"guest", func(a *BootArgs) { a.Guest = "abc" }, "guest", ErrBadArgs},
		{"kernel upper case", func(a *BootArgs) { a.Boot.Kernel = strings.ToUpper(sumA) }, "kernel", ErrBadArgs},
		{"stuck too short", func(a *BootArgs) { a.StuckAfterMS = 10 }, "stuck_after_ms", ErrBadArgs},
		{"stuck too long", func(a *BootArgs) { a.StuckAfterMS = 1 << 40 }, "stuck_after_ms", ErrBadArgs},
		{"no class", func(a *BootArgs) { a.Class = HostClass{} }, "class", ErrBadArgs},
		{"icount cpus", func(a *BootArgs) { a.Boot.CPUs = 2 }, "cpus", ErrBadArgs},
		{"memory", func(a *BootArgs) { a.Boot.MemoryMB = 64 }, "memory_mb", ErrBadArgs},
		{"newline in arg", func(a *BootArgs) { a.Boot.KernelArgs = []string{"init=/x\nrm"} }, "kernel_args", ErrBadArgs},
		{"empty arg", func(a *BootArgs) { a.Boot.KernelArgs = []string{""} }, "kernel_args", ErrBadArgs},
		{"max bytes", func(a *BootArgs) { a.Boot.MaxBytes = vmrunner.DefaultLimits.MaxBytes + 1 }, "max_bytes", ErrBadArgs},
		{"deadline", func(a *BootArgs) { a.Boot.BootDeadlineMS = -1 }, "boot_deadline_ms", ErrBadArgs},
		{"side", func(a *BootArgs) { a.Boot.Labels.Side = "A/../B" }, "labels.side", ErrBadArgs},
		{"boot", func(a *BootArgs) { a.Boot.Labels.Boot = 0 }, "labels.boot", ErrBadArgs},
		{"CPU profile", func(a *BootArgs) { a.Boot.CPUProfile = "zen9" }, "cpu_profile", ErrBadArgs},
		{"CPU profile under kvm", func(a *BootArgs) { a.Accel, a.Boot.CPUProfile = wire.AccelKVM, "zen2" }, "cpu_profile", ErrBadArgs},
	} {
		a := validBoot()
		tc.edit(&a)
		err := a.Validate()
		var ae *ArgsError
		if !errors.As(err, &ae) || ae.Field != tc.field || !errors.Is(err, tc.want) {
			t.Errorf("%s: Validate() = %v; want an ArgsError of field %s wrapping %v", tc.name, err, tc.field, tc.want)
		}
	}
}

func TestRoundArgsValidate(t *testing.T) {
	b := validBoot().Boot
	pair := func(p1, p2 int) []BootSpec {
		x, y := b, b
		x.Labels.Pair, y.Labels.Pair, y.Labels.Side = p1, p2, "B"
		return []BootSpec{x, y}
	}
	ok := RoundArgs{Version: ArgsVersion, Accel: wire.AccelTCG, Guest: sumA, StuckAfterMS: 60_000, Paired: true, Boots: pair(3, 3)}
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate(paired round) = %v", err)
	}
	for name, edit := range map[string]func(*RoundArgs){
		"no boots":        func(a *RoundArgs) { a.Boots = nil },
		"too many boots":  func(a *RoundArgs) { a.Boots = make([]BootSpec, MaxRoundBoots+1) },
		"pairs differ":    func(a *RoundArgs) { a.Boots = pair(3, 4) },
		"paired unpaired": func(a *RoundArgs) { a.Boots = pair(0, 0) },
		"paired icount":   func(a *RoundArgs) { a.Accel = wire.AccelIcount },
		"version":         func(a *RoundArgs) { a.Version = 0 },
	} {
		a := ok
		edit(&a)
		var ae *ArgsError
		if err := a.Validate(); !errors.As(err, &ae) {
			t.Errorf("%s: Validate() = %v; want an ArgsError", name, err)
		}
	}
}

func TestBuildArgsValidate(t *testing.T) {
	ok := BuildArgs{Version: ArgsVersion, Tree: "bpf-next", Commit: strings.Repeat("0123456789", 4), Config: "tiny", StuckAfterMS: 3_600_000}
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate(build) = %v", err)
	}
	for name, edit := range map[string]func(*BuildArgs){
		"ref not commit":  func(a *BuildArgs) { a.Commit = "master" },
		"short commit":    func(a *BuildArgs) { a.Commit = "0123456" },
		"option as tree":  func(a *BuildArgs) { a.Tree = "--upload-pack=x" },
		"path as config":  func(a *BuildArgs) { a.Config = "../../etc" },
		"no stuck time":   func(a *BuildArgs) { a.StuckAfterMS = 0 },
		"another version": func(a *BuildArgs) { a.Version = 7 },
	} {
		a := ok
		edit(&a)
		var ae *ArgsError
		if err := a.Validate(); !errors.As(err, &ae) {
			t.Errorf("%s: Validate() = %v; want an ArgsError", name, err)
		}
	}
}

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

func validBoot() bootArgs {
	return bootArgs{Version: argsVersion, Accel: wire.AccelIcount, Guest: sumA, StuckAfterMS: 60_000,
		Class: HostClass{QEMUVersion: "7.2.22", CPUModel: vmrunner.CPUModel(wire.AccelIcount)},
		Boot: bootSpec{Kernel: sumA, Initramfs: sumB, KernelArgs: []string{"lpmbisect.samples=3", `lpmbisect.bench="LPMTrie/op=lookup"`},
			Labels: labels{Run: "r1", Side: "A", Boot: 1}}}
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
		edit  func(*bootArgs)
		field string
		want  error
	}{
		{"version", func(a *bootArgs) { a.Version = 2 }, "version", ErrArgsVersion},
		{"accel auto", func(a *bootArgs) { a.Accel = wire.AccelAuto }, "accel", ErrBadArgs},
		{"guest", func(a *bootArgs) { a.Guest = "abc" }, "guest", ErrBadArgs},
		{"kernel upper case", func(a *bootArgs) { a.Boot.Kernel = strings.ToUpper(sumA) }, "kernel", ErrBadArgs},
		{"stuck too short", func(a *bootArgs) { a.StuckAfterMS = 10 }, "stuck_after_ms", ErrBadArgs},
		{"stuck too long", func(a *bootArgs) { a.StuckAfterMS = 1 << 40 }, "stuck_after_ms", ErrBadArgs},
		{"no class", func(a *bootArgs) { a.Class = HostClass{} }, "class", ErrBadArgs},
		{"icount cpus", func(a *bootArgs) { a.Boot.CPUs = 2 }, "cpus", ErrBadArgs},
		{"memory", func(a *bootArgs) { a.Boot.MemoryMB = 64 }, "memory_mb", ErrBadArgs},
		{"newline in arg", func(a *bootArgs) { a.Boot.KernelArgs = []string{"init=/x\nrm"} }, "kernel_args", ErrBadArgs},
		{"empty arg", func(a *bootArgs) { a.Boot.KernelArgs = []string{""} }, "kernel_args", ErrBadArgs},
		{"max bytes", func(a *bootArgs) { a.Boot.MaxBytes = vmrunner.DefaultLimits.MaxBytes + 1 }, "max_bytes", ErrBadArgs},
		{"deadline", func(a *bootArgs) { a.Boot.BootDeadlineMS = -1 }, "boot_deadline_ms", ErrBadArgs},
		{"side", func(a *bootArgs) { a.Boot.Labels.Side = "A/../B" }, "labels.side", ErrBadArgs},
		{"boot", func(a *bootArgs) { a.Boot.Labels.Boot = 0 }, "labels.boot", ErrBadArgs},
		{"CPU profile", func(a *bootArgs) { a.Boot.CPUProfile = "zen9" }, "cpu_profile", ErrBadArgs},
		{"CPU profile under kvm", func(a *bootArgs) { a.Accel, a.Boot.CPUProfile = wire.AccelKVM, "zen2" }, "cpu_profile", ErrBadArgs},
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
	pair := func(p1, p2 int) []bootSpec {
		x, y := b, b
		x.Labels.Pair, y.Labels.Pair, y.Labels.Side = p1, p2, "B"
		return []bootSpec{x, y}
	}
	ok := roundArgs{Version: argsVersion, Accel: wire.AccelTCG, Guest: sumA, StuckAfterMS: 60_000, Paired: true, Boots: pair(3, 3)}
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate(paired round) = %v", err)
	}
	for name, edit := range map[string]func(*roundArgs){
		"no boots":        func(a *roundArgs) { a.Boots = nil },
		"too many boots":  func(a *roundArgs) { a.Boots = make([]bootSpec, maxRoundBoots+1) },
		"pairs differ":    func(a *roundArgs) { a.Boots = pair(3, 4) },
		"paired unpaired": func(a *roundArgs) { a.Boots = pair(0, 0) },
		"paired icount":   func(a *roundArgs) { a.Accel = wire.AccelIcount },
		"version":         func(a *roundArgs) { a.Version = 0 },
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
	ok := buildArgs{Version: argsVersion, Tree: "bpf-next", Commit: strings.Repeat("0123456789", 4), Config: "tiny", StuckAfterMS: 3_600_000}
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate(build) = %v", err)
	}
	for name, edit := range map[string]func(*buildArgs){
		"ref not commit":  func(a *buildArgs) { a.Commit = "master" },
		"short commit":    func(a *buildArgs) { a.Commit = "0123456" },
		"option as tree":  func(a *buildArgs) { a.Tree = "--upload-pack=x" },
		"path as config":  func(a *buildArgs) { a.Config = "../../etc" },
		"no stuck time":   func(a *buildArgs) { a.StuckAfterMS = 0 },
		"another version": func(a *buildArgs) { a.Version = 7 },
	} {
		a := ok
		edit(&a)
		var ae *ArgsError
		if err := a.Validate(); !errors.As(err, &ae) {
			t.Errorf("%s: Validate() = %v; want an ArgsError", name, err)
		}
	}
}

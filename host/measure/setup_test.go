package measure

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/host/initramfs"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/testbed/testqemu"
	"github.com/lpmbisect/lpmbisect/wire"
)

// NewSetup names the option it rejects as its configuration key does, so
// a command line can name the flag.
func TestNewSetupOptionErrors(t *testing.T) {
	guest := filepath.Join(t.TempDir(), "lpmbisect-guest")
	os.WriteFile(guest, []byte("not used"), 0o755)
	ok := Options{Accel: "ICOUNT", Plan: GuestPlan(wire.DefaultPlan()), Guest: guest, CacheDir: t.TempDir()}
	s, err := NewSetup(ok)
	if err != nil || s.Accel != wire.AccelIcount {
		t.Fatalf("NewSetup(accel ICOUNT) = %v; want accel icount", err)
	}
	for _, c := range []struct {
		name   string
		change func(*Options)
		option string
	}{
		{"unknown accel", func(o *Options) { o.Accel = "hvf" }, "accel"},
		{"two vCPUs under icount", func(o *Options) { o.CPUs = 2 }, "cpus"},
		{"too little memory", func(o *Options) { o.MemoryMB = 64 }, "memory"},
		{"missing guest", func(o *Options) { o.Guest = ""; t.Setenv("PATH", t.TempDir()) }, "guest"},
		{"unknown CPU profile", func(o *Options) { o.CPUProfile = "zen9" }, "cpu_profile"},
		{"a CPU profile under KVM", func(o *Options) { o.Accel, o.CPUProfile = wire.AccelKVM, "zen2" }, "cpu_profile"},
		{"unknown CPU profile of B", func(o *Options) { o.CPUProfileB = "zen9" }, "cpu_profile_b"},
		{"a CPU profile of B under KVM", func(o *Options) { o.Accel, o.CPUProfileB = wire.AccelKVM, "zen2" }, "cpu_profile_b"},
	} {
		o := ok
		c.change(&o)
		var oe *OptionError
		if _, err := NewSetup(o); !errors.As(err, &oe) || oe.Option != c.option {
			t.Errorf("NewSetup(%s) error = %v; want an OptionError of %q", c.name, err, c.option)
		}
	}
}

// TestNewSetupCPUProfile: a profile is an emulated CPU, so auto becomes
// icount without a probe of KVM even where /dev/kvm opens and QEMU would
// run guests under it, and says so; the setup's boots emulate the profile.
func TestNewSetupCPUProfile(t *testing.T) {
	dir := t.TempDir()
	guest := filepath.Join(dir, "lpmbisect-guest")
	os.WriteFile(guest, []byte("not used"), 0o755)
	qemu := testqemu.New(t, testqemu.Works, testqemu.Works)
	var buf strings.Builder
	s, err := NewSetup(Options{Plan: GuestPlan(wire.DefaultPlan()), Guest: guest, CacheDir: t.TempDir(), QEMU: qemu.Path, CPUProfile: "zen3",
		ProbeKernels: []string{fakeKernel(t, dir, "a", "6.1.0-fake")}, Log: log.New(&buf, "", 0), kvmDevice: testqemu.Device(t)})
	if err != nil {
		t.Fatal(err)
	}
	if s.Accel != wire.AccelIcount || s.VM.CPU.Name != "zen3" || !strings.Contains(buf.String(), "CPU profile zen3 is an emulated CPU: using icount") {
		t.Errorf("NewSetup(auto, zen3, KVM works) = accel %s, CPU %q, said %q; want icount, zen3, why", s.Accel, s.VM.CPU.Name, buf.String())
	}
	if n := len(qemu.Boots(t)); n != 0 {
		t.Errorf("NewSetup(auto, zen3) made %d probe boots; want none", n)
	}
}

// TestNewSetupDecidesAccelOnce checks that the accelerator is decided
// before anything is planned, once, under fake QEMUs on fake devices (the
// case is tested on every machine): icount with its plan defaults and no
// boot where /dev/kvm does not open; a probe boot of each kernel where it
// opens, kept for the next setup, which boots nothing to decide; the
// plan, the parameters' key and the boots' template all of the decided
// accelerator.
func TestNewSetupDecidesAccelOnce(t *testing.T) {
	dir := t.TempDir()
	guest := filepath.Join(dir, "lpmbisect-guest")
	os.WriteFile(guest, []byte("not used"), 0o755)
	kernels := []string{fakeKernel(t, dir, "a", "6.1.0-fake"), fakeKernel(t, dir, "b", "6.12.0-fake")}
	plan := GuestPlan(wire.DefaultPlan())
	plan.Samples, plan.Rounds = 0, 0 // the accelerator's defaults
	for _, c := range []struct {
		name            string
		device, qemu    string // the fake QEMU's behaviour
		accel           wire.Accel
		samples, rounds int
		boots           int // probe boots of the first setup
		says            string
	}{
		{"no /dev/kvm", testqemu.NoDevice(t), testqemu.Broken, wire.AccelIcount, wire.DefaultIcountSamples, wire.DefaultIcountRounds, 0,
			"accel auto: no usable "},
		{"broken KVM", testqemu.Device(t), testqemu.Broken, wire.AccelIcount, wire.DefaultIcountSamples, wire.DefaultIcountRounds, 2,
			`KVM does not run guests here: QEMU reported "KVM internal error. Suberror: 1`},
		{"working KVM", testqemu.Device(t), testqemu.Works, wire.AccelKVM, wire.DefaultWallClockSamples, wire.DefaultWallClockRounds, 2,
			"accel auto: using KVM: every kernel printed its banner under KVM"},
	} {
		t.Run(c.name, func(t *testing.T) {
			qemu := testqemu.New(t, c.qemu, c.qemu)
			cache := t.TempDir()
			for setup := 1; setup <= 2; setup++ {
				var buf strings.Builder
				o := Options{Plan: plan, Guest: guest, CacheDir: cache, QEMU: qemu.Path, ProbeKernels: kernels, Log: log.New(&buf, "", 0), kvmDevice: c.device}
				s, err := NewSetup(o)
				if err != nil {
					t.Fatal(err)
				}
				if s.Accel != c.accel || s.VM.Accel != c.accel || s.Plan.Samples != c.samples || s.Plan.Rounds != c.rounds ||
					strings.Count(buf.String(), "\n") != 1 || !strings.Contains(buf.String(), c.says) {
					t.Errorf("setup %d: NewSetup(auto) = accel %s (boots %s), %d samples × %d rounds, said %q; want %s, %d × %d, one line with %q",
						setup, s.Accel, s.VM.Accel, s.Plan.Samples, s.Plan.Rounds, buf.String(), c.accel, c.samples, c.rounds, c.says)
				}
				if p, _ := s.ParamsKey(); !strings.HasPrefix(p, string(c.accel)+"-") {
					t.Errorf("ParamsKey() = %q; want it to start with the decided accelerator %s", p, c.accel)
				}
				// The next setup takes the kept verdict: no boot.
				if n := len(qemu.Boots(t)); n != c.boots {
					t.Errorf("setup %d: %d probe boots in all; want %d (each kernel once, by the first setup)", setup, n, c.boots)
				}
				if kept := strings.Contains(buf.String(), "kept from the probe of"); setup == 2 && c.boots > 0 && !kept {
					t.Errorf("setup 2 said %q; want it to say the verdict was kept", buf.String())
				}
				t.Logf("setup %d: %d probe boots in all; %s", setup, len(qemu.Boots(t)), strings.TrimSpace(buf.String()))
			}
			qemu.CheckGone(t)
		})
	}
}

// TestKVMFailsRunAfterProbe: where KVM passed the probe and then fails a
// boot of the run, the run stops with a KVMUnusableError (it never moves
// the boot to another accelerator), and the next setup plans for icount.
// KVM asked for by name where it failed is refused before anything runs.
func TestKVMFailsRunAfterProbe(t *testing.T) {
	dir := t.TempDir()
	guest := filepath.Join(dir, "lpmbisect-guest")
	os.WriteFile(guest, []byte("not used"), 0o755)
	k := fakeKernel(t, dir, "a", "6.12.0-fake")
	qemu := testqemu.New(t, testqemu.Works, testqemu.Broken)
	o := Options{Plan: GuestPlan(wire.DefaultPlan()), Guest: guest, CacheDir: t.TempDir(), QEMU: qemu.Path, ProbeKernels: []string{k}, kvmDevice: testqemu.Device(t)}
	s, err := NewSetup(o)
	if err != nil || s.Accel != wire.AccelKVM {
		t.Fatalf("NewSetup(auto, KVM that passes the probe) = %v; want KVM", err)
	}
	res, err := s.boot(context.Background(), vmrunner.Config{QEMU: qemu.Path, Accel: s.Accel, Kernel: k, Initramfs: k, RunDir: t.TempDir()})
	var kvm *vmrunner.KVMUnusableError
	if !errors.As(err, &kvm) || res == nil || res.Outcome != vmrunner.KVMFailed || !strings.Contains(err.Error(), "after its probe had passed") || !strings.Contains(err.Error(), "emulation failure") {
		t.Fatalf("boot under KVM that fails = %+v, %v; want a KVMUnusableError saying the probe had passed, with QEMU's report", res, err)
	}
	var buf strings.Builder
	o.Log = log.New(&buf, "", 0)
	if s, err := NewSetup(o); err != nil || s.Accel != wire.AccelIcount || !strings.Contains(buf.String(), "failed after the probe had passed") {
		t.Errorf("NewSetup(auto) after KVM failed a run = %v, said %q; want icount, saying why", err, buf.String())
	}
	o.Accel = wire.AccelKVM
	if _, err := NewSetup(o); !errors.As(err, &kvm) {
		t.Errorf("NewSetup(kvm) after KVM failed a run = %v; want a KVMUnusableError", err)
	}
	qemu.CheckGone(t)
}

// TestRecord checks that a run's results file is complete under its final
// name when every boot was taken, and keeps the finished boots under its
// partial name when a boot failed.
func TestRecord(t *testing.T) {
	guest := filepath.Join(t.TempDir(), "lpmbisect-guest")
	os.WriteFile(guest, []byte("not used"), 0o755)
	s, err := NewSetup(Options{Accel: wire.AccelTCG, Plan: GuestPlan(wire.DefaultPlan()), Guest: guest, CacheDir: t.TempDir(), RunDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		fail    map[string]vmrunner.Outcome
		partial bool
		results int
	}{{"complete", nil, false, 4}, {"B does not boot", map[string]vmrunner.Outcome{"/k/B": vmrunner.Panic}, true, 1}} {
		var booted []string
		s.Remote = Local{Boot: fakeBoot(&booted, c.fail)}
		final := filepath.Join(t.TempDir(), "results.txt")
		out, err := CreateResultsFile(final)
		if err != nil {
			t.Fatal(err)
		}
		hooked := false
		r := &Runner{Sides: testSides(), VM: s.VM, RunDir: s.RunDir, Exec: s.Executor(false, 0)}
		path, err := s.Record(context.Background(), r, 2, out, func(*Runner) { hooked = true })
		if want := map[bool]string{false: final, true: final + ".partial"}[c.partial]; path != want || (err != nil) != c.partial || !hooked {
			t.Errorf("%s: Record = %q, %v, hook called %v; want %q, error %v, the hook called", c.name, path, err, hooked, want, c.partial)
		}
		if res, err := ReadResultsFile(path); err != nil || len(res) != c.results {
			t.Errorf("%s: %s holds %d results (%v); want %d", c.name, path, len(res), err, c.results)
		}
	}
}

// TestParamsKey: the measurement parameters change with the accelerator,
// the guest program, its plan and the VM's size, and with nothing else.
func TestParamsKey(t *testing.T) {
	dir := t.TempDir()
	guest := filepath.Join(dir, "guest")
	write := func(content string) {
		if err := os.WriteFile(guest, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("a guest program")
	of := func(o Options) string {
		o.Guest, o.CacheDir = guest, dir
		if o.RunDir == "" {
			o.RunDir = dir
		}
		if o.Accel == "" {
			o.Accel = wire.AccelIcount
		}
		s, err := NewSetup(o)
		if err != nil {
			t.Fatalf("NewSetup: %v", err)
		}
		k, err := s.ParamsKey()
		if err != nil {
			t.Fatalf("ParamsKey: %v", err)
		}
		return k
	}
	plan := func(bench string, samples int) GuestPlan {
		p := GuestPlan(wire.DefaultPlan())
		p.Bench, p.Samples = bench, samples
		return p
	}
	base := Options{Plan: plan("lookup", 2)}
	want := of(base)
	if !strings.HasPrefix(want, "icount-") || len(want) != len("icount-")+12 {
		t.Fatalf("ParamsKey = %q; want icount- and 12 hex digits", want)
	}
	if got := of(Options{Plan: plan("lookup", 2), RunDir: filepath.Join(dir, "other")}); got != want {
		t.Errorf("another run directory changed the params: %s, %s", got, want)
	}
	for name, o := range map[string]Options{
		"other samples": {Plan: plan("lookup", 3)},
		"other bench":   {Plan: plan("baseline", 2)},
		"more memory":   {Plan: base.Plan, MemoryMB: 2048},
		"an --append":   {Plan: base.Plan, Append: []string{"printk.time=1"}},
		"a packed file": {Plan: base.Plan, Files: []initramfs.File{{Host: guest, Archive: wire.WorkloadObject}}},
		"another accel": {Plan: base.Plan, Accel: wire.AccelTCG},
		// zen2 has no kernel parameters of its own: its model keys it.
		"a CPU profile":         {Plan: base.Plan, CPUProfile: "zen2"},
		"a profile's arguments": {Plan: base.Plan, CPUProfile: "sapphirerapids"},
	} {
		if got := of(o); got == want {
			t.Errorf("%s: params %s unchanged", name, got)
		}
	}
	// The default profile by name is no profile: keys from before
	// profiles stay.
	if got := of(Options{Plan: base.Plan, CPUProfile: vmrunner.DefaultCPUProfile}); got != want {
		t.Errorf("--cpu-profile default: params %s; want %s, the key without a profile", got, want)
	}
	write("another guest program")
	if got := of(base); got == want {
		t.Errorf("another guest program: params %s unchanged", got)
	}
}

// fakeKernel writes the start of an x86 bzImage whose setup header names
// release, enough for kernel.Resolve.
func fakeKernel(t *testing.T, dir, name, release string) string {
	t.Helper()
	b := make([]byte, 0x400)
	b[0x1F1] = 1 // setup_sects
	b[0x1FE], b[0x1FF] = 0x55, 0xAA
	copy(b[0x202:], "HdrS")
	binary.LittleEndian.PutUint16(b[0x206:], 0x020F)
	binary.LittleEndian.PutUint16(b[0x20E:], 0x100)
	copy(b[0x300:], release+" (user@host) #1 SMP\x00")
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStart: the one way a measurement begins gives every side its own
// copy of the labels, the names asked for, the run directory asked for,
// and pairs only where the setup pairs and the caller does not refuse.
func TestStart(t *testing.T) {
	dir := t.TempDir()
	// A guest must be a static x86-64 ELF executable: a bare header is one.
	var hdr bytes.Buffer
	binary.Write(&hdr, binary.LittleEndian, elf.Header64{
		Ident: [elf.EI_NIDENT]byte{0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)},
		Type:  uint16(elf.ET_EXEC), Machine: uint16(elf.EM_X86_64), Version: uint32(elf.EV_CURRENT), Ehsize: 64,
	})
	guest := filepath.Join(dir, "guest")
	if err := os.WriteFile(guest, hdr.Bytes(), 0o755); err != nil {
		t.Fatal(err)
	}
	a, b := fakeKernel(t, dir, "vmlinuz-a", "6.1.0-a"), fakeKernel(t, dir, "vmlinuz-b", "6.12.0-b")
	s, err := NewSetup(Options{Accel: wire.AccelTCG, Plan: GuestPlan(wire.DefaultPlan()), Guest: guest, CacheDir: dir, RunDir: filepath.Join(dir, "runs"), NoModules: true, Paired: true})
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{wire.KeyDate: "2026-12-02"}
	r, err := s.Start([]string{a, b}, RunOptions{Seed: 7, Labels: labels, Names: []string{"", "tip"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Sides) != 2 || r.Sides[0].Label != "6.1.0-a" || r.Sides[1].Label != "tip" {
		t.Fatalf("sides %+v; want A labelled by its release and B named tip", r.Sides)
	}
	r.Sides[1].Labels[wire.KeyCommit] = "abc"
	if _, shared := r.Sides[0].Labels[wire.KeyCommit]; shared || len(labels) != 1 {
		t.Errorf("a label set on B reached A or the caller's map: A %v, caller %v", r.Sides[0].Labels, labels)
	}
	if !r.Paired || r.Seed != 7 || r.RunDir != s.RunDir || r.Sides[0].Params == "" || r.Sides[1].Params != r.Sides[0].Params {
		t.Errorf("runner paired %v seed %d run dir %q params %q, %q; want paired, seed 7, the setup's run directory, one params key", r.Paired, r.Seed, r.RunDir, r.Sides[0].Params, r.Sides[1].Params)
	}
	s.cpuB, s.AppendB = vmrunner.CPUProfiles[0], []string{"mitigations=off"} // as NewSetup sets them from CPUProfileB and AppendB
	r, err = s.Start([]string{a, a}, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := r.Sides[0], r.Sides[1]; !a.Variant.CPU.IsDefault() || b.Variant.CPU.Name != "zen2" || !slices.Equal(b.Variant.Append, []string{"mitigations=off"}) || a.Params == b.Params {
		t.Errorf("variants: A %+v params %s, B %+v params %s; want A the default, B zen2 with mitigations=off, each its own params", a.Variant, a.Params, b.Variant, b.Params)
	}
	r.init()
	if j := r.job(r.Sides[1], 0); j.Config.CPU.Name != "zen2" || !slices.Contains(j.Config.KernelArgs, "mitigations=off") {
		t.Errorf("side B's boot: CPU %q, kernel args %q; want zen2 and mitigations=off", j.Config.CPU.Name, j.Config.KernelArgs)
	}
	if j := r.job(r.Sides[0], 0); !j.Config.CPU.IsDefault() || slices.Contains(j.Config.KernelArgs, "mitigations=off") {
		t.Errorf("side A's boot: CPU %q, kernel args %q; want the default, no mitigations=off", j.Config.CPU.Name, j.Config.KernelArgs)
	}
	s.cpuB, s.AppendB = s.VM.CPU, nil
	r, err = s.Start([]string{a, b}, RunOptions{Unpaired: true, RunDir: filepath.Join(dir, "001")})
	if err != nil {
		t.Fatal(err)
	}
	if r.Paired || r.RunDir != filepath.Join(dir, "001") {
		t.Errorf("unpaired start: paired %v, run dir %q; want unpaired in 001", r.Paired, r.RunDir)
	}
	if _, ok := r.Exec.(Local); !ok {
		t.Errorf("unpaired start runs on %T; want Local", r.Exec)
	}
	if _, err := s.Start([]string{guest}, RunOptions{}); err == nil {
		t.Error("Start of a file that is no kernel succeeded; want the kernel's error")
	}
}

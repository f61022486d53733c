package vmrunner

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lpmbisect/lpmbisect/testbed/testqemu"
	"github.com/lpmbisect/lpmbisect/wire"
)

// probeKernels writes one fake kernel per behaviour (testqemu.Kernel),
// named after it.
func probeKernels(t *testing.T, behaviours ...string) []ProbeKernel {
	t.Helper()
	var out []ProbeKernel
	for _, b := range behaviours {
		out = append(out, ProbeKernel{Image: testqemu.Kernel(t, b), Name: b + "-kernel"})
	}
	return out
}

// TestProbeKVMReadsQEMUReport drives the probe with a fake QEMU that
// reports an emulation failure and then keeps running, as QEMU does on a
// kvm-pvm host: the probe sees the report as QEMU prints it and ends,
// killing QEMU. Its deadline is an hour, so a probe that waited for
// silence instead would never return; the figures are printed, not
// asserted.
func TestProbeKVMReadsQEMUReport(t *testing.T) {
	qemu := testqemu.New(t, testqemu.Broken, testqemu.Broken)
	for _, c := range []struct {
		name     string
		kernels  []string
		deadline time.Duration
		works    bool
		decisive int
		event    string
		why      string
	}{
		{"broken", []string{"broken"}, time.Hour, false, 0, ProbeReport, `QEMU reported "KVM internal error. Suberror: 1`},
		// A run's side A crawls (Debian 6.1), its side B is reported:
		// the report decides, the crawling QEMU is killed with it.
		{"slow and broken", []string{"slow", "broken"}, time.Hour, false, 1, ProbeReport, "into broken-kernel's boot"},
		{"refused", []string{"refused"}, time.Hour, false, 0, ProbeReport, "failed to initialize kvm: Permission denied"},
		{"works", []string{"works", "works"}, time.Hour, true, -1, "", "every kernel printed its banner under KVM"},
		// A fake QEMU that sleeps uses no CPU: the deadline's wall-clock
		// limit (ten times as long) ends it.
		{"works and slow", []string{"works", "slow"}, 20 * time.Millisecond, false, 1, ProbeDeadline, "slow-kernel showed no kernel banner under KVM within 20ms of QEMU's CPU time"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := kvmProbe{QEMU: qemu.Path, Kernels: probeKernels(t, c.kernels...), Deadline: c.deadline}.Probe(context.Background())
			if err != nil {
				t.Fatalf("Probe(%v) = %v", c.kernels, err)
			}
			if res.Works != c.works || res.Decisive != c.decisive || !strings.Contains(res.Why, c.why) {
				t.Errorf("Probe(%v) = works %v, decisive boot %d, why %q; want %v, %d, %q", c.kernels, res.Works, res.Decisive, res.Why, c.works, c.decisive, c.why)
			}
			for i, b := range res.Boots {
				switch {
				case i == c.decisive && b.Event != c.event:
					t.Errorf("Probe(%v): boot %d ended by %q; want %q", c.kernels, i, b.Event, c.event)
				case c.works && b.Event != ProbeBanner:
					t.Errorf("Probe(%v): boot %d ended by %q; want its banner", c.kernels, i, b.Event)
				case b.Ended < b.At:
					t.Errorf("Probe(%v): boot %d ended %s after its start, before its event at %s", c.kernels, i, b.Ended, b.At)
				}
			}
			if c.event == ProbeReport && c.kernels[c.decisive] == "broken" {
				d := res.Boots[c.decisive]
				if d.Line != "KVM internal error. Suberror: 1; emulation failure" {
					t.Errorf("Probe(%v): report %q; want QEMU's report lines", c.kernels, d.Line)
				}
				t.Logf("QEMU's start → its report %s → QEMU gone %s (%s after the report); the whole probe %s",
					d.At.Round(time.Millisecond), d.Ended.Round(time.Millisecond), (d.Ended - d.At).Round(time.Millisecond), res.Took.Round(time.Millisecond))
			}
			qemu.CheckGone(t)
		})
	}
}

// TestChooseAccelCachesVerdict checks the one decision of a run's
// accelerator: a probe boot where /dev/kvm opens and no verdict is kept,
// the verdict kept for the next run, which boots nothing to decide, and no
// QEMU at all without /dev/kvm.
func TestChooseAccelCachesVerdict(t *testing.T) {
	qemu := testqemu.New(t, testqemu.Broken, testqemu.Broken)
	cache := t.TempDir()
	device := testqemu.Device(t)
	asked := 0
	kernels := func(behaviours ...string) func() ([]ProbeKernel, error) {
		return func() ([]ProbeKernel, error) { asked++; return probeKernels(t, behaviours...), nil }
	}
	check := KVMCheck{QEMU: qemu.Path, Device: device, CacheDir: cache, Kernels: kernels(testqemu.Slow, testqemu.Broken), Deadline: time.Hour}

	// The first run probes.
	ch, err := ChooseAccel(context.Background(), wire.AccelAuto, check)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Accel != wire.AccelIcount || !strings.Contains(ch.Line, "KVM does not run guests here: QEMU reported") || !strings.Contains(ch.Line, "probed now: 2 boots in") ||
		!strings.HasSuffix(ch.Line, "; using icount: instruction counts, deterministic") {
		t.Errorf("ChooseAccel(auto, broken KVM) = %s, %q; want icount, saying the report and that it was probed now", ch.Accel, ch.Line)
	}
	if n := len(qemu.Boots(t)); n != 2 || asked != 1 {
		t.Errorf("first ChooseAccel: %d QEMU boots, kernels asked %d times; want 2 boots (one per kernel), asked once", n, asked)
	}
	var kept KVMVerdict
	if data, err := os.ReadFile(ch.KVM.CacheFile); err != nil || json.Unmarshal(data, &kept) != nil || kept.Works || len(kept.Boots) != 2 ||
		kept.Host.QEMU.Version != "7.2.22" || kept.Host.Device.Path != device || kept.Host.Kernel == "" {
		t.Errorf("kept verdict %s = %+v (%v); want KVM not working, 2 boots, the host's kernel, QEMU 7.2.22 and the device", ch.KVM.CacheFile, kept, err)
	}
	t.Logf("first run: %s", ch.Line)

	// The next run takes the kept verdict: no boot, no kernel unpacked.
	ch, err = ChooseAccel(context.Background(), wire.AccelAuto, check)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Accel != wire.AccelIcount || !ch.KVM.Cached || !strings.Contains(ch.Line, "kept from the probe of") || !strings.Contains(ch.Line, "lpmbisect host --reprobe") {
		t.Errorf("ChooseAccel(auto) again = %s, %q; want icount from the kept verdict, saying how to probe again", ch.Accel, ch.Line)
	}
	if n := len(qemu.Boots(t)); n != 2 || asked != 1 {
		t.Errorf("second ChooseAccel: %d QEMU boots in all, kernels asked %d times; want no new boot, not asked", n, asked)
	}
	t.Logf("next run: %s", ch.Line)

	// KVM asked for by name fails before anything is planned.
	var kvm *KVMUnusableError
	if _, err := ChooseAccel(context.Background(), wire.AccelKVM, check); !errors.As(err, &kvm) || !strings.Contains(err.Error(), "emulation failure") {
		t.Errorf("ChooseAccel(kvm, kept broken verdict) = %v; want a KVMUnusableError with QEMU's report", err)
	}

	// Another QEMU binary is another host: probed anew, here working.
	other := testqemu.New(t, testqemu.Works, testqemu.Works)
	works := check
	works.QEMU, works.Kernels = other.Path, kernels(testqemu.Works)
	if ch, err := ChooseAccel(context.Background(), wire.AccelAuto, works); err != nil || ch.Accel != wire.AccelKVM || !strings.HasPrefix(ch.Line, "accel auto: using KVM: works-kernel printed its banner") {
		t.Errorf("ChooseAccel(auto, working KVM) = %+v, %v; want KVM, said so", ch, err)
	}
	// A boot of a run that KVM then fails is kept too.
	if ch, _ := ChooseAccel(context.Background(), wire.AccelAuto, works); !ch.KVM.Cached || ch.Accel != wire.AccelKVM {
		t.Fatalf("ChooseAccel(auto, kept working verdict) = %+v; want KVM, kept", ch)
	} else if err := ch.KVM.MarkBroken("QEMU reported \"emulation failure\""); err != nil {
		t.Fatal(err)
	}
	if ch, _ := ChooseAccel(context.Background(), wire.AccelAuto, works); ch.Accel != wire.AccelIcount || !strings.Contains(ch.Line, "failed after the probe had passed") {
		t.Errorf("ChooseAccel(auto) after a KVM failure in a run = %+v; want icount, saying why", ch)
	}

	// Without /dev/kvm nothing boots, and QEMU is not even asked.
	noKVM := check
	noKVM.Device = testqemu.NoDevice(t)
	noKVM.QEMU = filepath.Join(t.TempDir(), "no-qemu-here")
	before := asked
	ch, err = ChooseAccel(context.Background(), wire.AccelAuto, noKVM)
	if err != nil || ch.Accel != wire.AccelIcount || ch.Line != "accel auto: no usable "+noKVM.Device+": open "+noKVM.Device+": no such file or directory; using icount: instruction counts, deterministic" {
		t.Errorf("ChooseAccel(auto, no device) = %+v, %v; want icount, said in the line of a host without KVM", ch, err)
	}
	if asked != before || ch.KVM.Verdict != nil {
		t.Errorf("ChooseAccel(auto, no device) asked for kernels or probed; want no probe boot")
	}
	if _, err := ChooseAccel(context.Background(), wire.AccelKVM, noKVM); !errors.As(err, &kvm) {
		t.Errorf("ChooseAccel(kvm, no device) = %v; want a KVMUnusableError", err)
	}

	// A device that opens and no kernel to probe with: not probed, icount.
	unprobed := check
	unprobed.Kernels, unprobed.CacheDir = nil, t.TempDir()
	if ch, err := ChooseAccel(context.Background(), wire.AccelAuto, unprobed); err != nil || ch.Accel != wire.AccelIcount || !strings.Contains(ch.Line, "not probed: no kernel to probe it with") {
		t.Errorf("ChooseAccel(auto, no kernel) = %+v, %v; want icount, not probed", ch, err)
	}
	// Nor without a QEMU: icount, whose boots then say QEMU is missing.
	noQEMU := unprobed
	noQEMU.QEMU = filepath.Join(t.TempDir(), "no-qemu-here")
	if ch, err := ChooseAccel(context.Background(), wire.AccelAuto, noQEMU); err != nil || ch.Accel != wire.AccelIcount || !strings.Contains(ch.Line, "not probed: qemu-system-x86_64 not found") {
		t.Errorf("ChooseAccel(auto, no QEMU) = %+v, %v; want icount, not probed", ch, err)
	}
	// TCG and icount look at nothing.
	for _, a := range []wire.Accel{wire.AccelTCG, wire.AccelIcount} {
		if ch, err := ChooseAccel(context.Background(), a, noKVM); err != nil || ch.Accel != a || ch.Line != "" || ch.KVM != nil {
			t.Errorf("ChooseAccel(%s) = %+v, %v; want %s as asked, nothing said", a, ch, err, a)
		}
	}
	qemu.CheckGone(t)
	other.CheckGone(t)
}

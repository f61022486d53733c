package vmrunner

import (
	"context"
	"errors"
	"log"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/wire"
)

// TestSelectorAutoSaysOnce boots twice with Auto and checks the one line
// that says what was chosen, under a fake probe of /dev/kvm either way
// (our machines have no KVM): where /dev/kvm opens, the first boot decides
// (KVM when the guest runs, else icount); where it does not, icount.
func TestSelectorAutoSaysOnce(t *testing.T) {
	const noKVM = "open /dev/kvm: no such file or directory"
	for _, c := range []struct {
		name, guest string
		kvmOpens    bool
		accel       wire.Accel
		says        string // after the logger's prefix
	}{
		{"kvm-works", "ok", true, wire.AccelKVM, "accel auto: using KVM"},
		{"kvm-broken", "kvm-refused", true, wire.AccelIcount,
			"warning: /dev/kvm is present but QEMU could not run the guest under KVM (-accel kvm: failed to initialize kvm: Permission denied); using icount: instruction counts, deterministic"},
		{"no-kvm", "ok", false, wire.AccelIcount, "accel auto: no usable /dev/kvm: " + noKVM + "; using icount: instruction counts, deterministic"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var buf strings.Builder
			probes := 0
			sel := &Selector{Requested: wire.AccelAuto, Log: log.New(&buf, "P: ", 0), Probe: func() (bool, string) {
				probes++
				if c.kvmOpens {
					return true, ""
				}
				return false, noKVM
			}}
			for boot := 1; boot <= 2; boot++ {
				r, err := sel.Boot(context.Background(), fakeConfig(t, c.guest))
				if err != nil || r.Outcome != OK || r.Accel != c.accel {
					t.Fatalf("boot %d: Selector{Auto}.Boot(%s) = %+v, %v; want %s under %s", boot, c.guest, r, err, OK, c.accel)
				}
				// The boot that found KVM broken is retried under icount,
				// and its guest told so.
				if c.guest == "kvm-refused" && boot == 1 && !strings.Contains(strings.Join(r.Command, " "), "lpmbisect.accel=icount") {
					t.Errorf("boot %d, retried under icount: command %q does not tell the guest lpmbisect.accel=icount", boot, r.Command)
				}
			}
			if got := sel.Accel(); got != c.accel {
				t.Errorf("Selector.Accel() = %s; want %s", got, c.accel)
			}
			if probes != 1 {
				t.Errorf("Selector{Auto} probed /dev/kvm %d times in 2 boots; want once", probes)
			}
			if want := "P: " + c.says + "\n"; buf.String() != want {
				t.Errorf("Selector{Auto} logged %q; want %q", buf.String(), want)
			}
		})
	}
}

// TestSelectorResolve checks that Auto is decided before any boot where
// /dev/kvm does not open, and left to the first boot where it does.
func TestSelectorResolve(t *testing.T) {
	for _, c := range []struct {
		requested wire.Accel
		kvmOpens  bool
		want      wire.Accel
	}{
		{wire.AccelAuto, false, wire.AccelIcount},
		{wire.AccelAuto, true, ""},
		{wire.AccelTCG, false, wire.AccelTCG},
		{wire.AccelKVM, false, wire.AccelKVM},
	} {
		var buf strings.Builder
		sel := &Selector{Requested: c.requested, Log: log.New(&buf, "", 0), Probe: func() (bool, string) { return c.kvmOpens, "fake" }}
		if got := sel.Resolve(); got != c.want {
			t.Errorf("Selector{%s, /dev/kvm opens %v}.Resolve() = %q; want %q", c.requested, c.kvmOpens, got, c.want)
		}
		sel.Resolve()
		if lines := strings.Count(buf.String(), "\n"); c.want == wire.AccelIcount && c.requested == wire.AccelAuto && lines != 1 || c.requested != wire.AccelAuto && lines != 0 {
			t.Errorf("Selector{%s}.Resolve() twice logged %q; want one line for Auto's choice, none otherwise", c.requested, buf.String())
		}
	}
}

func TestSelectorKVMUnusable(t *testing.T) {
	sel := &Selector{Requested: wire.AccelKVM}
	_, err := sel.Boot(context.Background(), fakeConfig(t, "kvm-refused"))
	var kvm *KVMUnusableError
	if !errors.As(err, &kvm) {
		t.Fatalf("Selector{KVM}.Boot(KVM refused) = %v; want a KVMUnusableError", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "/dev/kvm") || strings.Contains(msg, "--") {
		t.Errorf("KVMUnusableError = %q; want the reason, and no command-line flag in a library error", msg)
	}
}

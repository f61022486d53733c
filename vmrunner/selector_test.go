package vmrunner

import (
	"context"
	"errors"
	"log"
	"strings"
	"testing"
)

// TestSelectorAutoSaysOnce boots twice with Auto and checks the one line
// that says what was chosen. Which line depends on this machine's
// /dev/kvm; the fake QEMU never runs a guest under KVM either way.
func TestSelectorAutoSaysOnce(t *testing.T) {
	kvmOpens, why := kvmUsable()
	for _, c := range []struct {
		guest     string
		accel     Accel  // chosen when /dev/kvm opens
		kvmSays   string // the line then, after the logger's prefix
		noKVMSays string // the line when /dev/kvm does not open
	}{
		{"ok", KVM, "accel auto: using KVM", "accel auto: using TCG (no usable /dev/kvm: " + why + ")"},
		{"kvm-refused", TCG, "warning: /dev/kvm is present but QEMU could not run the guest under KVM (-accel kvm: failed to initialize kvm: Permission denied); falling back to TCG",
			"accel auto: using TCG (no usable /dev/kvm: " + why + ")"},
	} {
		t.Run(c.guest, func(t *testing.T) {
			t.Parallel()
			var buf strings.Builder
			sel := &Selector{Requested: Auto, Log: log.New(&buf, "P: ", 0)}
			wantAccel, wantLine := c.accel, c.kvmSays
			if !kvmOpens {
				wantAccel, wantLine = TCG, c.noKVMSays
			}
			for boot := 1; boot <= 2; boot++ {
				r, err := sel.Boot(context.Background(), fakeConfig(t, c.guest))
				if err != nil || r.Outcome != OK || r.Accel != wantAccel {
					t.Fatalf("boot %d: Selector{Auto}.Boot(%s) = %+v, %v; want %s under %s", boot, c.guest, r, err, OK, wantAccel)
				}
			}
			if got := sel.Accel(); got != wantAccel {
				t.Errorf("Selector.Accel() = %s; want %s", got, wantAccel)
			}
			if want := "P: " + wantLine + "\n"; buf.String() != want {
				t.Errorf("Selector{Auto} logged %q; want %q", buf.String(), want)
			}
		})
	}
}

func TestSelectorKVMUnusable(t *testing.T) {
	sel := &Selector{Requested: KVM}
	_, err := sel.Boot(context.Background(), fakeConfig(t, "kvm-refused"))
	var kvm *KVMUnusableError
	if !errors.As(err, &kvm) {
		t.Fatalf("Selector{KVM}.Boot(KVM refused) = %v; want a KVMUnusableError", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "/dev/kvm") || strings.Contains(msg, "--") {
		t.Errorf("KVMUnusableError = %q; want the reason, and no command-line flag in a library error", msg)
	}
}

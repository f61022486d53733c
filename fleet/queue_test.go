package fleet

import (
	"errors"
	"testing"

	"github.com/lpmbisect/lpmbisect/vmrunner"
)

func TestParseQueue(t *testing.T) {
	for _, tc := range []struct {
		name      string
		accel     vmrunner.Accel
		build     bool
		wallClock bool
	}{
		{"icount", vmrunner.Icount, false, false},
		{"icount-westmere", vmrunner.Icount, false, false},
		{"tcg", vmrunner.TCG, false, true},
		{"kvm-zen4", vmrunner.KVM, false, true},
		{"kvm-skylake_sp", vmrunner.KVM, false, true},
		{"build", "", true, false},
		{"build-big", "", true, false},
	} {
		q, err := ParseQueue(tc.name)
		if err != nil {
			t.Errorf("ParseQueue(%q) = %v; want a queue", tc.name, err)
			continue
		}
		if q.Name != tc.name || q.Accel != tc.accel || q.Build() != tc.build || q.WallClock() != tc.wallClock {
			t.Errorf("ParseQueue(%q) = %+v (build %v, wall clock %v); want accel %q, build %v, wall clock %v",
				tc.name, q, q.Build(), q.WallClock(), tc.accel, tc.build, tc.wallClock)
		}
	}
	for _, bad := range []string{"", "auto", "zen4", "kvm_zen4", "KVM", "icount-", "-icount", "tcg--x", "kvm zen4",
		"kvm-" + string(make([]byte, 64))} {
		if q, err := ParseQueue(bad); !errors.Is(err, ErrQueueName) {
			t.Errorf("ParseQueue(%q) = %+v, %v; want ErrQueueName", bad, q, err)
		}
	}
}

package measure

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lpmbisect/lpmbisect/vmrunner"
	"github.com/lpmbisect/lpmbisect/wire"
)

// NewSetup names the option it rejects as its configuration key does, so
// a command line can name the flag.
func TestNewSetupOptionErrors(t *testing.T) {
	guest := filepath.Join(t.TempDir(), "lpmbisect-guest")
	os.WriteFile(guest, []byte("not used"), 0o755)
	ok := Options{Accel: "ICOUNT", Plan: GuestPlan(wire.DefaultPlan()), Guest: guest, CacheDir: t.TempDir()}
	s, err := NewSetup(ok)
	if err != nil || s.Accel != vmrunner.Icount {
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
	} {
		o := ok
		c.change(&o)
		var oe *OptionError
		if _, err := NewSetup(o); !errors.As(err, &oe) || oe.Option != c.option {
			t.Errorf("NewSetup(%s) error = %v; want an OptionError of %q", c.name, err, c.option)
		}
	}
}

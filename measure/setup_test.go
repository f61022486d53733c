package measure

import (
	"context"
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

// TestRecord checks that a run's results file is complete under its final
// name when every boot was taken, and keeps the finished boots under its
// partial name when a boot failed.
func TestRecord(t *testing.T) {
	guest := filepath.Join(t.TempDir(), "lpmbisect-guest")
	os.WriteFile(guest, []byte("not used"), 0o755)
	s, err := NewSetup(Options{Accel: vmrunner.TCG, Plan: GuestPlan(wire.DefaultPlan()), Guest: guest, CacheDir: t.TempDir(), RunDir: t.TempDir()})
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
		path, err := s.Record(context.Background(), testSides(), 2, out, func(*Runner) { hooked = true })
		if want := map[bool]string{false: final, true: final + ".partial"}[c.partial]; path != want || (err != nil) != c.partial || !hooked {
			t.Errorf("%s: Record = %q, %v, hook called %v; want %q, error %v, the hook called", c.name, path, err, hooked, want, c.partial)
		}
		if res, err := ReadResultsFile(path); err != nil || len(res) != c.results {
			t.Errorf("%s: %s holds %d results (%v); want %d", c.name, path, len(res), err, c.results)
		}
	}
}

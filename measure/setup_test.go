package measure

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
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
			o.Accel = vmrunner.Icount
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
		"another accel": {Plan: base.Plan, Accel: vmrunner.TCG},
	} {
		if got := of(o); got == want {
			t.Errorf("%s: params %s unchanged", name, got)
		}
	}
	write("another guest program")
	if got := of(base); got == want {
		t.Errorf("another guest program: params %s unchanged", got)
	}
}

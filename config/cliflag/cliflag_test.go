package cliflag

import (
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/lpmbisect/lpmbisect/config"
	"github.com/lpmbisect/lpmbisect/flow/campaign"
)

// parse runs one command with the flags of f's keys on the line args and
// returns the configuration the action saw.
func parse(t *testing.T, text string, args ...string) *config.File {
	t.Helper()
	f, err := config.Parse(text, "/srv")
	if err != nil {
		t.Fatal(err)
	}
	flags, set := Bind(append(Keys(f, "measure", "build"), Key(f, "measure.boots", "boots")))
	app := &cli.App{Writer: io.Discard, ErrWriter: io.Discard, DisableSliceFlagSeparator: true, Commands: []*cli.Command{{Name: "x", Flags: flags,
		Action: func(c *cli.Context) error { set(c); return nil }}}}
	if err := app.Run(append([]string{"lpmbisect", "x"}, args...)); err != nil {
		t.Fatal(err)
	}
	return f
}

// A flag given on the line wins over the file, the file over the built-in
// default; lists stay lists.
func TestPrecedence(t *testing.T) {
	f := parse(t, "[measure]\naccel = \"tcg\"\nboots = 3\n[build]\nmake_flags = [\"W=1\", \"KCFLAGS=-O2 -g\"]\n")
	if f.Measure.Accel != "tcg" || f.Measure.Boots != 3 || f.Measure.MemoryMB != 1024 || !slices.Equal(f.Build.MakeFlags, []string{"W=1", "KCFLAGS=-O2 -g"}) {
		t.Errorf("no flags: accel %q, boots %d, memory %d, make flags %q; want the file's tcg, 3, [W=1 KCFLAGS=-O2 -g] and the default 1024",
			f.Measure.Accel, f.Measure.Boots, f.Measure.MemoryMB, f.Build.MakeFlags)
	}
	f = parse(t, "[measure]\naccel = \"tcg\"\n[build]\nmake_flags = [\"W=1\"]\n", "--accel", "icount", "--boots", "5", "-j", "3",
		"--boot-timeout", "2m", "--make-flag", "LLVM=1", "--make-flag", "a,b")
	if f.Measure.Accel != "icount" || f.Measure.Boots != 5 || f.Build.Jobs != 3 || f.Measure.BootTimeout.Minutes() != 2 ||
		!slices.Equal(f.Build.MakeFlags, []string{"LLVM=1", "a,b"}) {
		t.Errorf("flags: accel %q, boots %d, jobs %d, boot timeout %v, make flags %q; want the line's icount, 5, 3, 2m, [LLVM=1 a,b]",
			f.Measure.Accel, f.Measure.Boots, f.Build.Jobs, f.Measure.BootTimeout, f.Build.MakeFlags)
	}
}

func TestKeyUsage(t *testing.T) {
	d := config.Defaults()
	if fl := Key(&d, "measure.max_boots", "at most"); fl.Name != "max-boots" || fl.Usage != "at most" || fl.Ptr != &d.Measure.MaxBoots {
		t.Errorf("Key(measure.max_boots) = %+v; want --max-boots bound to Measure.MaxBoots with the given usage", fl)
	}
	for _, fl := range Keys(&d, "build") {
		if fl.Name == "build-dir" && !strings.Contains(fl.Usage, campaign.DefaultBuildDir) {
			t.Errorf("--build-dir's usage %q does not name the default %s", fl.Usage, campaign.DefaultBuildDir)
		}
	}
}

package cliflag

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// testApp has the shapes of lpmbisect's commands that reordering cares
// about: flags with values, booleans, a subcommand with flags of its own.
func testApp() *cli.App {
	str := func(name string) cli.Flag { return &cli.StringFlag{Name: name} }
	return &cli.App{Name: "lpmbisect", Commands: []*cli.Command{
		{Name: "compare", Flags: []cli.Flag{str("accel"), &cli.IntFlag{Name: "samples"}, &cli.BoolFlag{Name: "paired"}}},
		{Name: "run", Flags: []cli.Flag{str("accel")}},
		{Name: "history", Flags: []cli.Flag{str("config")}, Subcommands: []*cli.Command{
			{Name: "import", Flags: []cli.Flag{str("config"), str("series")}},
			{Name: "ack", Flags: []cli.Flag{str("config"), &cli.BoolFlag{Name: "mute"}}},
		}},
	}}
}

func TestReorderArgs(t *testing.T) {
	app := testApp()
	for _, c := range []struct{ in, want string }{
		{"compare a.deb b.deb --accel icount", "compare --accel icount a.deb b.deb"},
		{"compare --accel=icount a.deb b.deb --samples 3", "compare --accel=icount --samples 3 a.deb b.deb"},
		{"compare a.deb --paired b.deb", "compare --paired a.deb b.deb"}, // a boolean takes no value
		{"run k.deb -- --not-a-flag", "run k.deb -- --not-a-flag"},
		{"history import night.txt --series demo --config k.toml", "history import --series demo --config k.toml night.txt"},
		{"history --config k.toml import night.txt --series demo", "history --config k.toml import --series demo night.txt"},
		{"history ack 7 --mute", "history ack --mute 7"},
		{"--version", "--version"},
		{"frobnicate --x y", "frobnicate --x y"},
	} {
		in := append([]string{"lpmbisect"}, strings.Fields(c.in)...)
		got := ReorderArgs(app, in)
		if want := append([]string{"lpmbisect"}, strings.Fields(c.want)...); !slices.Equal(got, want) {
			t.Errorf("ReorderArgs(%q) = %q; want %q", c.in, strings.Join(got[1:], " "), c.want)
		}
	}
}

func TestFlagValue(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"compare --config k.toml a b", "k.toml"},
		{"compare a b --config=k.toml", "k.toml"},
		{"compare -config k.toml", "k.toml"},
		{"compare --configs k.toml", ""},
		{"compare -- --config k.toml", ""},
		{"compare --config", ""},
	} {
		if got := FlagValue(append([]string{"lpmbisect"}, strings.Fields(c.in)...), "config"); got != c.want {
			t.Errorf("FlagValue(%q, config) = %q; want %q", c.in, got, c.want)
		}
	}
}

func TestSuggest(t *testing.T) {
	app := testApp()
	if got := SuggestCommand(app, "comapre"); !strings.HasPrefix(got, " (did you mean ") || !strings.Contains(got, "compare") {
		t.Errorf("SuggestCommand(comapre) = %q; want a hint naming compare", got)
	}
	if got := SuggestCommand(app, "zzzzzzzz"); got != "" {
		t.Errorf("SuggestCommand(zzzzzzzz) = %q; want none", got)
	}
	cmd := app.Command("compare")
	if got := SuggestFlag(cmd, errors.New("flag provided but not defined: -acel")); got != "--accel" {
		t.Errorf("SuggestFlag(-acel) = %q; want --accel", got)
	}
	if got := SuggestFlag(cmd, errors.New("invalid value")); got != "" {
		t.Errorf("SuggestFlag(another error) = %q; want none", got)
	}
}

package main

import (
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/config"
)

func TestReorderArgs(t *testing.T) {
	defaults := config.Defaults()
	app := newApp(&run{File: &defaults}, io.Discard, io.Discard)
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
		got := reorderArgs(app, in)
		if want := append([]string{"lpmbisect"}, strings.Fields(c.want)...); !slices.Equal(got, want) {
			t.Errorf("reorderArgs(%q) = %q; want %q", c.in, strings.Join(got[1:], " "), c.want)
		}
	}
}

package words

import "testing"

func TestPrintable(t *testing.T) {
	for _, c := range []struct{ in, printable, oneLine string }{
		{"plain ünïcode, 6.1 → 6.12", "plain ünïcode, 6.1 → 6.12", "plain ünïcode, 6.1 → 6.12"},
		{"two\nlines\tand a tab", "two\nlines\tand a tab", `two\x0alines\x09and a tab`},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`, `\x1b[31mred\x1b[0m`},
		{"bob\r\nmuted by admin from 10.0.0.1", `bob\x0d` + "\nmuted by admin from 10.0.0.1", `bob\x0d\x0amuted by admin from 10.0.0.1`},
		{"seen \u202egnp.exe", `seen \u202egnp.exe`, `seen \u202egnp.exe`},
		{"\u2066isolate\u2069 \u200f\u061c", `\u2066isolate\u2069 \u200f\u061c`, `\u2066isolate\u2069 \u200f\u061c`},
		{"csi \u009b1m", `csi \x9b1m`, `csi \x9b1m`},
		{"bad \xff byte", "bad \uFFFD byte", "bad \uFFFD byte"},
	} {
		if got := Printable(c.in); got != c.printable {
			t.Errorf("Printable(%q) = %q; want %q", c.in, got, c.printable)
		}
		if got := OneLine(c.in); got != c.oneLine {
			t.Errorf("OneLine(%q) = %q; want %q", c.in, got, c.oneLine)
		}
	}
}

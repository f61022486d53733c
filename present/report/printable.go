package report

import (
	"fmt"
	"io"
	"strings"
	"unicode"
)

// Strings in reports come from guests (benchmark names, labels, notes) and
// from results files and histories other machines wrote: untrusted. The
// HTML pages escape them (html/template) and go through writePrintable
// (html/template leaves control characters be), JSON escapes them
// (encoding/json, HTML-safe), markdown escapes them (mdEscape, mdCode);
// terminal, markdown and mail text goes through writePrintable, so that
// no escape sequence reaches a terminal or a mail reader.

// printable returns s with every control character but newline and tab
// shown as a Go escape (\x1b, \u009b) and invalid UTF-8 as U+FFFD: text
// that cannot move the cursor, recolour or retitle a terminal, or hide
// what precedes it.
func printable(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexFunc(s, isHostileControl) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case !isHostileControl(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

func isHostileControl(r rune) bool { return r != '\n' && r != '\t' && unicode.IsControl(r) }

// writePrintable renders text with render and writes it to w printable.
func writePrintable(w io.Writer, render func(io.Writer) error) error {
	var b strings.Builder
	err := render(&b)
	if _, werr := io.WriteString(w, printable(b.String())); err == nil {
		err = werr
	}
	return err
}

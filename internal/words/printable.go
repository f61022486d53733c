package words

import (
	"fmt"
	"strings"
	"unicode"
)

// Strings that came from elsewhere (a guest, a results file, a commit, a
// person's name or comment on a served page) reach terminals, mail
// readers, server logs and HTML pages. Printable and OneLine make them
// unable to move a terminal's cursor, recolour or retitle it, forge a log
// line, or reorder the text around them (a right-to-left override turns
// "gnp.exe" into "exe.png"), while showing what was there.

// Hostile reports whether r is a character that must not reach a reader as
// it is: a control character other than newline and tab (escape sequences
// start with one: ESC, CSI), or a bidirectional formatting character
// (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069).
func Hostile(r rune) bool {
	return (r != '\n' && r != '\t' && unicode.IsControl(r)) || unicode.Is(unicode.Bidi_Control, r)
}

// Printable returns s with every Hostile character shown as a Go escape
// (\x1b, \u202e) and invalid UTF-8 as U+FFFD; newlines and tabs stay.
func Printable(s string) string { return escape(s, Hostile) }

// HostileOnOneLine reports whether r must not reach a reader in a field of
// a one-line record: Hostile, or a newline or tab, which would start a
// line of its own.
func HostileOnOneLine(r rune) bool { return r == '\n' || r == '\t' || Hostile(r) }

// OneLine is Printable for a field of a one-line record (a server's log
// line): newlines and tabs are escaped too (HostileOnOneLine).
func OneLine(s string) string { return escape(s, HostileOnOneLine) }

func escape(s string, hostile func(rune) bool) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexFunc(s, hostile) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case !hostile(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

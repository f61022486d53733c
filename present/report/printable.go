package report

import (
	"io"
	"strings"

	"github.com/lpmbisect/lpmbisect/internal/words"
)

// Strings in reports come from guests (benchmark names, labels, notes) and
// from results files and histories other machines wrote: untrusted. The
// HTML pages escape them (html/template) and go through writePrintable
// (html/template leaves control characters be), JSON escapes them
// (encoding/json, HTML-safe), markdown escapes them (mdEscape, mdCode);
// terminal, markdown and mail text goes through writePrintable
// (words.Printable), so that no escape sequence reaches a terminal or a
// mail reader and no bidirectional override reorders what a page shows.

// writePrintable renders text with render and writes it to w printable.
func writePrintable(w io.Writer, render func(io.Writer) error) error {
	var b strings.Builder
	err := render(&b)
	if _, werr := io.WriteString(w, words.Printable(b.String())); err == nil {
		err = werr
	}
	return err
}

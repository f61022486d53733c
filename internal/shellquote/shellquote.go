// Package shellquote writes command lines a person can paste into a POSIX
// shell: every argument that is not made of plainly safe characters is
// single-quoted. lpmbisect prints such lines to re-run a QEMU boot by hand
// and to reproduce a change point.
package shellquote

import "strings"

// Join quotes args for sh and joins them with spaces.
func Join(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
		}) < 0 {
			b.WriteString(a)
			continue
		}
		b.WriteString("'" + strings.ReplaceAll(a, "'", `'\''`) + "'")
	}
	return b.String()
}

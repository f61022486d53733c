// Package words holds the wording rules that lpmbisect's results, file
// names and messages share, so that every package counts and abbreviates
// alike: a count with its noun, a hash cut to the digits that name it, and
// a string from elsewhere made printable (Printable, OneLine).
package words

import (
	"fmt"
	"strings"
)

// Plural counts what, a noun with a plain -s plural: "1 pair", "8 pairs".
func Plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// shortHashLen is how many leading hex digits name a commit or a digest.
const shortHashLen = 12

// ShortHash shortens a commit hash or a SHA-256 digest in hex to its first
// 12 digits, as results name images (wire.KeyImage) and configurations
// (wire.KeyKconfig) and messages name commits. Anything else (a tag, a
// path, a hash of 12 digits or fewer) is returned as it is.
func ShortHash(s string) string {
	if len(s) > shortHashLen && isHex(s) {
		return s[:shortHashLen]
	}
	return s
}

func isHex(s string) bool {
	return s != "" && strings.Trim(s, "0123456789abcdefABCDEF") == ""
}

package words

import (
	"strings"
	"testing"
)

func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "0 pairs", 1: "1 pair", 8: "8 pairs"} {
		if got := Plural(n, "pair"); got != want {
			t.Errorf("Plural(%d, pair) = %q; want %q", n, got, want)
		}
	}
}

func TestShortHash(t *testing.T) {
	commit := "88" + strings.Repeat("8", 38)
	sum := strings.Repeat("ab", 32)
	for in, want := range map[string]string{
		commit:                 "888888888888",
		sum:                    "abababababab",
		strings.ToUpper(sum):   "ABABABABABAB",
		"v6.12":                "v6.12",
		"0123456789ab":         "0123456789ab",
		"":                     "",
		"refs/heads/bpf-next1": "refs/heads/bpf-next1",
		"g0123456789abcdef":    "g0123456789abcdef",
	} {
		if got := ShortHash(in); got != want {
			t.Errorf("ShortHash(%q) = %q; want %q", in, got, want)
		}
	}
}

package version

import (
	"regexp"
	"testing"
)

func TestString(t *testing.T) {
	v := String()
	if !regexp.MustCompile(`^(v[0-9].*|devel(-[0-9a-f]{12}(\+dirty)?)?|unknown)$`).MatchString(v) {
		t.Errorf("String() = %q; want a module version, devel-<commit>[+dirty] or devel", v)
	}
	if String() != v {
		t.Errorf("String() changed between calls")
	}
}

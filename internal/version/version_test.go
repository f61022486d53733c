package version

import (
	"regexp"
	"runtime/debug"
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

func TestFromBuildInfo(t *testing.T) {
	const rev = "d4609b6aeb2d7d1bb1a5c4e8a1f0b1c2d3e4f5a6"
	stamped := []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "true"}}
	for _, c := range []struct {
		name     string
		version  string
		settings []debug.BuildSetting
		linked   string
		want     string
	}{
		{"release", "v1.2.3", nil, "", "v1.2.3"},
		{"clone (Go 1.24+ pseudo-version)", "v0.0.0-20261202074758-d4609b6aeb2d", stamped, "", "v0.0.0-20261202074758-d4609b6aeb2d"},
		{"VCS stamp", "(devel)", stamped, "", "devel-d4609b6aeb2d+dirty"},
		{"-buildvcs=false or a worktree", "(devel)", nil, "", "devel"},
		{"scripts/build", "(devel)", nil, rev, "devel-d4609b6aeb2d"},
		{"scripts/build, modified tree", "(devel)", nil, rev + "+dirty", "devel-d4609b6aeb2d+dirty"},
		{"the stamp wins", "(devel)", stamped[:1], "0123456789abcdef", "devel-d4609b6aeb2d"},
	} {
		info := &debug.BuildInfo{Main: debug.Module{Version: c.version}, Settings: c.settings}
		if got := fromBuildInfo(info, c.linked); got != c.want {
			t.Errorf("%s: fromBuildInfo(%q, %v, %q) = %q; want %q", c.name, c.version, c.settings, c.linked, got, c.want)
		}
	}
}

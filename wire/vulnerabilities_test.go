package wire

import (
	"slices"
	"strings"
	"testing"
)

func TestVulnerabilitiesRoundTrip(t *testing.T) {
	vs := []Vulnerability{
		{"retbleed", "Mitigation: untrained return thunk; SMT disabled"},
		{"spec_rstack_overflow", "Vulnerable: Safe RET, no microcode"},
		{"spectre_v2", "Mitigation: Retpolines; STIBP: disabled; RSB filling; PBRSB-eIBRS: Not affected; BHI: Not affected"},
	}
	v := FormatVulnerabilities(vs)
	if got := ParseVulnerabilities(v); !slices.Equal(got, vs) {
		t.Errorf("ParseVulnerabilities(FormatVulnerabilities(%q) = %q) = %q", vs, v, got)
	}
	if FormatVulnerabilities(nil) != "" || ParseVulnerabilities("") != nil {
		t.Errorf("no vulnerabilities: %q, %q; want none", FormatVulnerabilities(nil), ParseVulnerabilities(""))
	}
}

// TestVulnerabilitiesBounds: a guest's value is untrusted; what does not
// fit the bounds is left out, and what the guest formats fits them.
func TestVulnerabilitiesBounds(t *testing.T) {
	long := strings.Repeat("x", MaxVulnerabilityTextLen+1)
	in := []Vulnerability{{"Bad Name", "x"}, {"ok", long}, {"pipe", "a | b"}, {"", "x"}}
	got := ParseVulnerabilities(FormatVulnerabilities(in))
	want := []Vulnerability{{"ok", long[:MaxVulnerabilityTextLen]}, {"pipe", "a / b"}}
	if !slices.Equal(got, want) {
		t.Errorf("format and parse of %d odd entries = %q; want %q", len(in), got, want)
	}
	if got := ParseVulnerabilities("ok=" + long + " | x=y | noequals | UPPER=1"); !slices.Equal(got, []Vulnerability{{"x", "y"}}) {
		t.Errorf("ParseVulnerabilities(hostile) = %q; want only x=y", got)
	}
	many := strings.Repeat("a=b | ", 2*MaxVulnerabilities)
	if n := len(ParseVulnerabilities(many)); n != MaxVulnerabilities {
		t.Errorf("ParseVulnerabilities(%d entries) kept %d; want %d", 2*MaxVulnerabilities, n, MaxVulnerabilities)
	}
}

// TestReturnThunk: the return thunk the lines name, as Debian 6.1 and
// 6.12 word them on the profiles (host/vmrunner's table).
func TestReturnThunk(t *testing.T) {
	for _, c := range []struct {
		lines []Vulnerability
		want  string
	}{
		{nil, ""},
		{[]Vulnerability{{"retbleed", "Not affected"}, {"spectre_v2", "Mitigation: Retpolines"}}, "none"},
		{[]Vulnerability{{"indirect_target_selection", "Mitigation: Aligned branch/return thunks"}}, "indirect_target_selection: Aligned branch/return thunks"},
		{[]Vulnerability{{"retbleed", "Mitigation: untrained return thunk; SMT disabled"}}, "retbleed: untrained return thunk"},
		// Safe RET replaces the untrained return, in either wording.
		{[]Vulnerability{{"retbleed", "Mitigation: untrained return thunk; SMT disabled"}, {"spec_rstack_overflow", "Mitigation: safe RET, no microcode"}},
			"spec_rstack_overflow: Safe RET"},
		{[]Vulnerability{{"spec_rstack_overflow", "Vulnerable: Safe RET, no microcode"}}, "spec_rstack_overflow: Safe RET"},
		{[]Vulnerability{{"retbleed", "Vulnerable"}, {"indirect_target_selection", "Not affected"}}, "none"},
	} {
		if got := ReturnThunk(c.lines); got != c.want {
			t.Errorf("ReturnThunk(%q) = %q; want %q", c.lines, got, c.want)
		}
	}
}

package wire

import (
	"strings"
)

// The kernel's own view of the CPU: the guest reads the files of
// VulnerabilitiesDir, one line each in the kernel's words ("Mitigation:
// untrained return thunk; SMT disabled", "Not affected", "Vulnerable: Safe
// RET, no microcode"), and writes them as one configuration line
// (KeyVulnerabilities), so every result of a boot records which
// mitigations its kernel ran. The CPU the kernel judges is the one the host
// emulated (KeyCPUModel): a CPU profile's identity under TCG. Requires
// Linux 4.15 (the directory); a kernel without it writes no line.

// VulnerabilitiesDir is where the kernel says how it deals with each CPU
// vulnerability it knows, one file each.
const VulnerabilitiesDir = "/sys/devices/system/cpu/vulnerabilities"

// KeyVulnerabilities is the configuration key of the guest kernel's
// vulnerabilities lines (FormatVulnerabilities), written by the guest
// before its first result.
const KeyVulnerabilities = "vulnerabilities"

// Bounds of what the guest reads and the host accepts of the
// vulnerabilities: Linux 6.12 has 20 files, their lines are under 200
// bytes, and their names are lower case letters, digits and underscores.
const (
	MaxVulnerabilities      = 64
	maxVulnerabilityNameLen = 64
	MaxVulnerabilityTextLen = 256
)

// Vulnerability is one file of VulnerabilitiesDir: its name (retbleed,
// spec_rstack_overflow, …) and its line.
type Vulnerability struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

// vulnerabilitySep separates the entries of KeyVulnerabilities' value:
// the kernel's lines hold ";" and ",", never "|".
const vulnerabilitySep = " | "

// FormatVulnerabilities is the value of KeyVulnerabilities:
// "NAME=TEXT | NAME=TEXT …" in the order given, each entry within the
// bounds (longer names are dropped, longer texts cut, "|" in a text
// replaced), at most MaxVulnerabilities.
func FormatVulnerabilities(vs []Vulnerability) string {
	var parts []string
	for _, v := range vs {
		if len(parts) == MaxVulnerabilities {
			break
		}
		if !vulnerabilityName(v.Name) {
			continue
		}
		text := strings.Join(strings.Fields(strings.ReplaceAll(v.Text, "|", "/")), " ")
		if len(text) > MaxVulnerabilityTextLen {
			text = strings.ToValidUTF8(text[:MaxVulnerabilityTextLen], "")
		}
		parts = append(parts, v.Name+"="+text)
	}
	return strings.Join(parts, vulnerabilitySep)
}

// ParseVulnerabilities reads a value of KeyVulnerabilities (a guest's,
// untrusted): entries that are not NAME=TEXT within the bounds are left
// out, and so is everything after MaxVulnerabilities entries.
func ParseVulnerabilities(s string) []Vulnerability {
	var out []Vulnerability
	for _, part := range strings.Split(s, vulnerabilitySep) {
		if len(out) == MaxVulnerabilities {
			break
		}
		name, text, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || !vulnerabilityName(name) || len(text) > MaxVulnerabilityTextLen {
			continue
		}
		out = append(out, Vulnerability{Name: name, Text: text})
	}
	return out
}

// vulnerabilityName reports whether name can be a file of
// VulnerabilitiesDir.
func vulnerabilityName(name string) bool {
	if name == "" || len(name) > maxVulnerabilityNameLen {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// returnThunks are the mitigations that send every kernel return through
// a thunk, as the vulnerabilities lines name them, in the order the kernel
// lets one replace another (x86's bugs.c: SRSO's Safe RET replaces
// RETBleed's untrained return, and ITS's aligned return thunk is used only
// where no other return thunk is).
var returnThunks = []struct{ file, words string }{
	{"spec_rstack_overflow", "Safe RET"},
	{"retbleed", "untrained return thunk"},
	{"retbleed", "Stuffing"},
	{"indirect_target_selection", "Aligned branch/return thunks"},
}

// ReturnThunk names the return thunk the kernel's returns go through, as
// its vulnerabilities lines say: "spec_rstack_overflow: Safe RET" (SRSO's
// srso_return_thunk, srso_alias_return_thunk on family 19h), "retbleed:
// untrained return thunk", "retbleed: Stuffing" (call depth tracking),
// "indirect_target_selection: Aligned branch/return thunks" (ITS), or
// "none" when no line names one; "" for no lines at all. A line that says
// "Vulnerable: Safe RET, no microcode" still runs the thunk: the microcode
// it lacks is the IBPB that would complete the mitigation.
func ReturnThunk(vs []Vulnerability) string {
	if len(vs) == 0 {
		return ""
	}
	for _, t := range returnThunks {
		for _, v := range vs {
			if v.Name == t.file && strings.Contains(strings.ToLower(v.Text), strings.ToLower(t.words)) { // 6.1 says "safe RET"
				return t.file + ": " + t.words
			}
		}
	}
	return "none"
}

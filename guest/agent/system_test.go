package agent

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/wire"
)

func TestCPUModel(t *testing.T) {
	cpuinfo := "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13 64-Core Processor\nflags\t\t: fpu\n\nprocessor\t: 1\nmodel name\t: other\n"
	if got, want := cpuModel(cpuinfo), "AMD EPYC 7B13 64-Core Processor"; got != want {
		t.Errorf("cpuModel(...) = %q; want %q", got, want)
	}
	if got := cpuModel("processor\t: 0\n"); got != "unknown" {
		t.Errorf("cpuModel(no model name) = %q; want unknown", got)
	}
}

// TestVulnerabilities: the kernel's lines in the order of their names,
// one line each, within the wire's bounds.
func TestVulnerabilities(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"spectre_v2": "Mitigation: Retpolines; STIBP: disabled\n",
		"meltdown":   "Mitigation: PTI\nsecond line\n",
		"long":       strings.Repeat("x", 2*wire.MaxVulnerabilityTextLen),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := vulnerabilities(dir)
	want := []wire.Vulnerability{{Name: "long", Text: strings.Repeat("x", wire.MaxVulnerabilityTextLen)}, {Name: "meltdown", Text: "Mitigation: PTI"},
		{Name: "spectre_v2", Text: "Mitigation: Retpolines; STIBP: disabled"}}
	if !slices.Equal(got, want) {
		t.Errorf("vulnerabilities(dir) = %q; want %q", got, want)
	}
	if got := vulnerabilities(filepath.Join(dir, "none")); got != nil {
		t.Errorf("vulnerabilities(no directory) = %q; want none", got)
	}
}

package agent

import (
	"testing"
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

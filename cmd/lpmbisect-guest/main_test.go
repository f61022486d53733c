package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoInitTimeBPF guards against linking cilium/ebpf's rlimit package into
// the guest: its init function creates a BPF map before PID 1 has mounted
// /proc, and the failed BPF token lookup that comes with it is cached for the
// life of the process, failing every later map creation.
func TestNoInitTimeBPF(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "github.com/cilium/ebpf/rlimit" {
			t.Errorf("go list -deps . = ... %s ...; the guest must not link it", pkg)
		}
	}
}

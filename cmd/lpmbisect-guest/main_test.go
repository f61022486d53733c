package main

import (
	"os/exec"
	"strings"
	"testing"
)

// forbidden are the packages the guest binary must not link, by import
// path prefix, and why.
var forbidden = []struct{ prefix, why string }{
	// Host-only: the initramfs carries the guest, so it stays small and
	// boots fast.
	{"modernc.org/sqlite", "SQLite is the host's history store"},
	{"gonum.org/v1/plot", "plotting is the host's reports"},
	{"github.com/jackc/pgx", "PostgreSQL is the host's history and fleet"},
	{"github.com/riverqueue/river", "River is the host's fleet queue"},
	// Its init function creates a BPF map before PID 1 has mounted /proc,
	// and the failed BPF token lookup that comes with it is cached for the
	// life of the process, failing every later map creation.
	{"github.com/cilium/ebpf/rlimit", "its init creates a BPF map before /proc is mounted"},
}

// linked returns the packages of forbidden that pkg depends on, one line
// each with the reason.
func linked(t *testing.T, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", pkg)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	var bad []string
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if dep == f.prefix || strings.HasPrefix(dep, f.prefix+"/") {
				bad = append(bad, dep+" ("+f.why+")")
			}
		}
	}
	return bad
}

// TestGuestDependencies checks that the guest binary links nothing of the
// host's and not cilium/ebpf's rlimit.
func TestGuestDependencies(t *testing.T) {
	for _, dep := range linked(t, "./cmd/lpmbisect-guest") {
		t.Errorf("the guest links %s; it must not", dep)
	}
	// The check itself: the host's history package links SQLite and pgx.
	bad := strings.Join(linked(t, "./history"), "\n")
	if !strings.Contains(bad, "modernc.org/sqlite") || !strings.Contains(bad, "github.com/jackc/pgx/") {
		t.Errorf("go list -deps ./history: found of the forbidden packages only\n%s\nwant SQLite and pgx (is the check blind?)", bad)
	}
}

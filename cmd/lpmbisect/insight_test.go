package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInsightFlagsBeforeAnyVM checks that a bad --debug-a, --debug-b or
// --symbols is a usage error before any kernel is looked at.
func TestInsightFlagsBeforeAnyVM(t *testing.T) {
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	os.WriteFile(notes, []byte("not a vmlinux\n"), 0o644)
	common := []string{"compare", "--cache-dir", t.TempDir(), "--guest", fakeGuest(t), "--run-dir", filepath.Join(dir, "runs")}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--debug-a", notes}, "--debug-a: " + notes + " is neither an ELF vmlinux nor a Debian package"},
		{[]string{"--debug-b", filepath.Join(dir, "missing")}, "--debug-b: open"},
		{[]string{"--symbols", "trie_(("}, "--symbols \"trie_((\": error parsing regexp"},
	} {
		args := append(append(append([]string{}, common...), c.args...), "a", "b")
		code, _, stderr := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("lpmbisect %s: exit %d, %q; want %d and %q", strings.Join(c.args, " "), code, stderr, exitUsage, c.want)
		}
	}
}

func TestSymbolFile(t *testing.T) {
	dir := t.TempDir()
	elf := filepath.Join(dir, "vmlinux")
	os.WriteFile(elf, []byte("\x7fELF\x02\x01\x01\x00rest"), 0o644)
	deb := filepath.Join(dir, "linux-image-6.1.0-57-cloud-amd64-dbg.deb")
	os.WriteFile(deb, []byte("!<arch>\ndebian-binary"), 0o644)
	if in, err := symbolFile(elf); err != nil || in.Vmlinux != elf || in.DebugPackage != "" {
		t.Errorf("symbolFile(ELF) = %+v, %v; want a vmlinux", in, err)
	}
	if in, err := symbolFile(deb); err != nil || in.DebugPackage != deb || in.Vmlinux != "" {
		t.Errorf("symbolFile(.deb) = %+v, %v; want a debug package", in, err)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSeriesUsage(t *testing.T) {
	dir := t.TempDir()
	mbox := filepath.Join(dir, "empty.mbox")
	os.WriteFile(mbox, []byte("From x Mon Sep 17 00:00:00 2001\nSubject: [PATCH 0/1] cover only\n\nno diff\n"), 0o644)
	common := []string{"--cache-dir", t.TempDir(), "--guest", fakeGuest(t), "--run-dir", filepath.Join(dir, "runs")}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no range", []string{"series"}, "BASE..TIP"},
		{"not a range", []string{"series", "v6.12"}, "BASE..TIP"},
		{"mbox without base", []string{"series", "--mbox", mbox}, "--base"},
		{"mbox and range", []string{"series", "--mbox", mbox, "--base", "HEAD", "a..b"}, "not both"},
		{"mail format elsewhere", []string{"compare", "--format", "mail", "a", "b"}, "--format"},
		{"veristat for a series", []string{"series", "--format", "veristat", "a..b"}, "--format veristat is compare's and stat's"},
		{"not a repository", append(append([]string{"series", "--repo", dir}, common...), "a..b"), "not in a git work tree"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, c.args...)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if last := lines[len(lines)-1]; code != exitUsage || !strings.Contains(last, c.want) {
				t.Errorf("lpmbisect %s: exit %d, %q; want %d mentioning %q", strings.Join(c.args, " "), code, last, exitUsage, c.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "runs")); err == nil {
				t.Errorf("a run directory was created: a VM may have been started")
			}
		})
	}
}

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// cli runs lpmbisect in-process and returns its exit code and outputs.
func runCLI(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = runMain(append([]string{"lpmbisect"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// fakeGuest is enough for runs that must fail before the initramfs is packed.
func fakeGuest(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "lpmbisect-guest")
	os.WriteFile(p, []byte("not used"), 0o755)
	return p
}

func TestBadInputBeforeAnyVM(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	os.WriteFile(text, []byte("this is not a kernel\n"), 0o644)
	random := filepath.Join(dir, "random.bin")
	os.WriteFile(random, bytes.Repeat([]byte{0x5a, 0x13, 0xe7, 0x01}, 4096), 0o644)
	self, _ := os.Executable() // an ELF that is not a bzImage
	missing := filepath.Join(dir, "vmlinuz-missing")
	cache := t.TempDir()
	guest := fakeGuest(t)
	runs := filepath.Join(dir, "runs")
	common := []string{"--cache-dir", cache, "--guest", guest, "--run-dir", runs}

	for _, c := range []struct {
		name string
		args []string
		want string // in the error line
	}{
		{"no arguments", []string{"compare"}, "two kernels"},
		{"missing kernel", append(append([]string{"run"}, common...), missing), "does not exist"},
		{"text file", append(append([]string{"run"}, common...), text), "not a kernel"},
		{"random bytes", append(append([]string{"compare"}, common...), random, random), "not a kernel"},
		{"ELF, not bzImage", append(append([]string{"run"}, common...), self), "ELF"},
		{"unknown accel", append(append([]string{"run", "--accel", "hvf"}, common...), text), "accel"},
		{"bad bench regexp", append(append([]string{"run", "--bench", "LPM("}, common...), text), "--bench"},
		{"bench with space", append(append([]string{"run", "--bench", "a b"}, common...), text), "--bench"},
		{"icount with two vCPUs", append(append([]string{"run", "--accel", "icount", "--cpus", "2"}, common...), text), "--cpus 1"},
		{"negative samples", append(append([]string{"run", "--samples", "-1"}, common...), text), "--samples"},
		{"unwritable out", append(append([]string{"run", "--out", filepath.Join(dir, "no", "such", "dir", "r.txt")}, common...), text), "--out"},
		{"flags after the kernel", append([]string{"run", text, "--boots", "2"}, common...), "not a kernel"},
		{"a kernel after --", append(append([]string{"run"}, common...), "--", "--not-a-flag"), "does not exist"},
		{"mistyped flag", append(append([]string{"run", "--acel", "tcg"}, common...), text), "did you mean --accel"},
		{"unknown flag", []string{"run", "--no-such-flag", text}, "no-such-flag"},
		{"workload not an object", append(append([]string{"run", "--workload", text}, common...), text), "--workload: read BPF object"},
		{"workload without program", append(append([]string{"run", "--workload", exampleWorkload + ":nosuch"}, common...), text), `has no program "nosuch"`},
		{"packet without workload", append(append([]string{"run", "--packet", text}, common...), text), "need --workload"},
		{"missing packet", append(append([]string{"run", "--workload", exampleWorkload, "--packet", missing}, common...), text), "--packet"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, c.args...)
			if code != exitUsage {
				t.Errorf("lpmbisect %s: exit %d; want %d (usage)\nstderr: %s", strings.Join(c.args, " "), code, exitUsage, stderr)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, "lpmbisect: ") || !strings.Contains(last, c.want) {
				t.Errorf("lpmbisect %s: last stderr line %q; want an lpmbisect: error mentioning %q", c.args[0], last, c.want)
			}
			if _, err := os.Stat(runs); err == nil {
				t.Errorf("a run directory was created: a VM may have been started")
				os.RemoveAll(runs)
			}
		})
	}
}

func TestHelpHasExamples(t *testing.T) {
	for _, cmd := range []string{"run", "compare"} {
		code, out, _ := runCLI(t, cmd, "--help")
		if code != 0 || !strings.Contains(out, "Examples:") || !strings.Contains(out, "--verbose") {
			t.Errorf("lpmbisect %s --help: exit %d, output lacks examples or --verbose:\n%s", cmd, code, out)
		}
	}
}

// The command a report prints runs as printed: the real series' --bench
// regexp was printed bare by compare, where a shell stops at "(".
func TestCommandLineRunsInAShell(t *testing.T) {
	args := []string{"/work/bin/lpmbisect", "compare", "--accel", "icount", "--bench", "LPMTrie/op=(lookup|update)/keys=random", "a b.bzImage", "tip"}
	got := commandLine(args)
	if want := `lpmbisect compare --accel icount --bench 'LPMTrie/op=(lookup|update)/keys=random' 'a b.bzImage' tip`; got != want {
		t.Errorf("commandLine = %s\nwant           %s", got, want)
	}
	out, err := exec.Command("sh", "-c", `for a in `+strings.TrimPrefix(got, "lpmbisect ")+`; do printf '%s\n' "$a"; done`).Output()
	if err != nil || strings.Join(strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"), "\x00") != strings.Join(args[1:], "\x00") {
		t.Errorf("sh read %q back as %q (%v); want %q", got, out, err, args[1:])
	}
}

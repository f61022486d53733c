package main

// Faults and bad input that need a VM: each case boots a real kernel (or a
// broken copy of one) and checks the message, the exit code and that no
// QEMU process is left. Cases that fail before any VM are in main_test.go.

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/testbed/guestfaults"
	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
)

// lastLine is the error line a user sees.
func lastLine(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	return lines[len(lines)-1]
}

// logCase records a row of the faults table: case, message, exit code,
// QEMU processes left.
func logCase(t *testing.T, name, stderr string, code int) {
	t.Helper()
	if parallelBoots.Load() > 0 { // whose QEMU is whose: asked when the parallel cases have ended
		t.Logf("| %s | %s | %d | – |", name, lastLine(stderr), code)
		return
	}
	left := len(strings.Fields(qemuLeft()))
	t.Logf("| %s | %s | %d | %d |", name, lastLine(stderr), code, left)
	if left != 0 {
		t.Errorf("%s: %d QEMU processes left running", name, left)
	}
}

func TestFaultTruncatedImage(t *testing.T) {
	args := vmArgs(t)
	k, err := kernel.Resolve(testkernels.Deb(t, testkernels.Debian612), sharedCache(t))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(k.Image)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(t.TempDir(), "bzImage-truncated")
	os.WriteFile(truncated, data[:len(data)/2], 0o644) // the setup header survives, the payload does not
	start := time.Now()
	code, _, stderr := runCLI(t, append(append([]string{"run", "--accel", "tcg", "--boot-timeout", "15s"}, args...), truncated)...)
	logCase(t, "truncated bzImage", stderr, code)
	if code != exitInfra || !strings.Contains(stderr, "boot-failed") || !strings.Contains(stderr, "truncated or corrupt image") {
		t.Errorf("run(truncated bzImage) = exit %d; want %d with boot-failed, truncated or corrupt image\n%s", code, exitInfra, stderr)
	}
	if d := time.Since(start); d > 40*time.Second {
		t.Errorf("run(truncated bzImage) took %s; want it ended by the 15 s boot deadline", d)
	}
}

func TestFaultKernelWithoutBPF(t *testing.T) {
	args := vmArgs(t)
	// The guest denies itself bpf() (ENOSYS), as a kernel built without
	// CONFIG_BPF_SYSCALL would.
	code, stdout, stderr := runCLI(t, append(append([]string{"run", "--accel", "tcg", "--append", guestfaults.Arg(guestfaults.NoBPF), "--bench", "lookup,controls"}, args...), testkernels.Deb(t, testkernels.Debian612))...)
	logCase(t, "kernel without bpf()", stderr, code)
	if code != exitInfra || !strings.Contains(stderr, "no benchmark produced results") || !strings.Contains(stderr, "needs the bpf() system call (CONFIG_BPF_SYSCALL)") {
		t.Errorf("run(no bpf) = exit %d; want %d naming the missing bpf() system call\n%s", code, exitInfra, stderr)
	}
	if n := strings.Count(stderr, "lpmbisect-unsupported:"); n < 4 {
		t.Errorf("stderr has %d unsupported lines; want one per selected benchmark (≥4)\n%s", n, stderr)
	}
	if strings.Contains(stdout, "Benchmark") || strings.Contains(stderr, "panic") {
		t.Errorf("want no results and no crash; stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
}

func TestFaultGuestMisbehaves(t *testing.T) {
	args := vmArgs(t)
	t.Cleanup(func() { assertNoQEMULeft(t) }) // once every case has ended
	deb := testkernels.Deb(t, testkernels.Debian612)
	for _, c := range []struct {
		name  string
		flags []string
		want  []string // in stderr
	}{
		{"panic during boot", []string{"--append", "rdinit=/nonexistent"}, []string{"panic: Kernel panic - not syncing"}},
		{"panic during a benchmark", []string{"--append", guestfaults.Arg(guestfaults.Panic)}, []string{"panic: Kernel panic - not syncing", "finished samples are kept"}},
		{"init exits", []string{"--append", guestfaults.Arg(guestfaults.Exit)}, []string{"panic: Kernel panic - not syncing: Attempted to kill init"}},
		{"guest hangs", []string{"--append", guestfaults.Arg(guestfaults.Hang), "--progress-timeout", "5s"}, []string{"stalled", "finished samples are kept"}},
		{"guest floods the channel", []string{"--append", guestfaults.Arg(guestfaults.Flood)}, []string{"corrupt", "more than"}},
		{"endless line", []string{"--append", guestfaults.Arg(guestfaults.Longline)}, []string{"corrupt", "longer than"}},
		{"garbage", []string{"--append", guestfaults.Arg(guestfaults.Garbage)}, []string{"corrupt"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			bootsInParallel(t) // one boot each, under icount: they may share the host
			runDir := t.TempDir()
			code, stdout, stderr := runCLI(t, append(append(append([]string{"run", "--accel", "icount", "--samples", "2"}, c.flags...), append(args, "--run-dir", runDir)...), deb)...)
			logCase(t, c.name, stderr, code)
			if code != exitInfra {
				t.Errorf("exit %d; want %d\n%s", code, exitInfra, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stdout, "Benchmark") {
				t.Errorf("a failed boot's samples were reported as results:\n%s", stdout)
			}
			// Bounded: nothing the guest sent beyond the caps was kept.
			filepath.Walk(runDir, func(p string, info os.FileInfo, err error) error {
				if err == nil && info.Mode().IsRegular() && info.Size() > int64(vmrunner.DefaultLimits.MaxBytes) {
					t.Errorf("%s is %d bytes; want at most %d", p, info.Size(), vmrunner.DefaultLimits.MaxBytes)
				}
				return nil
			})
		})
	}
}

// buildCLI builds lpmbisect for tests that need a real process (signals,
// two processes at once).
var (
	cliOnce sync.Once
	cliPath string
	cliErr  error
)

func builtCLI(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lpmbisect-cli-")
		if err != nil {
			cliErr = err
			return
		}
		cliPath = filepath.Join(dir, "lpmbisect")
		out, err := exec.Command("go", "build", "-o", cliPath, ".").CombinedOutput()
		if err != nil {
			cliErr = err
			t.Logf("%s", out)
		}
	})
	if cliErr != nil {
		t.Fatalf("build lpmbisect: %v", cliErr)
	}
	return cliPath
}

func TestFaultSignals(t *testing.T) {
	args := vmArgs(t)
	bin := builtCLI(t)
	deb := testkernels.Deb(t, testkernels.Debian612)
	for _, c := range []struct {
		sig  syscall.Signal
		name string
		code int
	}{{syscall.SIGINT, "SIGINT", exitSIGINT}, {syscall.SIGTERM, "SIGTERM", exitSIGTERM}} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "results.txt")
			cmd := exec.Command(bin, append(append([]string{"run", "--accel", "tcg", "--boots", "5", "--samples", "2", "--out", out}, args...), deb)...)
			stderrPipe, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			sc := bufio.NewScanner(io.TeeReader(stderrPipe, &stderr))
			sent := false
			for sc.Scan() {
				// After the first boot finished, interrupt the second.
				if !sent && strings.Contains(sc.Text(), "[1/5]") {
					time.Sleep(time.Second)
					cmd.Process.Signal(c.sig)
					sent = true
				}
			}
			cmd.Wait()
			code := cmd.ProcessState.ExitCode()
			logCase(t, c.name+" mid-run", stderr.String(), code)
			if code != c.code {
				t.Errorf("exit %d after %s; want %d\n%s", code, c.name, c.code, stderr.String())
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("an interrupted run left a results file under its final name %s", out)
			}
			data, err := os.ReadFile(out + ".partial")
			if err != nil {
				t.Fatalf("finished boots not kept: %v", err)
			}
			if n := bytes.Count(data, []byte("\nBenchmark")); n < 2 {
				t.Errorf("%s.partial has %d results; want the first boot's 4", out, n)
			}
			if !strings.Contains(stderr.String(), ".partial") {
				t.Errorf("stderr does not say where the finished boots are:\n%s", stderr.String())
			}
		})
	}
}

func TestFaultTwoProcessesShareTheCache(t *testing.T) {
	args := vmArgs(t)
	bin := builtCLI(t)
	cache := t.TempDir() // empty: both processes unpack and pack at once
	var wg sync.WaitGroup
	errs := make([]string, 2)
	codes := make([]int, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(bin, append(append([]string{"run", "--accel", "icount", "--samples", "1", "--bench", "LPMTrie/op=lookup/keys=random"}, args...),
				"--cache-dir", cache, testkernels.Deb(t, testkernels.Debian61))...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			cmd.Run()
			codes[i], errs[i] = cmd.ProcessState.ExitCode(), stderr.String()
		}()
	}
	wg.Wait()
	for i := range 2 {
		logCase(t, "two processes, one cache", errs[i], codes[i])
		if codes[i] != 0 {
			t.Errorf("process %d: exit %d\n%s", i, codes[i], errs[i])
		}
	}
	for _, pattern := range []string{"kernels/deb-*.tmp*", "kernels/*.partial*", "initramfs/pack-*"} {
		if left, _ := filepath.Glob(filepath.Join(cache, pattern)); len(left) > 0 {
			t.Errorf("temporary cache entries left behind: %v", left)
		}
	}
}

func TestFaultDiskFull(t *testing.T) {
	args := vmArgs(t)
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", dir).CombinedOutput(); err != nil {
		testkernels.Unavailable(t, "cannot mount a tiny tmpfs to fill (need root): %v %s", err, out)
	}
	defer exec.Command("umount", dir).Run()
	out := filepath.Join(dir, "results.txt")
	code, _, stderr := runCLI(t, append(append([]string{"run", "--accel", "tcg", "--samples", "60", "--rounds", "1", "--out", out}, args...), testkernels.Deb(t, testkernels.Debian612))...)
	logCase(t, "disk full while writing", stderr, code)
	if code == 0 || !strings.Contains(stderr, "no space left") {
		t.Errorf("run(--out on a full disk) = exit %d; want a failure naming the full disk\n%s", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a half-written results file was presented as complete: %s", out)
	}
}

// TestFaultGuestLies boots a real kernel under icount with a guest that
// lies in a stream its trailer proves (lpmbisect_fault=nan, unasked): the
// boot is counted failed as corrupt with the reason, and no result of it
// is reported. The other hostile faults are tested on their recorded
// streams (wire.TestHostileStreams); this checks the plumbing, guest to
// exit code.
func TestFaultGuestLies(t *testing.T) {
	args := vmArgs(t)
	t.Cleanup(func() { assertNoQEMULeft(t) })
	deb := testkernels.Deb(t, testkernels.Debian612)
	for _, c := range []struct {
		fault string
		want  []string // in stderr
	}{
		{guestfaults.NaN, []string{"corrupt", "rejected: Benchmark", "value NaN insn/op is not in [0, 1e+12]"}},
		{guestfaults.Unasked, []string{"corrupt", "rejected: result for BenchmarkUnasked/op=lie, which lpmbisect.bench="}},
	} {
		t.Run(c.fault, func(t *testing.T) {
			bootsInParallel(t)
			code, stdout, stderr := runCLI(t, append(append([]string{"run", "--accel", "icount", "--samples", "2", "--bench", "controls",
				"--boot-timeout", "5m", "--append", guestfaults.Arg(c.fault)}, args...), deb)...)
			logCase(t, "guest lies: "+c.fault, stderr, code)
			if code != exitInfra {
				t.Errorf("exit %d; want %d\n%s", code, exitInfra, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stdout, "Benchmark") {
				t.Errorf("a rejected boot's results were reported:\n%s", stdout)
			}
		})
	}
}

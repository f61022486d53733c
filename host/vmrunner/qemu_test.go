package vmrunner

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/wire"
)

func TestCommandLine(t *testing.T) {
	cfg := Config{Kernel: "/k/bzImage", Initramfs: "/c/i.cpio", RunDir: "/run/A-01", Accel: wire.AccelIcount,
		KernelArgs: []string{"lpmbisect.samples=3"}, MemoryMB: 512, CPUs: 2}
	args := cfg.CommandLine()
	line := strings.Join(args, " ")
	for _, want := range []string{
		"qemu-system-x86_64 ", "-nodefaults", "-no-reboot", "-display none",
		"-accel tcg -icount shift=0,align=off,sleep=off", "-m 512", "-smp 2",
		"-kernel /k/bzImage", "-initrd /c/i.cpio",
		"-chardev file,id=console,path=/run/A-01/console.log -serial chardev:console",
		"-chardev file,id=fallback,path=/run/A-01/serial1.out -serial chardev:fallback",
		"-device virtserialport,chardev=results,name=" + wire.PortName,
	} {
		if !strings.Contains(line, want) {
			t.Errorf("CommandLine() = %q; want it to contain %q", line, want)
		}
	}
	i := slices.Index(args, "-append")
	if i < 0 {
		t.Fatalf("CommandLine() has no -append: %q", line)
	}
	for _, want := range []string{"console=ttyS0,115200", "panic=-1", "cryptomgr.notests", "initcall_blacklist=jent_mod_init,trace_eval_init", "no_timer_check", "noapictimer", "lpmbisect.samples=3"} {
		if !slices.Contains(strings.Fields(args[i+1]), want) {
			t.Errorf("kernel command line %q lacks %q", args[i+1], want)
		}
	}
	// The serial ports must be in this order: ttyS0 console, ttyS1 fallback.
	if strings.Index(line, "chardev:console") > strings.Index(line, "chardev:fallback") {
		t.Errorf("console must be the first serial port: %q", line)
	}
}

func TestParseQEMUVersion(t *testing.T) {
	for out, want := range map[string]string{
		"QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)\nCopyright (c) 2003-2022 Fabrice Bellard and the QEMU Project developers\n": "7.2.22",
		"QEMU emulator version 8.2.2 (Debian 1:8.2.2+ds-0ubuntu1.4)\n":                                                                              "8.2.2",
		"QEMU emulator version 9.0.50 (v9.0.0-1388-g80e8f06021-dirty)\n":                                                                            "9.0.50",
		"QEMU emulator version 6.2.0\n": "6.2.0",
	} {
		if got, err := parseQEMUVersion(out); err != nil || got != want {
			t.Errorf("parseQEMUVersion(%q) = %q, %v; want %q", out, got, err, want)
		}
	}
	for _, out := range []string{"", "Usage: qemu [options]\n", "QEMU emulator version\n", "Copyright\nQEMU emulator version 7.2.0\n"} {
		if got, err := parseQEMUVersion(out); err == nil {
			t.Errorf("parseQEMUVersion(%q) = %q; want an error", out, got)
		}
	}
}

// TestQEMUVersionCached runs a stand-in QEMU that counts its runs: one run
// per binary, and a new one when the binary changes.
func TestQEMUVersionCached(t *testing.T) {
	dir := t.TempDir()
	qemu, calls := filepath.Join(dir, "qemu-system-x86_64"), filepath.Join(dir, "calls")
	install := func(version string) {
		script := "#!/bin/sh\necho run >> '" + calls + "'\necho 'QEMU emulator version " + version + "'\n"
		if err := os.WriteFile(qemu, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	runs := func() int {
		b, _ := os.ReadFile(calls)
		return strings.Count(string(b), "\n")
	}
	install("7.2.0")
	for range 2 {
		if v, err := QEMUVersion(qemu); err != nil || v != "7.2.0" {
			t.Fatalf("QEMUVersion(%s) = %q, %v; want 7.2.0", qemu, v, err)
		}
	}
	if n := runs(); n != 1 {
		t.Errorf("QEMUVersion twice ran QEMU %d times; want 1 (cached)", n)
	}
	install("10.1.0") // another size: an upgraded binary
	if v, err := QEMUVersion(qemu); err != nil || v != "10.1.0" {
		t.Errorf("QEMUVersion(upgraded %s) = %q, %v; want 10.1.0", qemu, v, err)
	}
	if _, err := QEMUVersion(filepath.Join(dir, "missing")); !errors.Is(err, ErrQEMUMissing) {
		t.Errorf("QEMUVersion(missing) = %v; want ErrQEMUMissing", err)
	}
}

// The local APIC timer's calibration is skipped under icount alone: a
// wall-clock boot keeps its tick where the kernel puts it.
func TestNoAPICTimerUnderIcountOnly(t *testing.T) {
	for accel, want := range map[wire.Accel]bool{wire.AccelIcount: true, wire.AccelTCG: false, wire.AccelKVM: false} {
		line := strings.Fields((&Config{Accel: accel}).KernelCommandLine())
		if got := slices.Contains(line, "noapictimer"); got != want {
			t.Errorf("%s: noapictimer on the command line %v; want %v", accel, got, want)
		}
		if !slices.Contains(line, "no_timer_check") {
			t.Errorf("%s: the command line lacks the skipped boot work: %q", accel, line)
		}
	}
}

package vmrunner

import (
	"slices"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/wire"
)

func TestCommandLine(t *testing.T) {
	cfg := Config{Kernel: "/k/bzImage", Initramfs: "/c/i.cpio", RunDir: "/run/A-01", Accel: Icount,
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
	for _, want := range []string{"console=ttyS0,115200", "panic=-1", "lpmbisect.samples=3"} {
		if !slices.Contains(strings.Fields(args[i+1]), want) {
			t.Errorf("kernel command line %q lacks %q", args[i+1], want)
		}
	}
	// The serial ports must be in this order: ttyS0 console, ttyS1 fallback.
	if strings.Index(line, "chardev:console") > strings.Index(line, "chardev:fallback") {
		t.Errorf("console must be the first serial port: %q", line)
	}
}

func TestShellQuote(t *testing.T) {
	got := shellQuote([]string{"qemu", "-append", "console=ttyS0 panic=-1", "it's"})
	want := `qemu -append 'console=ttyS0 panic=-1' 'it'\''s'`
	if got != want {
		t.Errorf("shellQuote = %s; want %s", got, want)
	}
}

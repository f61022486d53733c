package agent

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lpmbisect/lpmbisect/internal/cpuinfo"
	"github.com/lpmbisect/lpmbisect/wire"
)

// mount is a file system the guest mounts at start.
type mount struct {
	source, target, fstype string
	flags                  uintptr
}

// mounts are what PID 1 needs: /proc and /sys for the command line, the
// CPU model and the virtio ports, devtmpfs for device nodes, and the BPF,
// trace and debug file systems for benchmarks that pin or trace.
var mounts = []mount{
	{"proc", "/proc", "proc", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC},
	{"sysfs", "/sys", "sysfs", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC},
	{"devtmpfs", "/dev", "devtmpfs", unix.MS_NOSUID},
	{"tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID | unix.MS_NODEV},
	{"bpf", "/sys/fs/bpf", "bpf", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC},
	{"tracefs", "/sys/kernel/tracing", "tracefs", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC},
	{"debugfs", "/sys/kernel/debug", "debugfs", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC},
}

// logf writes a line of progress to the console (standard error).
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "lpmbisect-guest: "+format+"\n", args...)
}

// Logf writes a line of progress to the console, as the rest of the guest
// does.
func Logf(format string, args ...any) { logf(format, args...) }

// setUpPID1 mounts what PID 1 needs and makes sure the console is its
// standard input, output and error. It comes first, before /proc/cmdline
// can be read.
func setUpPID1() {
	mountAll()
	ensureConsole()
}

// mountAll mounts the file systems, reporting failures on the console and
// carrying on: a kernel without tracefs can still run the benchmarks.
func mountAll() {
	for _, m := range mounts {
		if err := os.MkdirAll(m.target, 0o755); err != nil {
			logf("mount %s: %v", m.target, err)
			continue
		}
		err := unix.Mount(m.source, m.target, m.fstype, m.flags, "")
		if err != nil && !errors.Is(err, unix.EBUSY) {
			logf("mount %s on %s: %v", m.fstype, m.target, err)
		}
	}
}

// ensureConsole points standard input, output and error at /dev/console
// if any of them is not open, so console messages are not lost.
func ensureConsole() {
	var missing []int
	for fd := 0; fd < 3; fd++ {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			missing = append(missing, fd)
		}
	}
	if len(missing) == 0 {
		return
	}
	con, err := unix.Open("/dev/console", unix.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return
	}
	for _, fd := range missing {
		if fd != con {
			unix.Dup3(con, fd, 0)
		}
	}
}

// kernelRelease returns uname -r.
func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "unknown"
	}
	return unix.ByteSliceToString(u.Release[:])
}

// cpuModel returns the CPU model a /proc/cpuinfo text names
// (cpuinfo.Info.Model, as the host's calibration key reads its own), or
// "unknown".
func cpuModel(text string) string {
	if info, err := cpuinfo.Parse(strings.NewReader(text)); err == nil && info.Model != "" {
		return info.Model
	}
	return "unknown"
}

// vulnerabilities reads the kernel's lines of dir
// (wire.VulnerabilitiesDir), in the order of their names, within the
// wire's bounds: the first wire.MaxVulnerabilities files, a line of at
// most wire.MaxVulnerabilityTextLen bytes each. A kernel without the
// directory has none.
func vulnerabilities(dir string) []wire.Vulnerability {
	entries, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil
	}
	var out []wire.Vulnerability
	for _, e := range entries[:min(len(entries), wire.MaxVulnerabilities)] {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		line := make([]byte, wire.MaxVulnerabilityTextLen)
		n, _ := io.ReadFull(f, line)
		f.Close()
		text, _, _ := strings.Cut(string(line[:n]), "\n")
		out = append(out, wire.Vulnerability{Name: e.Name(), Text: text})
	}
	return out
}

// powerOff flushes file systems and powers the VM off. PID 1 must never
// return: that panics the kernel.
func powerOff() {
	unix.Sync()
	err := unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	logf("power off: %v", err)
	sleepForever()
}

// sleepForever blocks without tripping the Go runtime's deadlock detector
// (which would exit PID 1 and panic the kernel).
func sleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}

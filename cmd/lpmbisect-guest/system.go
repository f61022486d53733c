package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
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

// cpuModel returns the first "model name" of a /proc/cpuinfo text.
func cpuModel(cpuinfo string) string {
	sc := bufio.NewScanner(strings.NewReader(cpuinfo))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(key) == "model name" {
			return strings.TrimSpace(val)
		}
	}
	return "unknown"
}

// readLoadOrder returns the module paths listed in a load-order file: one
// absolute path a line; blank lines and lines starting with # are skipped.
func readLoadOrder(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		paths = append(paths, line)
	}
	return paths, nil
}

// loadModules loads the modules of the load-order file with finit_module,
// in order. A module that is already loaded (EEXIST) is fine. Failures are
// reported on the console and returned as problems; loading goes on, since
// the serial fallback still works without virtio. It returns a summary for
// the run log.
func loadModules(orderFile string) (summary string, problems []string) {
	paths, err := readLoadOrder(orderFile)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", []string{fmt.Sprintf("modules: %v", err)}
	}
	var loaded []string
	for _, p := range paths {
		name := moduleName(p)
		if err := loadModule(p); err != nil {
			msg := fmt.Sprintf("load module %s: %v", p, err)
			if errors.Is(err, unix.ENOENT) {
				msg += " (unknown symbol: a dependency missing or listed later?)"
			}
			logf("%s", msg)
			problems = append(problems, msg)
			continue
		}
		loaded = append(loaded, name)
	}
	logf("modules loaded: %s", strings.Join(loaded, " "))
	return "modules loaded: " + strings.Join(loaded, " "), problems
}

func loadModule(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	flags := 0
	for _, ext := range []string{".xz", ".zst", ".gz"} {
		if strings.HasSuffix(path, ext) {
			flags |= unix.MODULE_INIT_COMPRESSED_FILE // 6.1+ with CONFIG_MODULE_DECOMPRESS
		}
	}
	err = unix.FinitModule(fd, "", flags)
	if errors.Is(err, unix.EEXIST) {
		return nil
	}
	return err
}

// moduleName returns the module name of a .ko path: "virtio_pci" for
// "/lib/modules/lpmbisect/virtio_pci.ko.xz".
func moduleName(path string) string {
	base := path[strings.LastIndexByte(path, '/')+1:]
	if i := strings.Index(base, ".ko"); i >= 0 {
		base = base[:i]
	}
	return base
}

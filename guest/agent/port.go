package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lpmbisect/lpmbisect/wire"
)

// portTimeout is how long the guest waits for the virtio port to appear
// after loading the modules.
const portTimeout = 2 * time.Second

// serialFallback is the UART the host attaches as the second serial port.
const serialFallback = "/dev/ttyS1"

// openChannel opens the results channel: the virtio port called port, or
// the serial fallback; standard output for a guest run by hand (pid1
// false). why explains a fallback.
func openChannel(port string, pid1 bool) (ch *channel, why string, err error) {
	if !pid1 {
		return &channel{fd: 1, kind: wire.ChannelStdout, path: "standard output"}, "", nil
	}
	if dev, ok := waitPort("/sys", port, portTimeout); ok {
		ch, err := openVirtioPort("/dev", "/sys", dev)
		if err == nil {
			return ch, "", nil
		}
		why = fmt.Sprintf("virtio port %s: %v; falling back to %s", port, err, serialFallback)
	} else {
		why = fmt.Sprintf("virtio port %s not found within %v (no virtio console in this kernel, or its modules are missing); falling back to %s", port, portTimeout, serialFallback)
	}
	ch, err = openSerial(serialFallback)
	return ch, why, err
}

// findPort returns the device name (vportNpM) of the virtio-serial port
// called name, looking under sysDir (normally /sys).
func findPort(sysDir, name string) (string, bool) {
	paths, _ := filepath.Glob(filepath.Join(sysDir, "class/virtio-ports/*/name"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err == nil && strings.TrimSpace(string(b)) == name {
			return filepath.Base(filepath.Dir(p)), true
		}
	}
	return "", false
}

// waitPort polls for the virtio-serial port called name for up to timeout.
func waitPort(sysDir, name string, timeout time.Duration) (string, bool) {
	deadline := time.Now().Add(timeout)
	for {
		if dev, ok := findPort(sysDir, name); ok {
			return dev, true
		}
		if time.Now().After(deadline) {
			return "", false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// openVirtioPort opens /dev/<dev> for reading and writing. If devtmpfs did not create the
// node, it makes one from the port's dev file in sysfs.
func openVirtioPort(devDir, sysDir, dev string) (*channel, error) {
	path := filepath.Join(devDir, dev)
	// Read and write: a paced guest reads the host's go lines from the
	// same descriptor (one descriptor, used by one goroutine in turn).
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		if merr := mknodFromSys(path, filepath.Join(sysDir, "class/virtio-ports", dev, "dev")); merr != nil {
			return nil, fmt.Errorf("open %s: %w (and %w)", path, err, merr)
		}
		fd, err = unix.Open(path, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &channel{fd: fd, kind: wire.ChannelVirtio, path: path}, nil
}

// mknodFromSys creates the character device path from a sysfs dev file
// ("MAJOR:MINOR").
func mknodFromSys(path, devFile string) error {
	b, err := os.ReadFile(devFile)
	if err != nil {
		return err
	}
	maj, min, ok := strings.Cut(strings.TrimSpace(string(b)), ":")
	ma, err1 := strconv.ParseUint(maj, 10, 32)
	mi, err2 := strconv.ParseUint(min, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return fmt.Errorf("%s: malformed device number %q", devFile, b)
	}
	return unix.Mknod(path, unix.S_IFCHR|0o600, int(unix.Mkdev(uint32(ma), uint32(mi))))
}

// openSerial opens the UART at path and makes it a raw 8N1 line at 115200
// baud, the highest rate of a standard 8250 (QEMU does not throttle to it).
func openSerial(path string) (*channel, error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: get termios: %w", path, err)
	}
	makeRaw(t)
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, t); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%s: set termios: %w", path, err)
	}
	return &channel{fd: fd, kind: wire.ChannelSerial, path: path, tty: true}, nil
}

// makeRaw sets t to raw mode as cfmakeraw does (no output post-processing, so
// no \n to \r\n translation; no echo, no signals, no input translation), 8N1
// with the receiver on and modem control lines ignored, at 115200 baud.
func makeRaw(t *unix.Termios) {
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON | unix.IXOFF
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB | unix.CSTOPB | unix.CRTSCTS | unix.CBAUD
	t.Cflag |= unix.CS8 | unix.CREAD | unix.CLOCAL | unix.B115200
	t.Ispeed = 115200
	t.Ospeed = 115200
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
}

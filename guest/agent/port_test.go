package agent

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lpmbisect/lpmbisect/wire"
)

func fakePorts(t *testing.T, names map[string]string) string {
	t.Helper()
	sys := t.TempDir()
	for dev, name := range names {
		dir := filepath.Join(sys, "class/virtio-ports", dev)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "name"), []byte(name+"\n"), 0o644)
	}
	return sys
}

func TestFindPort(t *testing.T) {
	sys := fakePorts(t, map[string]string{"vport0p0": "org.qemu.guest_agent.0", "vport1p1": wire.PortName})
	if dev, ok := findPort(sys, wire.PortName); !ok || dev != "vport1p1" {
		t.Errorf("findPort(sys, lpmbisect.results) = %q, %v; want vport1p1, true", dev, ok)
	}
	if dev, ok := findPort(sys, "lpmbisect"); ok {
		t.Errorf("findPort(sys, lpmbisect) = %q, true; want not found", dev)
	}
	if dev, ok := findPort(t.TempDir(), wire.PortName); ok {
		t.Errorf("findPort(empty sys) = %q, true; want not found", dev)
	}
}

func TestWaitPortTimesOut(t *testing.T) {
	start := time.Now()
	if _, ok := waitPort(t.TempDir(), wire.PortName, 100*time.Millisecond); ok {
		t.Error("waitPort(empty sys) found a port")
	}
	if d := time.Since(start); d < 100*time.Millisecond || d > 2*time.Second {
		t.Errorf("waitPort(empty sys, 100ms) took %v", d)
	}
}

func TestMakeRaw(t *testing.T) {
	tio := unix.Termios{
		Iflag: unix.ICRNL | unix.IXON,
		Oflag: unix.OPOST | unix.ONLCR,
		Lflag: unix.ECHO | unix.ICANON | unix.ISIG,
		Cflag: unix.CS7 | unix.PARENB | unix.B9600,
	}
	makeRaw(&tio)
	if tio.Oflag&unix.OPOST != 0 {
		t.Errorf("makeRaw: Oflag = %#x; want OPOST clear (no \\n to \\r\\n)", tio.Oflag)
	}
	if tio.Iflag&(unix.ICRNL|unix.IXON) != 0 || tio.Lflag&(unix.ECHO|unix.ICANON|unix.ISIG) != 0 {
		t.Errorf("makeRaw: Iflag = %#x, Lflag = %#x; want input processing, echo and signals off", tio.Iflag, tio.Lflag)
	}
	if tio.Cflag&unix.CSIZE != unix.CS8 || tio.Cflag&unix.PARENB != 0 || tio.Cflag&unix.CBAUD != unix.B115200 {
		t.Errorf("makeRaw: Cflag = %#x; want 8N1 at 115200", tio.Cflag)
	}
}

func TestMknodFromSys(t *testing.T) {
	dir := t.TempDir()
	dev := filepath.Join(dir, "dev")
	os.WriteFile(dev, []byte("garbage\n"), 0o644)
	if err := mknodFromSys(filepath.Join(dir, "node"), dev); err == nil {
		t.Error("mknodFromSys(malformed dev file) = nil; want an error")
	}
	if os.Getuid() != 0 {
		t.Skip("mknod needs root")
	}
	os.WriteFile(dev, []byte("1:3\n"), 0o644) // /dev/null's numbers
	node := filepath.Join(dir, "node")
	if err := mknodFromSys(node, dev); err != nil {
		t.Skipf("mknod not allowed here: %v", err)
	}
	var st unix.Stat_t
	if err := unix.Stat(node, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != unix.Mkdev(1, 3) {
		t.Errorf("mknodFromSys(1:3) made mode %#o rdev %#x, %v; want a char device 1:3", st.Mode, st.Rdev, err)
	}
}

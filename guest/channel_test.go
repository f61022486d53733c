package guest

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lpmbisect/lpmbisect/wire"
)

func TestChannelWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out")
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	c := &channel{fd: fd, kind: wire.ChannelVirtio, path: path}
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i)
	}
	if n, err := c.Write(data); n != len(data) || err != nil {
		t.Errorf("Write(1 MiB) = %d, %v; want %d, nil", n, err, len(data))
	}
	c.close()
	if got, _ := os.ReadFile(path); len(got) != len(data) || got[12345] != data[12345] {
		t.Errorf("file holds %d bytes; want the %d written", len(got), len(data))
	}
	if _, err := c.Write([]byte("x")); err == nil {
		t.Error("Write() on a closed channel = nil error; want an error")
	}
}

// hostEnd returns a virtio channel on one end of a socket pair and the
// host's end, as vmrunner connects QEMU's results port.
func hostEnd(t *testing.T, spin bool) (*channel, *os.File) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	c := &channel{fd: fds[0], kind: wire.ChannelVirtio, path: "port", spin: spin}
	host := os.NewFile(uintptr(fds[1]), "host")
	t.Cleanup(func() { c.close(); host.Close() })
	return c, host
}

func TestFlushWaitsForAck(t *testing.T) {
	for _, spin := range []bool{false, true} {
		c, host := hostEnd(t, spin)
		c.Write([]byte("lpmbisect-end: records=0 sha256=x\n"))
		acked := make(chan error, 1)
		go func() {
			in := bufio.NewReader(host)
			for {
				line, err := in.ReadString('\n')
				if err != nil {
					acked <- err
					return
				}
				if wire.IsFlush([]byte(line)) {
					time.Sleep(200 * time.Millisecond) // a host that reads slowly
					_, err := host.Write([]byte(wire.Go + wire.Ack))
					acked <- err
					return
				}
			}
		}()
		start := time.Now()
		if err := c.flush(10 * time.Second); err != nil {
			t.Errorf("flush(spin %v) = %v; want nil after the host's ack", spin, err)
		}
		if d := time.Since(start); d < 200*time.Millisecond {
			t.Errorf("flush(spin %v) returned after %v; want it to wait for the ack (200ms)", spin, d)
		}
		if err := <-acked; err != nil {
			t.Errorf("host: %v", err)
		}
	}
}

func TestFlushWithoutAck(t *testing.T) {
	for _, spin := range []bool{false, true} {
		c, _ := hostEnd(t, spin)
		start := time.Now()
		if err := c.flush(300 * time.Millisecond); !errors.Is(err, errNoAck) {
			t.Errorf("flush(spin %v, host silent) = %v; want errNoAck", spin, err)
		}
		if d := time.Since(start); d < 300*time.Millisecond || d > 3*time.Second {
			t.Errorf("flush(spin %v, 300ms, host silent) took %v", spin, d)
		}
		c, host := hostEnd(t, spin)
		host.Close()
		if err := c.flush(10 * time.Second); err == nil || errors.Is(err, errNoAck) {
			t.Errorf("flush(spin %v, host gone) = %v; want the closed channel's error", spin, err)
		}
	}
}

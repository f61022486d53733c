package agent

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
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

// hostEnd is port with the channel closed at cleanup.
func hostEnd(t *testing.T, spin bool) (*channel, *os.File) {
	t.Helper()
	c, host := port(t, spin)
	t.Cleanup(func() { c.close() })
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

// TestFlushSkipsOtherLines checks that flush writes exactly the flush
// marker and that only an ack line ends its wait: a go line, a longer line
// that starts like an ack, and an ack without its newline do not.
func TestFlushSkipsOtherLines(t *testing.T) {
	c, host := hostEnd(t, false)
	marker := make(chan string, 1)
	var acked atomic.Bool // set just before the ack's newline is sent
	go func() {
		line, _ := bufio.NewReader(host).ReadString('\n')
		marker <- line
		host.Write([]byte(wire.Go + "ack ack\n" + "acknowledged\n"))
		time.Sleep(100 * time.Millisecond) // time for flush to take them wrongly
		host.Write([]byte("ack"))
		time.Sleep(100 * time.Millisecond)
		acked.Store(true)
		host.Write([]byte("\n"))
	}()
	if err := c.flush(10 * time.Second); err != nil {
		t.Errorf("flush() = %v; want nil after the ack", err)
	}
	if !acked.Load() {
		t.Error("flush() returned before the ack's newline; want it to wait for the ack line")
	}
	if got := <-marker; got != wire.FlushLine || !wire.IsFlush([]byte(got)) {
		t.Errorf("flush wrote %q; want the flush marker %q", got, wire.FlushLine)
	}
}

// TestReadLineBounded checks that a line from the host is read up to its
// newline and no further, and kept to maxGoLine bytes however long it is.
func TestReadLineBounded(t *testing.T) {
	c, host := hostEnd(t, false)
	long := strings.Repeat("x", 100*maxGoLine)
	go host.Write([]byte(long + "\n" + wire.Go))
	if line, err := c.readLine(time.Time{}); err != nil || line != long[:maxGoLine] {
		t.Errorf("readLine(%d-byte line) = %d bytes, %v; want the first %d", len(long), len(line), err, maxGoLine)
	}
	if line, err := c.readLine(time.Time{}); err != nil || line+"\n" != wire.Go {
		t.Errorf("readLine() after the long line = %q, %v; want the go line", line, err)
	}
	host.Close()
	if line, err := c.readLine(time.Time{}); !errors.Is(err, io.EOF) {
		t.Errorf("readLine(host gone) = %q, %v; want io.EOF", line, err)
	}
}

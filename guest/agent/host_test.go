package agent

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lpmbisect/lpmbisect/wire"
)

// port returns a virtio channel on one end of a socket pair and the host's
// end, as vmrunner connects QEMU's results port. The caller closes the
// channel (a boot's flush does); the host's end is closed at cleanup.
func port(t *testing.T, spin bool) (*channel, *os.File) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	host := os.NewFile(uintptr(fds[1]), "host")
	t.Cleanup(func() { host.Close() })
	return &channel{fd: fds[0], kind: wire.ChannelVirtio, path: "port", spin: spin}, host
}

// fakeHost is the host's side of a results port, answering as vmrunner
// does, from wire's definitions alone: wire.Ack to the flush marker and,
// after onReady returns, wire.Go to each ready note. It keeps every byte it
// read until the guest closed its end.
type fakeHost struct {
	readies []int
	// flushes counts flush markers; afterFlush counts the bytes read after
	// the first (none, from a guest that powers off once acked).
	flushes, afterFlush int
	stream              bytes.Buffer
	err                 error
	done                chan struct{}
}

// serve starts a fake host on conn. onReady (nil: none) is called with the
// step of each ready note and the reader, before the host answers go.
func serve(conn *os.File, onReady func(step int, in *bufio.Reader)) *fakeHost {
	h := &fakeHost{done: make(chan struct{})}
	go func() {
		defer close(h.done)
		in := bufio.NewReader(conn)
		for {
			line, err := in.ReadBytes('\n')
			if h.flushes > 0 {
				h.afterFlush += len(line)
			}
			h.stream.Write(line)
			if err == io.EOF {
				return
			}
			if err != nil {
				h.err = err
				return
			}
			if wire.IsFlush(line) {
				h.flushes++
				_, h.err = conn.Write([]byte(wire.Ack))
				continue
			}
			if rest, ok := strings.CutPrefix(string(line), wire.KeyReady+": "); ok {
				step, _ := strconv.Atoi(strings.TrimSpace(rest))
				h.readies = append(h.readies, step)
				if onReady != nil {
					onReady(step, in)
				}
				_, h.err = conn.Write([]byte(wire.Go))
			}
		}
	}()
	return h
}

// wait waits until the guest has closed its end and returns what the host
// read. A guest that never closes it fails the test (after a bound far
// above the milliseconds the tests take, so that a hang fails fast).
func (h *fakeHost) wait(t *testing.T) []byte {
	t.Helper()
	select {
	case <-h.done:
	case <-time.After(20 * time.Second):
		t.Fatal("the guest did not close its end of the port (no flush phase?)")
	}
	if h.err != nil {
		t.Errorf("host: %v", h.err)
	}
	return h.stream.Bytes()
}

package agent

import (
	"errors"
	"fmt"
	"io"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lpmbisect/lpmbisect/wire"
)

// channel is the results channel. It is written with raw write(2) calls on a
// blocking descriptor that the Go runtime poller never sees: a second
// descriptor or a poller-registered one can lose a wakeup and hang writes to
// a virtio port (lmb/vimto#29, cilium/ebpf#1734). It has exactly one writer.
type channel struct {
	fd   int
	kind string
	path string
	tty  bool
	// spin makes waits with a bound poll without sleeping, for a guest
	// whose clock counts instructions (see awaitReadable).
	spin bool
}

// Write writes all of p, retrying short writes, EINTR and EAGAIN.
func (c *channel) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		n, err := unix.Write(c.fd, p[done:])
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			waitWritable(c.fd)
			continue
		case err != nil:
			return done, fmt.Errorf("write %s: %w", c.path, err)
		case n == 0:
			waitWritable(c.fd)
			continue
		}
		done += n
	}
	return done, nil
}

func waitWritable(fd int) {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	for {
		if _, err := unix.Poll(fds, 1000); !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// drain waits until what was written has left the guest: tcdrain for the
// UART; for a virtio port, until the host has read it (flush), since a
// write returns once the data is in the virtqueue, where QEMU may hold it
// while the host reads slowly, and loses it when the guest powers off.
func (c *channel) drain() error {
	switch {
	case c.tty:
		for {
			err := unix.IoctlSetInt(c.fd, unix.TCSBRK, 1) // tcdrain
			if !errors.Is(err, unix.EINTR) {
				return err
			}
		}
	case c.kind == wire.ChannelVirtio:
		return c.flush(ackTimeout)
	}
	return nil
}

// ackTimeout bounds the wait for the host's ack of the flush marker, on the
// guest's clock. Under KVM and TCG that is wall time. Under icount
// (-icount shift=0,sleep=off) the guest clock is instructions and jumps to
// the next timer whenever the guest idles, so a sleeping wait would end at
// once, long before a slow host has read the queue: the guest waits by
// polling without sleeping (channel.spin), with user-space work between
// polls (busyWork), and the bound is 2·10¹⁰ guest instructions, about 30 s
// of host CPU time (measured on Debian 6.12: a boot by hand, which nobody
// acks, took 39.8 s against 12.3 s for the boot the host acked; polls
// alone, without the user-space work, took more than 19 host seconds per
// second of guest clock). A host starved of CPU starves the guest's
// polling alike, so the bound stretches with the load that makes the host
// read slowly. The host acks as soon as it reads the marker; only a boot
// by hand waits the whole bound.
const ackTimeout = 20 * time.Second

// errNoAck is returned by flush when the host did not ack in time.
var errNoAck = errors.New("no ack from the host")

// flush writes the flush marker (wire.FlushLine) and waits, up to timeout
// on the guest's clock, for the host's ack (wire.Ack): the host sends it
// when it has read the marker, and so everything before it. Other lines
// from the host are skipped.
func (c *channel) flush(timeout time.Duration) error {
	if _, err := c.Write([]byte(wire.FlushLine)); err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		line, err := c.readLine(deadline)
		switch {
		case errors.Is(err, errNoAck):
			return fmt.Errorf("%s: %w within %v of guest clock (it may not have read everything; powering off anyway)", c.path, err, timeout)
		case err != nil:
			return fmt.Errorf("wait for the host's ack: %w", err)
		case line+"\n" == wire.Ack:
			return nil
		}
	}
}

func (c *channel) close() error { return unix.Close(c.fd) }

// maxGoLine bounds what the guest reads for one go: the host is trusted more
// than the guest, but a stuck or garbled channel must not grow memory.
const maxGoLine = 256

// readLine reads up to and including the next newline, one byte at a time
// (the channel has no buffer to read ahead into), keeping at most maxGoLine
// bytes. It returns io.EOF if the channel closed first, and errNoAck if
// deadline (zero: none) passed first.
func (c *channel) readLine(deadline time.Time) (string, error) {
	var line []byte
	b := make([]byte, 1)
	for {
		if !deadline.IsZero() {
			if err := c.awaitReadable(deadline); err != nil {
				return "", err
			}
		}
		n, err := unix.Read(c.readFD(), b)
		switch {
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
			if errors.Is(err, unix.EAGAIN) {
				waitReadable(c.readFD())
			}
			continue
		case err != nil:
			return "", fmt.Errorf("read %s: %w", c.path, err)
		case n == 0:
			return "", io.EOF
		}
		if b[0] == '\n' {
			return string(line), nil
		}
		if len(line) < maxGoLine {
			line = append(line, b[0])
		}
	}
}

// readFD is the descriptor to read from: standard input when the guest runs
// by hand and writes to standard output, else the channel itself.
func (c *channel) readFD() int {
	if c.kind == wire.ChannelStdout {
		return 0
	}
	return c.fd
}

// awaitReadable waits until the channel has data to read or is closed, or
// deadline passes (errNoAck). A spinning channel polls without sleeping,
// so that an icount guest's clock advances by the instructions it runs
// rather than jumping to the deadline.
func (c *channel) awaitReadable(deadline time.Time) error {
	fds := []unix.PollFd{{Fd: int32(c.readFD()), Events: unix.POLLIN}}
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return errNoAck
		}
		ms := 0
		if !c.spin {
			ms = int(min(left, time.Second).Milliseconds()) + 1
		}
		n, err := unix.Poll(fds, ms)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err == nil && n == 0:
			if c.spin {
				busyWork()
			}
			continue
		case err != nil:
			return fmt.Errorf("poll %s: %w", c.path, err)
		}
		return nil // readable, or closed: read tells which
	}
}

// busyWorkRounds is the user-space work of busyWork: about 10⁶ guest
// instructions, which TCG runs in a millisecond or two, while a poll
// syscall costs far more host time per guest instruction (under page-table
// isolation each syscall makes TCG flush its TLB twice).
const busyWorkRounds = 1 << 18

var busySink uint64

// busyWork keeps the CPU busy between two polls of a spinning wait, so
// that it spends its bound in user space.
func busyWork() {
	x := busySink
	for range busyWorkRounds {
		x = x*6364136223846793005 + 1442695040888963407
	}
	busySink = x
}

func waitReadable(fd int) {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		if _, err := unix.Poll(fds, 1000); !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

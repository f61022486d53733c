package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lpmbisect/lpmbisect/wire"
)

// serialFallback is the UART the host attaches as the second serial port.
const serialFallback = "/dev/ttyS1"

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
			return nil, fmt.Errorf("open %s: %w (and %v)", path, err, merr)
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

// gate paces a guest: before each step it writes a ready note with the
// step's number and waits for the host's go line.
type gate struct {
	w    interface{ Note(key, text string) error }
	ch   *channel
	step int
}

func (g *gate) wait() error {
	g.step++
	if err := g.w.Note(wire.KeyReady, strconv.Itoa(g.step)); err != nil {
		return err
	}
	if _, err := g.ch.readLine(time.Time{}); err != nil {
		return fmt.Errorf("wait for the host before step %d: %w", g.step, err)
	}
	return nil
}

// Package vmrunner boots a kernel and initramfs under QEMU and brings back
// what the guest sends on its results channel, with an outcome that says
// whether the boot delivered everything.
//
// QEMU's exit status proves nothing (with panic=-1 and -no-reboot it exits 0
// when the guest panics), so a boot is OK only when the stream on the results
// channel ends with a valid wire trailer. Two deadlines bound every boot: the
// boot deadline (until the first byte of results) and the progress deadline
// (the longest silence on the console and the results channels once the guest
// is up). Whatever happens, QEMU is killed before Boot returns, and the bytes
// received so far are kept, so completed samples survive a stalled guest.
//
// Results travel over a virtio-serial port named wire.PortName; a kernel
// without virtio console gets a second 8250 UART (ttyS1) instead, and the
// guest picks whichever works. The console (ttyS0) is captured to a log file
// and scanned for panics.
package vmrunner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lpmbisect/lpmbisect/wire"
)

// Outcome classifies a boot.
type Outcome string

// Outcomes. Only OK boots count as samples.
const (
	OK          Outcome = "ok"           // complete stream with a valid trailer
	Panic       Outcome = "panic"        // the console shows a kernel panic
	BootFailed  Outcome = "boot-failed"  // the kernel never started: a truncated or corrupt image
	BootTimeout Outcome = "boot-timeout" // no results before the boot deadline
	Stalled     Outcome = "stalled"      // silence longer than the progress deadline
	Truncated   Outcome = "truncated"    // the guest stopped before its trailer
	Corrupt     Outcome = "corrupt"      // over the size limits, or not the wire format
	NoProgress  Outcome = "no-progress"  // no kernel banner before the start deadline (a KVM that does not run guests)
	QEMUError   Outcome = "qemu-error"   // QEMU refused to start the guest
	Canceled    Outcome = "canceled"     // the context was canceled (SIGINT, SIGTERM)
)

// Limits bound what is read from the guest, which is untrusted.
type Limits struct {
	MaxLine  int // longest line on the results channel, in bytes
	MaxBytes int // most bytes on the results channel
}

// DefaultLimits fit thousands of results with room to spare.
var DefaultLimits = Limits{MaxLine: 64 << 10, MaxBytes: 8 << 20}

// Config describes one boot.
type Config struct {
	QEMU       string   // QEMU binary; default qemu-system-x86_64
	Kernel     string   // bzImage
	Initramfs  string   // cpio archive
	KernelArgs []string // extra kernel parameters (the guest's run plan)
	Accel      Accel    // KVM, TCG or Icount; use Selector for Auto
	MemoryMB   int      // default 1024
	CPUs       int      // default 1
	RunDir     string   // per-boot directory for console.log and results.out

	BootDeadline     time.Duration // default 90 s
	ProgressDeadline time.Duration // default 60 s
	// StartDeadline ends the boot if the kernel has not started by then
	// (no "Linux version" banner, no guest output): a truncated or corrupt
	// image hangs in the boot loader or decompressor without a word. Under
	// KVM the outcome is NoProgress (Selector sets a short deadline to
	// detect a KVM that does not run guests), otherwise BootTimeout.
	// Default: 30 s, or the boot deadline if shorter.
	StartDeadline time.Duration

	Limits Limits    // zero means DefaultLimits
	Log    io.Writer // when set, the QEMU command line is printed here

	// Pace, when set, paces the guest (lpmbisect.paced=1): before each step
	// of its run plan the guest writes a ready note and waits. Boot calls
	// Pace from the goroutine that reads the results, with the step's number
	// and a function that lets the guest take the step; Pace must not block.
	// While a guest waits, its progress deadline does not run. A guest that
	// writes ready notes while already waiting is not called again.
	Pace func(step int, resume func())
	// PinCPUs, when set, restricts QEMU (all its threads) to these host
	// CPUs from its start.
	PinCPUs []int

	// onKernelStart is called once when the console shows that the kernel
	// runs (Selector uses it to decide Auto early).
	onKernelStart func()
}

// Result is what a boot produced.
type Result struct {
	Outcome    Outcome
	Detail     string       // why, for outcomes other than OK (panic line, problem)
	Stream     *wire.Stream // what arrived on the results channel, even if incomplete
	Channel    string       // "virtio" or "serial": where the results came from
	Accel      Accel
	Duration   time.Duration
	ConsoleLog string   // path of the console log
	Command    []string // a QEMU command line that reproduces the boot by hand
}

// ErrQEMUMissing is returned when the QEMU binary cannot be found.
var ErrQEMUMissing = errors.New("qemu-system-x86_64 not found (install it: apt-get install qemu-system-x86)")

const (
	defaultBootDeadline     = 90 * time.Second
	defaultProgressDeadline = 60 * time.Second
	defaultStartDeadline    = 30 * time.Second
	maxCommandLine          = 2047 // COMMAND_LINE_SIZE on x86, less the NUL
	pollInterval            = 50 * time.Millisecond
)

// Files QEMU writes into the run directory when a boot is re-run by hand.
const (
	consoleFile  = "console.log"
	resultsFile  = "results.out"
	fallbackFile = "serial1.out"
)

func (c *Config) setDefaults() {
	if c.QEMU == "" {
		c.QEMU = "qemu-system-x86_64"
	}
	if c.MemoryMB == 0 {
		c.MemoryMB = 1024
	}
	if c.CPUs == 0 {
		c.CPUs = 1
	}
	if c.BootDeadline == 0 {
		c.BootDeadline = defaultBootDeadline
	}
	if c.StartDeadline == 0 {
		c.StartDeadline = min(defaultStartDeadline, c.BootDeadline)
	}
	if c.ProgressDeadline == 0 {
		c.ProgressDeadline = defaultProgressDeadline
	}
	if c.Limits == (Limits{}) {
		c.Limits = DefaultLimits
	}
	if c.Accel == "" {
		c.Accel = TCG
	}
}

// KernelCommandLine is the kernel command line for a boot: console on
// ttyS0 (early, so even the decompressor's output shows progress), a panic
// ends the VM at once, oopses are panics, then the run plan.
func (c *Config) KernelCommandLine() string {
	args := []string{"console=ttyS0,115200", "earlyprintk=serial,ttyS0,115200", "panic=-1", "oops=panic"}
	return strings.Join(append(args, c.KernelArgs...), " ")
}

// pacedArg is the kernel parameter that makes the guest wait for the host
// before each step.
const pacedArg = "lpmbisect.paced=1"

// qemuArgs builds QEMU's arguments; chardev gives the -chardev value (the
// backend) with the given id for each of the three guest-to-host channels
// (console, results, fallback).
func (c *Config) qemuArgs(chardev func(id, file string) string, paced bool) []string {
	args := []string{
		"-nodefaults", "-no-user-config", "-no-reboot", "-display", "none",
	}
	args = append(args, c.Accel.args()...)
	cmdline := c.KernelCommandLine()
	if paced {
		cmdline += " " + pacedArg
	}
	args = append(args,
		"-m", strconv.Itoa(c.MemoryMB), "-smp", strconv.Itoa(c.CPUs),
		"-kernel", c.Kernel, "-initrd", c.Initramfs,
		"-append", cmdline,
		"-chardev", chardev("console", consoleFile), "-serial", "chardev:console",
		"-chardev", chardev("fallback", fallbackFile), "-serial", "chardev:fallback",
		"-device", "virtio-serial-pci",
		"-chardev", chardev("results", resultsFile),
		"-device", "virtserialport,chardev=results,name="+wire.PortName,
	)
	return args
}

func fileChardev(path func(file string) string) func(id, file string) string {
	return func(id, file string) string { return "file,id=" + id + ",path=" + path(file) }
}

// CommandLine returns a shell command that reproduces the boot by hand,
// writing the console and results into the run directory. A paced boot is
// reproduced unpaced: by hand nobody answers the guest.
func (c Config) CommandLine() []string {
	c.setDefaults()
	return append([]string{c.QEMU}, c.qemuArgs(fileChardev(func(f string) string { return filepath.Join(c.RunDir, f) }), false)...)
}

// Boot runs one boot to its end and returns what happened. The error is
// non-nil only when QEMU could not be started at all; everything the guest
// does (panic, hang, garbage) is an Outcome.
func Boot(ctx context.Context, cfg Config) (*Result, error) {
	cfg.setDefaults()
	if _, err := exec.LookPath(cfg.QEMU); err != nil {
		return nil, ErrQEMUMissing
	}
	if n := len(cfg.KernelCommandLine()); n > maxCommandLine {
		return nil, fmt.Errorf("kernel command line is %d bytes, more than x86's %d (shorten --append or --bench)", n, maxCommandLine)
	}
	if err := os.MkdirAll(cfg.RunDir, 0o755); err != nil {
		return nil, fmt.Errorf("create run directory: %w", err)
	}
	res := &Result{Accel: cfg.Accel, ConsoleLog: filepath.Join(cfg.RunDir, consoleFile), Command: cfg.CommandLine()}
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "lpmbisect: %s\n", shellQuote(res.Command))
	}

	logFile, err := os.Create(res.ConsoleLog)
	if err != nil {
		return nil, fmt.Errorf("create console log: %w", err)
	}
	defer logFile.Close()
	rawFile, err := os.Create(filepath.Join(cfg.RunDir, resultsFile))
	if err != nil {
		return nil, fmt.Errorf("create results capture: %w", err)
	}
	defer rawFile.Close()

	// Three channels on fds 3, 4, 5: pipes QEMU writes to (opened by path
	// in /proc), or for a paced guest, whose results channels carry the
	// host's go lines back, connected sockets for results and fallback.
	names := []string{consoleFile, resultsFile, fallbackFile}
	paced := cfg.Pace != nil
	var readers, writers []*os.File
	defer func() {
		for _, f := range append(readers, writers...) {
			f.Close()
		}
	}()
	for _, n := range names {
		r, w, err := channelPair(paced && n != consoleFile)
		if err != nil {
			return nil, fmt.Errorf("create channel %s: %w", n, err)
		}
		readers, writers = append(readers, r), append(writers, w)
	}
	args := cfg.qemuArgs(func(id, f string) string {
		fd := strconv.Itoa(3 + slices.Index(names, f))
		if paced && f != consoleFile {
			return "socket,id=" + id + ",fd=" + fd
		}
		return "file,id=" + id + ",path=/proc/self/fd/" + fd
	}, paced)

	var stderr boundedBuffer
	stderr.max = 16 << 10
	cmd := exec.Command(cfg.QEMU, args...)
	cmd.ExtraFiles = writers
	cmd.Stdout = &stderr
	cmd.Stderr = &stderr
	// Own process group, so a terminal's Ctrl-C reaches lpmbisect, which
	// then ends QEMU itself; Pdeathsig ends QEMU even if lpmbisect is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}

	start := time.Now()
	if err := startPinned(cmd, cfg.PinCPUs); err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.QEMU, err)
	}
	for _, w := range writers {
		w.Close()
	}
	writers = nil

	mon := &monitor{limits: cfg.Limits, start: start, pace: cfg.Pace, onKernelStart: cfg.onKernelStart}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); mon.readConsole(readers[0], logFile) }()
	go func() { defer wg.Done(); mon.readResults(readers[1], readers[1], &mon.virtio, rawFile) }()
	go func() { defer wg.Done(); mon.readResults(readers[2], readers[2], &mon.serial, rawFile) }()

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var killed Outcome
	var killDetail string
	var waitErr error
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
loop:
	for {
		select {
		case waitErr = <-exited:
			break loop
		case <-ctx.Done():
			killed, killDetail = Canceled, "interrupted: "+context.Cause(ctx).Error()
		case <-ticker.C:
			killed, killDetail = mon.check(cfg)
		}
		if killed != "" {
			cmd.Process.Kill()
			waitErr = <-exited
			break
		}
	}
	wg.Wait()
	res.Duration = time.Since(start)

	data, channel := mon.virtio.Bytes(), "virtio"
	if len(data) == 0 && mon.serial.Len() > 0 {
		data, channel = mon.serial.Bytes(), "serial"
	}
	res.Stream, res.Channel = wire.Decode(data), channel
	res.Outcome, res.Detail = classify(res.Stream, killed, killDetail, mon, waitErr, stderr.String())
	return res, nil
}

func classify(s *wire.Stream, killed Outcome, killDetail string, mon *monitor, waitErr error, stderr string) (Outcome, string) {
	panicLine := mon.panicLine()
	switch {
	case killed == Corrupt:
		return Corrupt, killDetail
	case s.Complete:
		return OK, ""
	case killed != "":
		if panicLine != "" && killed != Canceled {
			return Panic, panicLine
		}
		return killed, killDetail
	case panicLine != "":
		return Panic, panicLine
	case waitErr != nil:
		msg := strings.TrimSpace(lastLines(stderr, 3))
		if msg == "" {
			msg = waitErr.Error()
		}
		return QEMUError, "QEMU failed: " + msg
	case !mon.kernelStarted.Load() && len(s.Results) == 0 && s.SyntaxErrors == 0:
		detail := "the kernel never started (no kernel banner on the console: a truncated or corrupt image?)"
		if tail := mon.consoleTail(); tail != "" {
			detail += "; console ends: " + tail
		}
		return BootFailed, detail
	case s.SyntaxErrors > 0 && len(s.Results) == 0:
		return Corrupt, fmt.Sprintf("%d lines on the results channel are not in the wire format", s.SyntaxErrors)
	}
	detail := s.Problem
	if tail := mon.consoleTail(); tail != "" {
		detail += "; console ends: " + tail
	}
	return Truncated, detail
}

// monitor watches the channels of one boot.
type monitor struct {
	limits Limits
	start  time.Time

	lastActivity  atomic.Int64 // unix nanos of the last byte on any channel
	kernelStarted atomic.Bool  // the console showed the kernel banner
	firstResultAt atomic.Int64
	overLimit     atomic.Value // string: why the results channel is corrupt

	// pace and waiting: see Config.Pace. waiting is set from a ready note
	// until the guest is resumed.
	pace    func(step int, resume func())
	waiting atomic.Bool

	onKernelStart func()

	mu        sync.Mutex
	panicText string
	tail      []string // last console lines
	virtio    boundedBuffer
	serial    boundedBuffer
}

// Markers of a kernel that died, in the console.
var panicMarkers = []string{"Kernel panic - not syncing", "BUG: kernel NULL pointer", "general protection fault"}

func (m *monitor) touch() { m.lastActivity.Store(time.Now().UnixNano()) }

// maxConsoleLog bounds the console log: a guest that floods its console
// must not fill the disk. Panics are still recognised past it.
const maxConsoleLog = 16 << 20

func (m *monitor) readConsole(r io.Reader, log io.Writer) {
	buf := make([]byte, 32<<10)
	written := 0
	var line []byte
	for {
		n, err := r.Read(buf)
		if n > 0 {
			m.touch()
			if written < maxConsoleLog {
				chunk := buf[:min(n, maxConsoleLog-written)]
				log.Write(chunk)
				written += len(chunk)
				if written == maxConsoleLog {
					log.Write([]byte("\n[lpmbisect: console log truncated here]\n"))
				}
			}
			for _, b := range buf[:n] {
				if b == '\n' {
					m.consoleLine(string(bytes.TrimRight(line, "\r")))
					line = line[:0]
				} else if len(line) < 4096 {
					line = append(line, b)
				}
			}
		}
		if err != nil {
			if len(line) > 0 {
				m.consoleLine(string(line))
			}
			return
		}
	}
}

// startMarkers show that the kernel proper runs: its first line, and in
// case a quiet or loglevel= parameter hid it, the start of init and the
// guest's own console lines.
var startMarkers = []string{"Linux version ", "Run /init", "lpmbisect-guest"}

func (m *monitor) consoleLine(line string) {
	if !m.kernelStarted.Load() {
		for _, marker := range startMarkers {
			if strings.Contains(line, marker) && m.kernelStarted.CompareAndSwap(false, true) && m.onKernelStart != nil {
				m.onKernelStart()
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.panicText == "" {
		for _, marker := range panicMarkers {
			if i := strings.Index(line, marker); i >= 0 {
				m.panicText = strings.TrimSpace(line[i:])
				break
			}
		}
	}
	m.tail = append(m.tail, line)
	if len(m.tail) > 5 {
		m.tail = m.tail[1:]
	}
}

func (m *monitor) panicLine() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.panicText
}

func (m *monitor) consoleTail() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.tail) - 1; i >= 0; i-- {
		if t := strings.TrimSpace(m.tail[i]); t != "" {
			return strconv.Quote(t)
		}
	}
	return ""
}

// readyPrefix starts the note of a paced guest that waits for the host.
var readyPrefix = []byte(wire.KeyReady + ": ")

// readResults copies a results channel into dst, enforcing the limits. Once
// over a limit it keeps draining (so QEMU never blocks) but stores nothing.
// For a paced guest it recognises ready notes and answers them on back.
func (m *monitor) readResults(r io.Reader, back io.Writer, dst *boundedBuffer, raw io.Writer) {
	buf := make([]byte, 32<<10)
	lineLen := 0
	var head []byte // the start of the current line, for ready notes
	over := false
	for {
		n, err := r.Read(buf)
		if n > 0 {
			m.touch()
			m.firstResultAt.CompareAndSwap(0, time.Now().UnixNano())
			if !over {
				chunk := buf[:n]
				for _, b := range chunk {
					if m.pace != nil {
						if b == '\n' {
							m.ready(head, back)
							head = head[:0]
						} else if len(head) < 64 {
							head = append(head, b)
						}
					}
					if b == '\n' {
						lineLen = 0
					} else if lineLen++; lineLen > m.limits.MaxLine {
						over = m.markCorrupt(fmt.Sprintf("a line on the results channel is longer than %d bytes", m.limits.MaxLine))
						break
					}
				}
				if !over && dst.Len()+n > m.limits.MaxBytes {
					over = m.markCorrupt(fmt.Sprintf("the guest sent more than %d bytes of results", m.limits.MaxBytes))
				}
				if !over {
					m.mu.Lock()
					dst.Write(chunk)
					m.mu.Unlock()
					raw.Write(chunk)
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// ready handles one line of a paced guest: a ready note makes the guest
// wait until Config.Pace resumes it, by writing wire.Go on back.
func (m *monitor) ready(line []byte, back io.Writer) {
	rest, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), readyPrefix)
	if !ok {
		return
	}
	step, err := strconv.Atoi(string(rest))
	if err != nil || step < 1 || !m.waiting.CompareAndSwap(false, true) {
		return
	}
	var once sync.Once
	m.pace(step, func() {
		once.Do(func() {
			m.touch()
			m.waiting.Store(false)
			back.Write([]byte(wire.Go)) // an error means QEMU is gone; the boot ends on its own
		})
	})
}

func (m *monitor) markCorrupt(why string) bool {
	m.overLimit.CompareAndSwap(nil, why)
	return true
}

// check applies the deadlines and limits; it returns a non-empty outcome
// when the boot must be ended.
func (m *monitor) check(cfg Config) (Outcome, string) {
	now := time.Now()
	if why, ok := m.overLimit.Load().(string); ok {
		return Corrupt, why
	}
	elapsed := now.Sub(m.start)
	first := m.firstResultAt.Load()
	if cfg.StartDeadline > 0 && !m.kernelStarted.Load() && first == 0 && elapsed > cfg.StartDeadline {
		if cfg.Accel == KVM {
			return NoProgress, fmt.Sprintf("the kernel did not start within %s under KVM", cfg.StartDeadline)
		}
		return BootFailed, fmt.Sprintf("the kernel did not start within %s (no kernel banner on the console: a truncated or corrupt image, or not an x86-64 kernel?)", cfg.StartDeadline)
	}
	if first == 0 {
		if elapsed > cfg.BootDeadline {
			return BootTimeout, fmt.Sprintf("no results within the boot deadline (%s)", cfg.BootDeadline)
		}
		return "", ""
	}
	if m.waiting.Load() {
		return "", "" // waiting for the host, not stalled
	}
	if silent := now.Sub(time.Unix(0, m.lastActivity.Load())); silent > cfg.ProgressDeadline {
		return Stalled, fmt.Sprintf("the guest sent nothing for %s (progress deadline)", cfg.ProgressDeadline.Round(time.Second))
	}
	return "", ""
}

// boundedBuffer keeps at most max bytes (0: unbounded) and drops the rest.
type boundedBuffer struct {
	bytes.Buffer
	max int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if b.max > 0 && b.Len()+len(p) > b.max {
		b.Buffer.Write(p[:max(0, b.max-b.Len())])
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "; ")
}

func shellQuote(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
		}) < 0 {
			b.WriteString(a)
			continue
		}
		b.WriteString("'" + strings.ReplaceAll(a, "'", `'\''`) + "'")
	}
	return b.String()
}

// channelPair returns the host's end (r) and QEMU's end (w) of a channel: a
// pipe, or a connected socket pair when the host writes back.
func channelPair(duplex bool) (r, w *os.File, err error) {
	if !duplex {
		return os.Pipe()
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[0]), "channel"), os.NewFile(uintptr(fds[1]), "channel (QEMU)"), nil
}

// startPinned starts cmd restricted to cpus (all of them when empty). The
// affinity is set on a locked thread that then forks, so QEMU and every
// thread it creates inherit it from the start; the thread gets its own
// affinity back before it is unlocked. It must live on: Pdeathsig kills
// QEMU when the thread that started it exits.
func startPinned(cmd *exec.Cmd, cpus []int) error {
	if len(cpus) == 0 {
		return cmd.Start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return fmt.Errorf("read CPU affinity: %w", err)
	}
	for _, c := range cpus {
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pin to host CPUs %v: %w", cpus, err)
	}
	err := cmd.Start()
	if rerr := unix.SchedSetaffinity(0, &old); rerr != nil {
		// A thread that cannot get its affinity back must not serve
		// other goroutines: stay locked, so it ends with this one. QEMU
		// is then killed by Pdeathsig, and the boot fails visibly.
		runtime.LockOSThread()
		return errors.Join(err, fmt.Errorf("restore CPU affinity: %w", rerr))
	}
	return err
}

// PairCPU returns the host CPU on which to pin both VMs of a pair, so that
// whatever state that CPU is in hits both alike: the last CPU this process
// may run on (the first is where the system's own work tends to land).
func PairCPU() (int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return 0, fmt.Errorf("read CPU affinity: %w", err)
	}
	cpu := -1
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			cpu = c
		}
	}
	if cpu < 0 {
		return 0, errors.New("read CPU affinity: no CPU allowed")
	}
	return cpu, nil
}

package vmrunner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lpmbisect/lpmbisect/internal/logtail"
	"github.com/lpmbisect/lpmbisect/internal/shellquote"
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
	KVMFailed   Outcome = "kvm-failed"   // QEMU reported that KVM cannot run the guest (an emulation failure, an internal error)
	QEMUError   Outcome = "qemu-error"   // QEMU refused to start the guest
	Canceled    Outcome = "canceled"     // the context was canceled (SIGINT, SIGTERM)
)

// Known reports whether o is one of the outcomes above (an outcome read
// back from storage, such as a fleet worker's row, may not be).
func (o Outcome) Known() bool {
	switch o {
	case OK, Panic, BootFailed, BootTimeout, Stalled, Truncated, Corrupt, NoProgress, KVMFailed, QEMUError, Canceled:
		return true
	}
	return false
}

// Limits bound what is read from the guest, which is untrusted.
type Limits struct {
	MaxLine  int // longest line on the results channel, in bytes
	MaxBytes int // most bytes on the results channel
}

// DefaultLimits fit thousands of results with room to spare.
var DefaultLimits = Limits{MaxLine: 64 << 10, MaxBytes: 8 << 20}

// DefaultQEMU is the QEMU binary of a Config without one, looked up in
// PATH.
const DefaultQEMU = "qemu-system-x86_64"

// Config describes one boot.
type Config struct {
	QEMU       string     // QEMU binary; default DefaultQEMU
	Kernel     string     // bzImage
	Initramfs  string     // cpio archive
	KernelArgs []string   // extra kernel parameters (the guest's run plan)
	Accel      wire.Accel // KVM, TCG or Icount (ChooseAccel decides Auto before a run)
	// CPU is the CPU profile TCG boots emulate (the zero value: the
	// default model); under KVM only the default is allowed.
	CPU      CPUProfile
	MemoryMB int    // default 1024
	CPUs     int    // default 1
	RunDir   string // per-boot directory for console.log and results.out

	// BootDeadline and ProgressDeadline, and StartDeadline, are wall
	// time, except under Icount, where they are QEMU's CPU time (with a
	// wall-clock limit of 10 times as long for a guest that hangs
	// without using the CPU): a loaded host slows an icount boot down
	// without changing what it measures, and must not time it out.
	BootDeadline     time.Duration // default 90 s
	ProgressDeadline time.Duration // default 60 s
	// StartDeadline ends the boot if the kernel has not started by then
	// (no "Linux version" banner, no guest output): a truncated or corrupt
	// image hangs in the boot loader or decompressor without a word. Under
	// KVM the outcome is NoProgress (a KVM that stopped running guests),
	// otherwise BootTimeout.
	// Default: 30 s, or the boot deadline if shorter.
	StartDeadline time.Duration

	Limits Limits // zero means DefaultLimits
	// Log, when set, receives the QEMU command line of each boot (the one
	// Result.Command holds); nil means silent.
	Log *log.Logger

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
	// MemoryPlugin, when set, is the memory plugin to load (icount only;
	// DefaultMemoryPlugin): Result.Memory holds what it counted.
	MemoryPlugin string
	// NoCycleModel leaves the plugin's cycle model out: its branch model
	// and the warming of its caches by each benchmark's warm-up (the
	// mispredictions and est-cycles/op rows; docs/cycles.md). The plugin
	// then counts as it did before the cycle model.
	NoCycleModel bool
}

// Result is what a boot produced.
type Result struct {
	Outcome    Outcome
	Detail     string       // why, for outcomes other than OK (panic line, problem)
	Stream     *wire.Stream // what arrived on the results channel, even if incomplete
	Channel    string       // "virtio" or "serial": where the results came from
	Accel      wire.Accel
	Duration   time.Duration
	ConsoleLog string   // path of the console log
	Command    []string // a QEMU command line that reproduces the boot by hand

	// CPUModel is the QEMU CPU model the guest ran on (Config.CPU's
	// QEMUModel); instruction counts compare only between boots on one
	// model.
	CPUModel string
	// QEMUVersion is the binary's version as QEMUVersion reports it
	// ("7.2.22"), or "" when the binary did not tell.
	QEMUVersion string
	// Phases are the ends of the boot's phases that the guest marked on
	// its console (icount only; wire.PhaseMark), in order.
	Phases []wire.PhaseMark
	// QEMUWarnings are the warnings QEMU printed (its stderr's lines that
	// say "warning:", the last maxQEMUWarnings): a CPU model that asks
	// for a feature TCG does not emulate is one ("TCG doesn't support
	// requested feature"), and the guest then runs on less than the model
	// says.
	QEMUWarnings []string
	// Memory is what the memory plugin counted (Config.MemoryPlugin);
	// MemoryProblem says why there is nothing when it was loaded.
	Memory        *MemCounts
	MemoryProblem string
}

// maxQEMUWarnings bounds Result.QEMUWarnings.
const maxQEMUWarnings = 8

// ErrQEMUMissing is returned when the QEMU binary cannot be found.
var ErrQEMUMissing = errors.New("qemu-system-x86_64 not found (install it: apt-get install qemu-system-x86)")

const (
	defaultBootDeadline     = 90 * time.Second
	defaultProgressDeadline = 60 * time.Second
	defaultStartDeadline    = 30 * time.Second
	pollInterval            = 50 * time.Millisecond
)

func (c *Config) setDefaults() {
	if c.QEMU == "" {
		c.QEMU = DefaultQEMU
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
		c.Accel = wire.AccelTCG
	}
}

// Boot runs one boot to its end and returns what happened. The error is
// non-nil when QEMU could not be started at all, or, with the Result, when
// KVM failed the boot (a *KVMUnusableError: QEMU reported that KVM cannot
// run the guest, which ends the boot at once, or the kernel never started
// under KVM): that is the host's failure, not the kernel's, and no boot of
// the run can be trusted to KVM any more. Everything the guest does
// (panic, hang, garbage) is an Outcome.
func Boot(ctx context.Context, cfg Config) (*Result, error) {
	cfg.setDefaults()
	if err := cfg.checkBoot(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.RunDir, 0o755); err != nil {
		return nil, fmt.Errorf("create run directory: %w", err)
	}
	res := &Result{Accel: cfg.Accel, CPUModel: cfg.CPU.QEMUModel(cfg.Accel), ConsoleLog: filepath.Join(cfg.RunDir, consoleFile), Command: cfg.CommandLine()}
	// A binary that cannot tell its version may still boot (a wrapper
	// script): the result then says "" rather than failing the boot.
	res.QEMUVersion, _ = QEMUVersion(cfg.QEMU)
	if cfg.Log != nil {
		cfg.Log.Print(shellquote.Join(res.Command))
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
	ch, err := openChannels(cfg.Pace != nil)
	if err != nil {
		return nil, err
	}
	defer ch.close()

	// QEMU's output is read as it comes: under KVM a report that KVM
	// cannot run the guest ends the boot at once.
	stderr := &qemuOutput{buf: boundedBuffer{max: 16 << 10}, watchKVM: cfg.Accel == wire.AccelKVM}
	cmd := cfg.qemuCommand(ch, stderr)
	start := time.Now()
	if err := startPinned(cmd, cfg.PinCPUs); err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.QEMU, err)
	}
	ch.closeWriters()

	mon := newMonitor(cfg, start, stderr, cmd.Process.Pid)
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); mon.readConsole(ch.readers[0], logFile) }()
	go func() { defer wg.Done(); mon.readResults(ch.readers[1], ch.back(1), &mon.virtio, rawFile) }()
	go func() { defer wg.Done(); mon.readResults(ch.readers[2], ch.back(2), &mon.serial, rawFile) }()
	killed, killDetail, waitErr := watch(ctx, cfg, cmd, mon)
	wg.Wait()
	res.Duration = time.Since(start)
	return cfg.finish(res, mon, killed, killDetail, waitErr, stderr.String())
}

// checkBoot refuses, before anything is created, a boot that cannot run:
// an undecided accelerator, no QEMU, a kernel command line too long, a
// memory plugin that cannot be loaded, a CPU profile under KVM.
func (c *Config) checkBoot() error {
	if !c.Accel.Decided() {
		return fmt.Errorf("boot: accelerator %q: %w (ChooseAccel decides auto before a run)", c.Accel, wire.ErrNotBootAccel)
	}
	if _, err := exec.LookPath(c.QEMU); err != nil {
		return ErrQEMUMissing
	}
	if n := len(c.KernelCommandLine()); n > maxCommandLine {
		return &CommandLineTooLongError{Len: n, Max: maxCommandLine}
	}
	if err := c.checkMemoryPlugin(); err != nil {
		return err
	}
	if c.Accel == wire.AccelKVM && !c.CPU.IsDefault() {
		return ErrCPUProfileUnderKVM
	}
	return nil
}

// channels are a boot's three channels on QEMU's fds 3, 4, 5, in the
// order of names: pipes QEMU writes to (opened by path in /proc), or
// connected sockets for the channels that carry the host's lines back:
// the virtio results port always (the host's ack of the guest's flush
// marker, and a paced guest's go lines), the fallback serial port for a
// paced guest.
type channels struct {
	names            []string
	paced            bool
	readers, writers []*os.File
}

func openChannels(paced bool) (*channels, error) {
	ch := &channels{names: []string{consoleFile, resultsFile, fallbackFile}, paced: paced}
	for _, n := range ch.names {
		r, w, err := channelPair(ch.duplex(n))
		if err != nil {
			ch.close()
			return nil, fmt.Errorf("create channel %s: %w", n, err)
		}
		ch.readers, ch.writers = append(ch.readers, r), append(ch.writers, w)
	}
	return ch, nil
}

// duplex says whether the channel of file f carries the host's lines back.
func (ch *channels) duplex(f string) bool {
	return f == resultsFile || ch.paced && f == fallbackFile
}

// chardev is QEMU's character device of the channel of file f, with id.
func (ch *channels) chardev(id, f string) string {
	fd := strconv.Itoa(3 + slices.Index(ch.names, f))
	if ch.duplex(f) {
		return "socket,id=" + id + ",fd=" + fd
	}
	return "file,id=" + id + ",path=/proc/self/fd/" + fd
}

// back is where the host answers on channel i: nil for a pipe.
func (ch *channels) back(i int) io.Writer {
	if ch.duplex(ch.names[i]) {
		return ch.readers[i]
	}
	return nil
}

// closeWriters closes the host's copies of QEMU's ends, once QEMU holds
// them.
func (ch *channels) closeWriters() {
	for _, w := range ch.writers {
		w.Close()
	}
	ch.writers = nil
}

func (ch *channels) close() {
	ch.closeWriters()
	for _, r := range ch.readers {
		r.Close()
	}
}

// qemuCommand is the QEMU process of the boot, its channels on fds 3–5 and
// its output to out.
func (c *Config) qemuCommand(ch *channels, out *qemuOutput) *exec.Cmd {
	cmd := exec.Command(c.QEMU, c.qemuArgs(ch.chardev, ch.paced)...)
	cmd.ExtraFiles = ch.writers
	cmd.Stdout = out
	cmd.Stderr = out
	// Own process group, so a terminal's Ctrl-C reaches lpmbisect, which
	// then ends QEMU itself; Pdeathsig ends QEMU even if lpmbisect is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// newMonitor watches the boot of QEMU process pid, started at start.
func newMonitor(cfg Config, start time.Time, qemu *qemuOutput, pid int) *monitor {
	mon := &monitor{limits: cfg.Limits, start: start, pace: cfg.Pace, qemu: qemu}
	if cfg.Accel == wire.AccelIcount {
		// The guest's progress is its instructions, which QEMU's CPU
		// time follows whatever else the host runs: a busy host slows
		// an icount boot down without changing a count, and must not
		// time it out.
		mon.clock = &clock{cpu: func() (time.Duration, error) { return processCPU(pid) }}
	}
	return mon
}

// watch waits for QEMU to exit, and kills it when ctx ends or a deadline
// or limit of the monitor is passed, saying why (killed "" when QEMU
// exited by itself).
func watch(ctx context.Context, cfg Config, cmd *exec.Cmd, mon *monitor) (killed Outcome, killDetail string, waitErr error) {
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		select {
		case waitErr = <-exited:
			return "", "", waitErr
		case <-ctx.Done():
			killed, killDetail = Canceled, "interrupted: "+context.Cause(ctx).Error()
		case <-ticker.C:
			killed, killDetail = mon.check(cfg)
		}
		if killed != "" {
			cmd.Process.Kill()
			return killed, killDetail, <-exited
		}
	}
}

// finish decodes what the boot sent, on the virtio port or else the
// serial fallback, classifies its end, and reads the memory plugin's
// counts. A boot that KVM failed is also an error (KVMUnusableError).
func (c *Config) finish(res *Result, mon *monitor, killed Outcome, killDetail string, waitErr error, stderr string) (*Result, error) {
	data, channel := mon.virtio.Bytes(), wire.ChannelVirtio
	if len(data) == 0 && mon.serial.Len() > 0 {
		data, channel = mon.serial.Bytes(), wire.ChannelSerial
	}
	res.Stream, res.Channel = DecodeStream(data, *c), channel
	res.Phases = mon.phases // the console reader is done
	res.Outcome, res.Detail = classify(res.Stream, killed, killDetail, mon, waitErr, stderr)
	res.QEMUWarnings = logtail.Lines(stderr, maxQEMUWarnings, func(l string) bool { return !strings.Contains(l, "warning:") })
	if c.MemoryPlugin != "" {
		m, err := readMemCounts(filepath.Join(c.RunDir, memcountFile))
		if err != nil {
			res.MemoryProblem = err.Error()
		} else if !m.Complete {
			res.MemoryProblem = "the memory plugin's output ends early (QEMU did not exit cleanly)"
		}
		res.Memory = m
	}
	if c.Accel == wire.AccelKVM && (res.Outcome == KVMFailed || res.Outcome == NoProgress) {
		return res, &KVMUnusableError{Reason: res.Detail}
	}
	return res, nil
}

// DecodeStream decodes what a boot of cfg sent on its results channel
// (wire.Decode) and rejects a stream with results its run plan, read from
// cfg.KernelArgs, did not ask for (wire.Stream.CheckPlan). Arguments
// without lpmbisect.bench, which every encoded plan has, are a boot run by
// hand: there is no plan to check against. Arguments that do not decode
// check nothing more: the guest then reports that in a failed note.
func DecodeStream(data []byte, cfg Config) *wire.Stream {
	s := wire.Decode(data)
	hasPlan := slices.ContainsFunc(cfg.KernelArgs, func(a string) bool {
		return strings.HasPrefix(a, string(wire.ParamBench)+"=")
	})
	if p, err := wire.DecodePlan(strings.Join(cfg.KernelArgs, " ")); hasPlan && err == nil {
		s.CheckPlan(p)
	}
	return s
}

func classify(s *wire.Stream, killed Outcome, killDetail string, mon *monitor, waitErr error, stderr string) (Outcome, string) {
	panicLine := mon.panicLine()
	switch {
	case killed == Corrupt:
		return Corrupt, killDetail
	case s.Complete:
		return OK, ""
	case s.Rejected:
		return Corrupt, s.Problem
	case killed == Canceled:
		return Canceled, killDetail
	case mon.qemu.kvmReport() != "":
		return KVMFailed, kvmFailedDetail(mon.qemu.kvmReport())
	case killed != "":
		if panicLine != "" {
			return Panic, panicLine
		}
		return killed, killDetail
	case panicLine != "":
		return Panic, panicLine
	case waitErr != nil:
		msg := strings.Join(logtail.Lines(stderr, 3, nil), "; ")
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

// qemuOutput keeps QEMU's standard output and error (bounded) and, when
// watchKVM, watches them line by line for a report that KVM cannot run
// the guest (kvmReportLine), which it keeps, with the lines of the report
// that follow it (maxKVMReport in all).
type qemuOutput struct {
	watchKVM bool

	mu     sync.Mutex
	buf    boundedBuffer
	line   []byte
	report []string
}

func (q *qemuOutput) Write(p []byte) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.buf.Write(p)
	if !q.watchKVM {
		return len(p), nil
	}
	for _, b := range p {
		if b != '\n' {
			if len(q.line) < 4<<10 {
				q.line = append(q.line, b)
			}
			continue
		}
		if r, ok := kvmReportLine(string(bytes.TrimRight(q.line, "\r"))); ok && len(q.report) < maxKVMReport {
			q.report = append(q.report, r)
		}
		q.line = q.line[:0]
	}
	return len(p), nil
}

func (q *qemuOutput) String() string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.buf.String()
}

// kvmReport is QEMU's report that KVM cannot run the guest, its lines
// joined by "; "; "" while there is none (or nothing is watched).
func (q *qemuOutput) kvmReport() string {
	if q == nil {
		return ""
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return strings.Join(q.report, "; ")
}

// kvmFailedDetail is the detail of a boot that KVM failed.
func kvmFailedDetail(report string) string {
	return fmt.Sprintf("QEMU reported %q: KVM cannot run the guest", report)
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

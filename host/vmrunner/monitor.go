package vmrunner

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lpmbisect/lpmbisect/wire"
)

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

	// qemu is QEMU's output, watched for a report that KVM cannot run
	// the guest.
	qemu *qemuOutput
	// clock measures the deadlines (nil: the wall clock); only check,
	// on one goroutine, uses it.
	clock *clock

	mu        sync.Mutex
	panicText string
	oopsRIP   string   // the first kernel-mode "RIP: 0010:function+off/len" of an oops
	tail      []string // last console lines
	phases    []wire.PhaseMark
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
			if strings.Contains(line, marker) {
				m.kernelStarted.Store(true)
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.oopsRIP == "" && m.panicText == "" {
		if _, rip, ok := strings.Cut(line, "RIP: 0010:"); ok {
			m.oopsRIP = strings.TrimSpace(rip)
			if len(m.oopsRIP) > maxRIPText {
				m.oopsRIP = m.oopsRIP[:maxRIPText]
			}
		}
	}
	if m.panicText == "" {
		for _, marker := range panicMarkers {
			if i := strings.Index(line, marker); i >= 0 {
				m.panicText = strings.TrimSpace(line[i:])
				break
			}
		}
	}
	if mark, ok := wire.ParsePhaseMark(line); ok && len(m.phases) < len(wire.Phases) {
		m.phases = append(m.phases, mark)
	}
	m.tail = append(m.tail, line)
	if len(m.tail) > 5 {
		m.tail = m.tail[1:]
	}
}

// panicLine is the console's panic line, with where the oops that led to
// it happened when the console showed that first ("Fatal exception in
// interrupt" alone names no function).
func (m *monitor) panicLine() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.panicText != "" && m.oopsRIP != "" {
		return m.panicText + " (oops at " + m.oopsRIP + ")"
	}
	return m.panicText
}

// maxRIPText bounds the oops location kept from the guest's console.
const maxRIPText = 120

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
// On back (nil for a channel the host cannot write to) it answers the
// guest's flush marker (see wire.FlushLine) and a paced guest's ready notes.
func (m *monitor) readResults(r io.Reader, back io.Writer, dst *boundedBuffer, raw io.Writer) {
	buf := make([]byte, 32<<10)
	lineLen := 0
	var head []byte // the start of the current line, for the lines answered
	over := false
	for {
		n, err := r.Read(buf)
		if n > 0 {
			m.touch()
			m.firstResultAt.CompareAndSwap(0, time.Now().UnixNano())
			if !over {
				chunk := buf[:n]
				for _, b := range chunk {
					if back != nil {
						if b == '\n' {
							m.answer(head, back)
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

// answer handles the start of one line of the guest: the flush marker is
// acknowledged at once, with wire.Ack on back (everything before it has
// been read: the stream is ordered), and a paced guest's ready note makes it
// wait until Config.Pace resumes it, by writing wire.Go on back.
func (m *monitor) answer(line []byte, back io.Writer) {
	if wire.IsFlush(line) {
		back.Write([]byte(wire.Ack)) // an error means QEMU is gone; the boot ends on its own
		return
	}
	rest, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), readyPrefix)
	if !ok || m.pace == nil {
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
	if report := m.qemu.kvmReport(); report != "" {
		return KVMFailed, kvmFailedDetail(report)
	}
	elapsed, silent := m.clock.since(now, m.start, m.lastActivity.Load())
	unit := m.clock.unit()
	first := m.firstResultAt.Load()
	if cfg.StartDeadline > 0 && !m.kernelStarted.Load() && first == 0 && elapsed > cfg.StartDeadline {
		if cfg.Accel == wire.AccelKVM {
			return NoProgress, fmt.Sprintf("the kernel did not start within %s under KVM", cfg.StartDeadline)
		}
		return BootFailed, fmt.Sprintf("the kernel did not start within %s%s (no kernel banner on the console: a truncated or corrupt image, or not an x86-64 kernel?)", cfg.StartDeadline, unit)
	}
	if first == 0 {
		if elapsed > cfg.BootDeadline {
			return BootTimeout, fmt.Sprintf("no results within the boot deadline (%s%s)", cfg.BootDeadline, unit)
		}
		return "", ""
	}
	if m.waiting.Load() {
		return "", "" // waiting for the host, not stalled
	}
	if silent > cfg.ProgressDeadline {
		return Stalled, fmt.Sprintf("the guest sent nothing for %s%s (progress deadline)", cfg.ProgressDeadline.Round(time.Second), unit)
	}
	return "", ""
}

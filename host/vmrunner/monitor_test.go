package vmrunner

import (
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lpmbisect/lpmbisect/wire"
)

func TestCheckDeadlines(t *testing.T) {
	cfg := Config{BootDeadline: time.Second, ProgressDeadline: time.Second, StartDeadline: 500 * time.Millisecond, Accel: wire.AccelKVM}
	m := &monitor{start: time.Now().Add(-700 * time.Millisecond)}
	if got, _ := m.check(cfg); got != NoProgress {
		t.Errorf("check(no banner after start deadline, KVM) = %q; want %q", got, NoProgress)
	}
	cfg.Accel = wire.AccelTCG
	if got, detail := m.check(cfg); got != BootFailed || !strings.Contains(detail, "did not start") {
		t.Errorf("check(no banner after start deadline, TCG) = %q (%s); want %q", got, detail, BootFailed)
	}
	m.consoleLine("lpmbisect-guest: results over virtio")
	if !m.kernelStarted.Load() {
		t.Errorf("a guest console line did not count as a started kernel")
	}
	m.kernelStarted.Store(true)
	if got, _ := m.check(cfg); got != "" {
		t.Errorf("check(kernel started, within boot deadline) = %q; want none", got)
	}
	m.start = time.Now().Add(-2 * time.Second)
	if got, _ := m.check(cfg); got != BootTimeout {
		t.Errorf("check(no results after boot deadline) = %q; want %q", got, BootTimeout)
	}
	m.firstResultAt.Store(time.Now().UnixNano())
	m.lastActivity.Store(time.Now().Add(-2 * time.Second).UnixNano())
	if got, _ := m.check(cfg); got != Stalled {
		t.Errorf("check(silent past progress deadline) = %q; want %q", got, Stalled)
	}
	m.touch()
	if got, _ := m.check(cfg); got != "" {
		t.Errorf("check(active) = %q; want none", got)
	}
	m.markCorrupt("too long")
	if got, _ := m.check(cfg); got != Corrupt {
		t.Errorf("check(over limit) = %q; want %q", got, Corrupt)
	}
}

func TestReadResultsLimits(t *testing.T) {
	for _, c := range []struct {
		name    string
		input   string
		corrupt bool
	}{
		{"fits", strings.Repeat("BenchmarkX 1 2 ns/op\n", 10), false},
		{"long line", strings.Repeat("x", 200), true},
		{"too many bytes", strings.Repeat("BenchmarkX 1 2 ns/op\n", 100), true},
	} {
		m := &monitor{limits: Limits{MaxLine: 100, MaxBytes: 1000}}
		var dst boundedBuffer
		var raw strings.Builder
		m.readResults(strings.NewReader(c.input), io.Discard, &dst, &raw)
		_, corrupt := m.overLimit.Load().(string)
		if corrupt != c.corrupt {
			t.Errorf("readResults(%s): corrupt = %v; want %v", c.name, corrupt, c.corrupt)
		}
		if dst.Len() > 1000 {
			t.Errorf("readResults(%s) kept %d bytes; want at most 1000", c.name, dst.Len())
		}
	}
}

func TestReadResultsPacesReadyNotes(t *testing.T) {
	var steps []int
	var resumes []func()
	m := &monitor{limits: DefaultLimits, pace: func(step int, resume func()) {
		steps = append(steps, step)
		resumes = append(resumes, resume)
	}}
	var dst boundedBuffer
	var raw, back strings.Builder
	input := "kernel: x\nlpmbisect-ready: 1\nlpmbisect-ready: 2\nBenchmarkX 1 2 ns/op\nlpmbisect-ready: x\n"
	m.readResults(strings.NewReader(input), &back, &dst, &raw)
	if !slices.Equal(steps, []int{1}) {
		t.Fatalf("Pace called for steps %v; want [1] (a second ready while waiting is ignored)", steps)
	}
	if !m.waiting.Load() {
		t.Errorf("waiting = false after a ready note; want true (no progress deadline while waiting)")
	}
	if out, _ := m.check(Config{ProgressDeadline: time.Nanosecond, BootDeadline: time.Hour}); out != "" {
		t.Errorf("check while waiting = %q; want no outcome", out)
	}
	resumes[0]()
	resumes[0]() // resuming twice writes one go
	if back.String() != wire.Go {
		t.Errorf("host wrote %q back; want one %q", back.String(), wire.Go)
	}
	if m.waiting.Load() {
		t.Errorf("waiting = true after resume; want false")
	}
	m.readResults(strings.NewReader("lpmbisect-ready: 3\r\n"), &back, &dst, &raw)
	if !slices.Equal(steps, []int{1, 3}) {
		t.Errorf("Pace called for steps %v; want [1 3]", steps)
	}
}

// TestMonitorPhases checks that the guest's phase marks are kept from the
// console in order, and at most one per phase's worth of lines.
func TestMonitorPhases(t *testing.T) {
	m := &monitor{}
	m.consoleLine("[    1.0] Run /init as init process")
	m.consoleLine("lpmbisect-guest: " + wire.PhaseMark{Phase: wire.PhaseToInit, TSC: 100}.ConsoleText())
	m.consoleLine("lpmbisect-guest: lpmbisect-phase: nonsense tsc=1 idle-ns=2")
	for i := range 20 {
		m.consoleLine("lpmbisect-guest: " + wire.PhaseMark{Phase: wire.PhaseSetUp, TSC: uint64(200 + i)}.ConsoleText())
	}
	if len(m.phases) != len(wire.Phases) || m.phases[0].Phase != wire.PhaseToInit || m.phases[0].TSC != 100 || m.phases[1].TSC != 200 {
		t.Errorf("monitor kept phases %+v; want to-init at 100, then set-up marks up to %d in all", m.phases, len(wire.Phases))
	}
}

// TestIcountClock checks that an icount boot's deadlines count QEMU's CPU
// time, not the wall clock, with the wall clock's slack as a floor.
func TestIcountClock(t *testing.T) {
	start := time.Now().Add(-100 * time.Second)
	cpu := 5 * time.Second
	c := &clock{cpu: func() (time.Duration, error) { return cpu, nil }}
	active := start.Add(10 * time.Second).UnixNano()
	now := start.Add(100 * time.Second)
	elapsed, silent := c.since(now, start, active)
	// 100 s of wall time on a busy host, 5 s of CPU: 10 s by the slack.
	if elapsed != 10*time.Second || silent != 9*time.Second {
		t.Errorf("since(100 s wall, 5 s CPU) = %v, %v; want 10 s (wall / %d), 9 s (90 s silent / %d, no CPU since)", elapsed, silent, icountWallSlack, icountWallSlack)
	}
	cpu = 60 * time.Second
	if elapsed, silent := c.since(now, start, active); elapsed != 60*time.Second || silent != 55*time.Second {
		t.Errorf("since(100 s wall, 60 s CPU) = %v, %v; want 60 s, 55 s (CPU since the last activity)", elapsed, silent)
	}
	if got, err := processCPU(os.Getpid()); err != nil || got < 0 {
		t.Errorf("processCPU(self) = %v, %v; want a CPU time", got, err)
	}
	var wall *clock
	if e, _ := wall.since(now, start, active); e != 100*time.Second {
		t.Errorf("wall clock since = %v; want 100 s", e)
	}
}

// TestPanicLineNamesTheOops checks that a panic that names no function
// ("Fatal exception in interrupt") says where the oops before it was,
// from the first kernel-mode RIP line, bounded.
func TestPanicLineNamesTheOops(t *testing.T) {
	m := &monitor{}
	m.consoleLine("[    3.1] BUG: unable to handle page fault for address: 0000000000001234")
	m.consoleLine("[    3.1] RIP: 0010:virtqueue_get_buf_ctx_split+0x2f/0x190")
	m.consoleLine("[    3.2] RIP: 0010:later_frame+0x1/0x2")
	m.consoleLine("[    3.3] Kernel panic - not syncing: Fatal exception in interrupt")
	m.consoleLine("[    3.4] RIP: 0010:after_the_panic+0x1/0x2")
	if got, want := m.panicLine(), "Kernel panic - not syncing: Fatal exception in interrupt (oops at virtqueue_get_buf_ctx_split+0x2f/0x190)"; got != want {
		t.Errorf("panicLine() = %q; want %q", got, want)
	}
	long := &monitor{}
	long.consoleLine("RIP: 0010:" + strings.Repeat("x", 4096))
	long.consoleLine("Kernel panic - not syncing: Fatal exception")
	if got := long.panicLine(); len(got) > len("Kernel panic - not syncing: Fatal exception (oops at )")+maxRIPText {
		t.Errorf("panicLine() kept %d bytes of a hostile RIP line", len(got))
	}
	if got := (&monitor{panicText: "Kernel panic - not syncing: sysrq triggered crash"}).panicLine(); got != "Kernel panic - not syncing: sysrq triggered crash" {
		t.Errorf("panicLine() without an oops = %q", got)
	}
}

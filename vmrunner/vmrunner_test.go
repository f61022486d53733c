package vmrunner

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lpmbisect/lpmbisect/wire"
)

func TestParseAccel(t *testing.T) {
	for in, want := range map[string]Accel{"auto": Auto, "KVM": KVM, "tcg": TCG, "icount": Icount} {
		if got, err := ParseAccel(in); err != nil || got != want {
			t.Errorf("ParseAccel(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseAccel("hvf"); err == nil {
		t.Errorf("ParseAccel(hvf) = nil error; want error")
	}
}

func TestUnit(t *testing.T) {
	if got := Icount.Unit(); got != "insn/op" {
		t.Errorf("Icount.Unit() = %q; want insn/op", got)
	}
	for _, a := range []Accel{KVM, TCG} {
		if got := a.Unit(); got != "ns/op" {
			t.Errorf("%s.Unit() = %q; want ns/op", a, got)
		}
	}
}

func TestCommandLine(t *testing.T) {
	cfg := Config{Kernel: "/k/bzImage", Initramfs: "/c/i.cpio", RunDir: "/run/A-01", Accel: Icount,
		KernelArgs: []string{"lpmbisect.samples=3"}, MemoryMB: 512, CPUs: 2}
	args := cfg.CommandLine()
	line := strings.Join(args, " ")
	for _, want := range []string{
		"qemu-system-x86_64 ", "-nodefaults", "-no-reboot", "-display none",
		"-accel tcg -icount shift=0,align=off,sleep=off", "-m 512", "-smp 2",
		"-kernel /k/bzImage", "-initrd /c/i.cpio",
		"-chardev file,id=console,path=/run/A-01/console.log -serial chardev:console",
		"-chardev file,id=fallback,path=/run/A-01/serial1.out -serial chardev:fallback",
		"-device virtserialport,chardev=results,name=" + wire.PortName,
	} {
		if !strings.Contains(line, want) {
			t.Errorf("CommandLine() = %q; want it to contain %q", line, want)
		}
	}
	i := slices.Index(args, "-append")
	if i < 0 {
		t.Fatalf("CommandLine() has no -append: %q", line)
	}
	for _, want := range []string{"console=ttyS0,115200", "panic=-1", "lpmbisect.samples=3"} {
		if !slices.Contains(strings.Fields(args[i+1]), want) {
			t.Errorf("kernel command line %q lacks %q", args[i+1], want)
		}
	}
	// The serial ports must be in this order: ttyS0 console, ttyS1 fallback.
	if strings.Index(line, "chardev:console") > strings.Index(line, "chardev:fallback") {
		t.Errorf("console must be the first serial port: %q", line)
	}
}

func TestAccelArgs(t *testing.T) {
	for a, want := range map[Accel]string{KVM: "-accel kvm -cpu host", TCG: "-accel tcg -cpu max"} {
		if got := strings.Join(a.args(), " "); got != want {
			t.Errorf("%s.args() = %q; want %q", a, got, want)
		}
	}
}

func TestBootWithoutQEMU(t *testing.T) {
	_, err := Boot(context.Background(), Config{QEMU: "lpmbisect-no-such-qemu", RunDir: t.TempDir()})
	if !errors.Is(err, ErrQEMUMissing) {
		t.Fatalf("Boot(missing QEMU) = %v; want ErrQEMUMissing", err)
	}
}

func TestShellQuote(t *testing.T) {
	got := shellQuote([]string{"qemu", "-append", "console=ttyS0 panic=-1", "it's"})
	want := `qemu -append 'console=ttyS0 panic=-1' 'it'\''s'`
	if got != want {
		t.Errorf("shellQuote = %s; want %s", got, want)
	}
}

func completeStream(t *testing.T) *wire.Stream {
	t.Helper()
	var b strings.Builder
	w := wire.NewWriter(&b)
	w.End()
	return wire.Decode([]byte(b.String()))
}

func TestClassify(t *testing.T) {
	complete := completeStream(t)
	empty := wire.Decode(nil)
	garbage := wire.Decode([]byte("\x01\x02 not a result\nmore junk\n"))
	panicked := &monitor{panicText: "Kernel panic - not syncing: sysrq triggered crash"}
	quiet := &monitor{}
	quiet.kernelStarted.Store(true)
	neverStarted := &monitor{}
	for _, c := range []struct {
		name   string
		s      *wire.Stream
		killed Outcome
		mon    *monitor
		err    error
		want   Outcome
	}{
		{"complete", complete, "", quiet, nil, OK},
		{"complete beats a later stall", complete, Stalled, quiet, nil, OK},
		{"over limits is corrupt even with a trailer", complete, Corrupt, quiet, nil, Corrupt},
		{"panic", empty, "", panicked, nil, Panic},
		{"stall after a panic is a panic", empty, Stalled, panicked, nil, Panic},
		{"stalled", empty, Stalled, quiet, nil, Stalled},
		{"boot timeout", empty, BootTimeout, quiet, nil, BootTimeout},
		{"canceled", empty, Canceled, panicked, nil, Canceled},
		{"qemu error", empty, "", quiet, errors.New("exit status 1"), QEMUError},
		{"garbage", garbage, "", quiet, nil, Corrupt},
		{"silent exit", empty, "", quiet, nil, Truncated},
		{"kernel never started", empty, "", neverStarted, nil, BootFailed},
	} {
		got, detail := classify(c.s, c.killed, "why", c.mon, c.err, "")
		if got != c.want {
			t.Errorf("classify(%s) = %s (%s); want %s", c.name, got, detail, c.want)
		}
		if got != OK && detail == "" {
			t.Errorf("classify(%s) gave no detail", c.name)
		}
	}
}

func TestCheckDeadlines(t *testing.T) {
	cfg := Config{BootDeadline: time.Second, ProgressDeadline: time.Second, StartDeadline: 500 * time.Millisecond, Accel: KVM}
	m := &monitor{start: time.Now().Add(-700 * time.Millisecond)}
	if got, _ := m.check(cfg); got != NoProgress {
		t.Errorf("check(no banner after start deadline, KVM) = %q; want %q", got, NoProgress)
	}
	cfg.Accel = TCG
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

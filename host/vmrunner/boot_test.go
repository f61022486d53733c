package vmrunner

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/internal/shellquote"
	"github.com/lpmbisect/lpmbisect/testbed/testqemu"
	"github.com/lpmbisect/lpmbisect/wire"
)

func TestBootWithoutQEMU(t *testing.T) {
	_, err := Boot(context.Background(), Config{QEMU: "lpmbisect-no-such-qemu", RunDir: t.TempDir()})
	if !errors.Is(err, ErrQEMUMissing) {
		t.Fatalf("Boot(missing QEMU) = %v; want ErrQEMUMissing", err)
	}
}

func completeStream(t *testing.T) *wire.Stream {
	t.Helper()
	var b strings.Builder
	w := wire.NewWriter(&b)
	w.End()
	return wire.Decode([]byte(b.String()))
}

// lyingStream is a stream its trailer proves whose one result is NaN.
func lyingStream(t *testing.T) *wire.Stream {
	t.Helper()
	var b strings.Builder
	w := wire.NewWriter(&b)
	w.Result(&benchfmt.Result{Name: []byte("LPMTrie/op=lookup"), Iters: 1, Values: []benchfmt.Value{{Value: math.NaN(), Unit: wire.UnitNsPerOp}}})
	w.End()
	s := wire.Decode([]byte(b.String()))
	if !s.Rejected {
		t.Fatalf("Decode(NaN) = %+v; want it rejected", s)
	}
	return s
}

// TestDecodeStreamChecksPlan checks that a boot's stream is held to the
// plan on its command line, and that a command line without a plan (a VM
// started by hand) holds it to nothing.
func TestDecodeStreamChecksPlan(t *testing.T) {
	var b strings.Builder
	w := wire.NewWriter(&b)
	w.Result(&benchfmt.Result{Name: []byte("MapBatch/op=lookup"), Iters: 1, Values: []benchfmt.Value{{Value: 5, Unit: wire.UnitNsPerOp}}})
	w.End()
	plan := wire.DefaultPlan()
	for _, c := range []struct {
		name string
		args []string
		ok   bool
	}{
		{"no plan", []string{"console=ttyS0"}, true},
		{"another benchmark", plan.KernelArgs(), false},
		{"this benchmark", append(plan.KernelArgs(), wire.ParamBench.Arg("MapBatch")), true},
	} {
		s := DecodeStream([]byte(b.String()), Config{KernelArgs: c.args})
		if s.Complete != c.ok || s.Rejected == c.ok {
			t.Errorf("DecodeStream(%s) = complete %v, rejected %v (%s); want complete %v", c.name, s.Complete, s.Rejected, s.Problem, c.ok)
		}
	}
}

func TestClassify(t *testing.T) {
	complete := completeStream(t)
	empty := wire.Decode(nil)
	garbage := wire.Decode([]byte("\x01\x02 not a result\nmore junk\n"))
	panicked := &monitor{panicText: "Kernel panic - not syncing: sysrq triggered crash"}
	quiet := &monitor{}
	quiet.kernelStarted.Store(true)
	neverStarted := &monitor{}
	lying := lyingStream(t)
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
		{"a proven stream that lies is corrupt", lying, "", quiet, nil, Corrupt},
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

// fakeQEMUEnv makes the test binary play QEMU: Boot starts it as
// Config.QEMU with QEMU's arguments, and it plays the guest that the
// kernel parameter fake.guest= names (see fakeGuests).
const fakeQEMUEnv = "VMRUNNER_FAKE_QEMU"

func TestMain(m *testing.M) {
	if os.Getenv(fakeQEMUEnv) == "1" {
		os.Exit(fakeQEMU(os.Args[1:], os.Stderr))
	}
	// Every QEMU the tests start is this binary in fake mode; no test
	// starts another program that could be confused by the variable.
	os.Setenv(fakeQEMUEnv, "1")
	os.Exit(m.Run())
}

// fakeVM is what the fake QEMU got from its arguments: the kernel command
// line and the three guest-to-host channels.
type fakeVM struct {
	cmdline  []string
	cpu      string
	console  io.Writer
	results  io.ReadWriter // virtio-serial port
	fallback io.ReadWriter // ttyS1
}

func (vm *fakeVM) param(key string) string {
	for _, p := range vm.cmdline {
		if v, ok := strings.CutPrefix(p, key+"="); ok {
			return v
		}
	}
	return ""
}

// fakeQEMU parses the arguments as QEMU would for the options Boot passes,
// opens the channels and runs the guest. It returns the exit status.
func fakeQEMU(args []string, stderr io.Writer) int {
	if slices.Equal(args, []string{"--version"}) {
		fmt.Println("QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)")
		fmt.Println("Copyright (c) 2003-2022 Fabrice Bellard and the QEMU Project developers")
		return 0
	}
	vm, err := parseFakeArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "qemu-system-x86_64: %v\n", err)
		return 1
	}
	guest := fakeGuests[vm.param("fake.guest")]
	if guest == nil {
		fmt.Fprintf(stderr, "qemu-system-x86_64: no fake guest %q\n", vm.param("fake.guest"))
		return 1
	}
	// Whatever a guest does, a fake QEMU never outlives a broken test by much.
	time.AfterFunc(time.Minute, func() { os.Exit(3) })
	fmt.Fprintf(vm.console, "fake-qemu pid %d cpu %s\r\n", os.Getpid(), vm.cpu)
	if vm.param("fake.qemu-warning") == "1" { // as QEMU 7.2 says of a model TCG cannot fully emulate
		fmt.Fprintln(stderr, "qemu-system-x86_64: warning: TCG doesn't support requested feature: CPUID.07H:EDX.spec-ctrl [bit 26]")
	}
	return guest(vm, stderr)
}

func parseFakeArgs(args []string) (*fakeVM, error) {
	vm := &fakeVM{}
	chardevs := map[string]io.ReadWriter{}
	var serials, ports []string
	withValue := []string{"-display", "-accel", "-icount", "-cpu", "-m", "-smp", "-kernel", "-initrd", "-append", "-chardev", "-serial", "-device"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch a {
		case "-nodefaults", "-no-user-config", "-no-reboot":
			continue
		}
		if !slices.Contains(withValue, a) {
			return nil, fmt.Errorf("%s: invalid option", a)
		}
		if i+1 == len(args) {
			return nil, fmt.Errorf("%s: requires an argument", a)
		}
		i++
		v := args[i]
		switch a {
		case "-append":
			vm.cmdline = strings.Fields(v)
		case "-cpu":
			vm.cpu = v
		case "-chardev":
			id, f, err := openFakeChardev(v)
			if err != nil {
				return nil, fmt.Errorf("-chardev %s: %v", v, err)
			}
			chardevs[id] = f
		case "-serial":
			serials = append(serials, strings.TrimPrefix(v, "chardev:"))
		case "-device":
			if rest, ok := strings.CutPrefix(v, "virtserialport,chardev="); ok {
				ports = append(ports, strings.Split(rest, ",")[0])
			}
		}
	}
	if len(serials) != 2 || len(ports) != 1 {
		return nil, fmt.Errorf("want 2 serial ports and 1 virtio-serial port, got %q and %q", serials, ports)
	}
	for _, id := range append(serials, ports...) {
		if chardevs[id] == nil {
			return nil, fmt.Errorf("chardev %q: not found", id)
		}
	}
	vm.console, vm.fallback, vm.results = chardevs[serials[0]], chardevs[serials[1]], chardevs[ports[0]]
	return vm, nil
}

// openFakeChardev opens a "file,id=ID,path=P" or "socket,id=ID,fd=N" backend.
func openFakeChardev(spec string) (string, io.ReadWriter, error) {
	kind, rest, _ := strings.Cut(spec, ",")
	opts := map[string]string{}
	for _, kv := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(kv, "=")
		opts[k] = v
	}
	switch {
	case kind == "file" && opts["path"] != "":
		f, err := os.OpenFile(opts["path"], os.O_WRONLY, 0)
		return opts["id"], f, err
	case kind == "socket" && opts["fd"] != "":
		fd, err := strconv.Atoi(opts["fd"])
		if err != nil {
			return "", nil, err
		}
		return opts["id"], os.NewFile(uintptr(fd), "socket"), nil
	}
	return "", nil, errors.New("unsupported backend")
}

const fakeBanner = "Linux version 6.12.0-fake (fake@build) #1 SMP\r\n"

// writeFakeResults writes n results of a stream to w and, if end, the trailer.
func writeFakeResults(w io.Writer, n int, end bool) {
	ww := wire.NewWriter(w)
	for i := range n {
		r := &benchfmt.Result{Name: []byte("BenchmarkFake/op=lookup"), Iters: 1000, Values: []benchfmt.Value{{Value: 500 + float64(i), Unit: "ns/op"}}}
		r.SetConfig(wire.KeyKernel, "6.12.0-fake")
		ww.Result(r)
	}
	if end {
		ww.End()
	}
}

// hang waits until the fake QEMU is killed.
func hang() int {
	time.Sleep(time.Hour)
	return 3
}

// okGuest boots and sends a complete stream of three results.
func okGuest(vm *fakeVM, _ io.Writer) int {
	io.WriteString(vm.console, fakeBanner)
	writeFakeResults(vm.results, 3, true)
	return 0
}

// fakeGuests are the guests the fake QEMU can play, by name.
var fakeGuests = map[string]func(vm *fakeVM, stderr io.Writer) int{
	"ok": okGuest,
	// kvm-emulation-failure is a KVM that stops the kernel in its
	// decompressor, as kvm-pvm stops Debian's 6.12: QEMU reports it on
	// its standard error and keeps running with the VM stopped. Under
	// TCG the guest boots fine.
	"kvm-emulation-failure": func(vm *fakeVM, stderr io.Writer) int {
		if vm.cpu != "host" {
			return okGuest(vm, stderr)
		}
		io.WriteString(vm.console, "Probing EDD (edd=off to disable)... ok\r\n")
		io.WriteString(stderr, testqemu.EmulationFailure)
		return hang()
	},
	"serial": func(vm *fakeVM, _ io.Writer) int {
		io.WriteString(vm.console, fakeBanner+"lpmbisect-guest: no virtio port, results on ttyS1\r\n")
		var b strings.Builder
		writeFakeResults(&b, 2, true)
		io.WriteString(vm.fallback, strings.ReplaceAll(b.String(), "\n", "\r\n")) // a tty in cooked mode
		return 0
	},
	"panic": func(vm *fakeVM, _ io.Writer) int {
		io.WriteString(vm.console, fakeBanner+"Run /init as init process\r\n")
		writeFakeResults(vm.results, 1, false)
		io.WriteString(vm.console, "[    2.000000] Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b\r\n")
		return 0 // panic=-1 -no-reboot: QEMU exits 0
	},
	"silent-exit": func(vm *fakeVM, _ io.Writer) int {
		io.WriteString(vm.console, "early console in setup code\r\n")
		return 0
	},
	"silent-hang": func(*fakeVM, io.Writer) int { return hang() },
	"no-results": func(vm *fakeVM, _ io.Writer) int {
		io.WriteString(vm.console, fakeBanner)
		for {
			io.WriteString(vm.console, "still booting\r\n")
			time.Sleep(50 * time.Millisecond)
		}
	},
	"stall": func(vm *fakeVM, _ io.Writer) int {
		io.WriteString(vm.console, fakeBanner)
		writeFakeResults(vm.results, 2, false)
		return hang()
	},
	"truncated": func(vm *fakeVM, _ io.Writer) int {
		io.WriteString(vm.console, fakeBanner)
		writeFakeResults(vm.results, 2, false)
		return 0
	},
	"flood": func(vm *fakeVM, _ io.Writer) int {
		io.WriteString(vm.console, fakeBanner)
		line := strings.Repeat("BenchmarkFake 1 2 ns/op\n", 1000)
		for {
			if _, err := io.WriteString(vm.results, line); err != nil {
				return 0
			}
		}
	},
	"long-line": func(vm *fakeVM, _ io.Writer) int {
		io.WriteString(vm.console, fakeBanner)
		io.WriteString(vm.results, "kernel: 6.12.0-fake\n"+strings.Repeat("x", 10<<10))
		return hang()
	},
	"garbage": func(vm *fakeVM, _ io.Writer) int {
		io.WriteString(vm.console, fakeBanner)
		io.WriteString(vm.results, "\x00\x01 not a result\nmore junk\n")
		return 0
	},
	"qemu-error": func(_ *fakeVM, stderr io.Writer) int {
		fmt.Fprintln(stderr, "qemu-system-x86_64: -accel kvm: failed to initialize kvm: Permission denied")
		return 1
	},
	"banner-hang": func(vm *fakeVM, _ io.Writer) int {
		io.WriteString(vm.console, fakeBanner)
		return hang()
	},
	// paced takes two steps, each after a ready note and the host's go.
	"paced": func(vm *fakeVM, stderr io.Writer) int {
		io.WriteString(vm.console, fakeBanner)
		if vm.param("lpmbisect.paced") != "1" {
			fmt.Fprintln(stderr, "paced guest booted without lpmbisect.paced=1")
			return 1
		}
		ww := wire.NewWriter(vm.results)
		in := bufio.NewReader(vm.results)
		for step := 1; step <= 2; step++ {
			ww.Note(wire.KeyReady, strconv.Itoa(step))
			if line, err := in.ReadString('\n'); err != nil || line != wire.Go {
				fmt.Fprintf(vm.console, "guest: step %d: read %q, %v; want %q\r\n", step, line, err, wire.Go)
				return 0
			}
			r := &benchfmt.Result{Name: []byte("BenchmarkFake/step=" + strconv.Itoa(step)), Iters: 1, Values: []benchfmt.Value{{Value: 1, Unit: "ns/op"}}}
			ww.Result(r)
		}
		ww.End()
		return 0
	},
}

func init() {
	// throttled writes a long stream and its insight document into a
	// throttled virtqueue, then the flush marker, and waits for the ack
	// before it powers off; unflushed does the same but powers off at once.
	fakeGuests["throttled"] = func(vm *fakeVM, _ io.Writer) int { return throttledGuest(vm, true) }
	fakeGuests["unflushed"] = func(vm *fakeVM, _ io.Writer) int { return throttledGuest(vm, false) }
}

// throttledDoc is the insight document the throttled guests send: 1 MiB,
// as large as a real one with kallsyms, in 32 lines of base64.
var throttledDoc = func() []byte {
	b := make([]byte, 1<<20)
	for i := range b {
		b[i] = byte(i * 7919 >> 8)
	}
	return b
}()

// virtqueue is QEMU's side of a virtio-serial port that a slow host
// throttles: a guest's write returns once its buffer is queued (up to 128
// of them, the port's queue size), QEMU hands the queue to the chardev at
// the host's pace, and what is still queued when the guest powers off
// (QEMU exits) is lost.
type virtqueue struct {
	bufs chan []byte
}

func newVirtqueue(out io.Writer) *virtqueue {
	q := &virtqueue{bufs: make(chan []byte, 128)}
	go func() {
		for b := range q.bufs {
			for len(b) > 0 { // 4 KiB a millisecond: a host that reads slowly
				n := min(len(b), 4<<10)
				if _, err := out.Write(b[:n]); err != nil {
					return
				}
				b = b[n:]
				time.Sleep(time.Millisecond)
			}
		}
	}()
	return q
}

func (q *virtqueue) Write(p []byte) (int, error) {
	q.bufs <- slices.Clone(p)
	return len(p), nil
}

func throttledGuest(vm *fakeVM, flush bool) int {
	io.WriteString(vm.console, fakeBanner)
	q := newVirtqueue(vm.results)
	ww := wire.NewWriter(q)
	for i := range 3 {
		ww.Result(&benchfmt.Result{Name: []byte("BenchmarkFake/op=lookup"), Iters: 1000, Values: []benchfmt.Value{{Value: 500 + float64(i), Unit: "ns/op"}}})
	}
	ww.End()
	ww.Insight(throttledDoc)
	if !flush {
		return 0 // powers off with buffers still queued
	}
	q.Write([]byte(wire.FlushLine))
	in := bufio.NewReader(vm.results)
	if line, err := in.ReadString('\n'); err != nil || line != wire.Ack {
		fmt.Fprintf(vm.console, "guest: read %q, %v; want %q\r\n", line, err, wire.Ack)
		return 0
	}
	fmt.Fprintf(vm.console, "guest: acknowledged, %d buffers still queued\r\n", len(q.bufs))
	return 0
}

// fakeConfig is a boot of the named fake guest with deadlines long enough
// for a loaded machine; tests of a deadline shorten it.
func fakeConfig(t *testing.T, guest string) Config {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		QEMU: exe, Kernel: "bzImage", Initramfs: "initramfs.cpio", RunDir: t.TempDir(),
		KernelArgs:   []string{"fake.guest=" + guest},
		BootDeadline: 20 * time.Second, StartDeadline: 10 * time.Second, ProgressDeadline: 10 * time.Second,
	}
}

// bootFake boots cfg and checks what holds for every boot: no error (but
// a *KVMUnusableError beside the result of a boot that KVM failed), the
// fake QEMU is gone when Boot returns, the console log is kept.
func bootFake(t *testing.T, ctx context.Context, cfg Config) *Result {
	t.Helper()
	r, err := Boot(ctx, cfg)
	var kvm *KVMUnusableError
	switch {
	case r != nil && cfg.Accel == wire.AccelKVM && (r.Outcome == KVMFailed || r.Outcome == NoProgress):
		if !errors.As(err, &kvm) || !strings.Contains(err.Error(), r.Detail) {
			t.Errorf("Boot(%s) under KVM, %s = %v; want a KVMUnusableError with the result's detail %q", cfg.KernelArgs, r.Outcome, err, r.Detail)
		}
	case err != nil:
		t.Fatalf("Boot(%s) = %v; want a result", cfg.KernelArgs, err)
	}
	console, err := os.ReadFile(r.ConsoleLog)
	if err != nil {
		t.Fatalf("console log: %v", err)
	}
	var pid int
	var cpu string
	if _, err := fmt.Sscanf(string(console), "fake-qemu pid %d cpu %s", &pid, &cpu); err != nil {
		if r.Outcome != QEMUError && r.Outcome != KVMFailed {
			t.Errorf("console log %q does not start with the fake QEMU's pid: %v", console, err)
		}
		return r
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("after Boot(%s) returned, kill(QEMU pid %d, 0) = %v; want ESRCH (QEMU must be dead)", cfg.KernelArgs, pid, err)
		syscall.Kill(pid, syscall.SIGKILL)
	}
	if cpu != r.CPUModel {
		t.Errorf("Boot(%s): QEMU got -cpu %s; Result.CPUModel = %q", cfg.KernelArgs, cpu, r.CPUModel)
	}
	return r
}

func TestBootOutcomes(t *testing.T) {
	for _, c := range []struct {
		guest   string
		accel   wire.Accel
		limits  Limits
		want    Outcome
		results int    // how many results must have arrived (-1: any)
		channel string // where the results must have come from, if set
		detail  string // must be in Result.Detail
		maxTime time.Duration
		// Shorter deadlines for the guest that tests them.
		bootDeadline, startDeadline, progressDeadline time.Duration
	}{
		{guest: "ok", want: OK, results: 3, channel: "virtio", maxTime: 2 * time.Second},
		{guest: "serial", want: OK, results: 2, channel: "serial", maxTime: 2 * time.Second},
		{guest: "panic", want: Panic, results: 1, detail: "Kernel panic - not syncing: Attempted to kill init!"},
		{guest: "silent-exit", want: BootFailed, detail: `console ends: "early console in setup code"`},
		{guest: "silent-hang", startDeadline: time.Second, want: BootFailed, detail: "did not start within 1s"},
		{guest: "silent-hang", accel: wire.AccelKVM, startDeadline: time.Second, want: NoProgress, detail: "within 1s under KVM"},
		// Ended by QEMU's report, long before any deadline.
		{guest: "kvm-emulation-failure", accel: wire.AccelKVM, want: KVMFailed, detail: `QEMU reported "KVM internal error. Suberror: 1; emulation failure"`},
		{guest: "kvm-emulation-failure", accel: wire.AccelTCG, want: OK, results: 3},
		{guest: "qemu-error", accel: wire.AccelKVM, want: KVMFailed, detail: "-accel kvm: failed to initialize kvm: Permission denied"},
		{guest: "no-results", bootDeadline: time.Second, want: BootTimeout, detail: "boot deadline (1s)"},
		{guest: "stall", progressDeadline: 500 * time.Millisecond, want: Stalled, results: 2, detail: "progress deadline"},
		{guest: "truncated", want: Truncated, results: 2, detail: "no trailer"},
		{guest: "flood", limits: Limits{MaxLine: 1 << 10, MaxBytes: 64 << 10}, want: Corrupt, results: -1, detail: "more than 65536 bytes"},
		{guest: "long-line", limits: Limits{MaxLine: 1 << 10, MaxBytes: 64 << 10}, want: Corrupt, detail: "longer than 1024 bytes"},
		{guest: "garbage", want: Corrupt, detail: "not in the wire format"},
		{guest: "qemu-error", want: QEMUError, detail: "failed to initialize kvm: Permission denied"},
	} {
		name := c.guest
		if c.accel != "" {
			name += "/" + string(c.accel)
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := fakeConfig(t, c.guest)
			cfg.Accel, cfg.Limits = c.accel, c.limits
			if c.bootDeadline > 0 {
				cfg.BootDeadline = c.bootDeadline
			}
			if c.startDeadline > 0 {
				cfg.StartDeadline = c.startDeadline
			}
			if c.progressDeadline > 0 {
				cfg.ProgressDeadline = c.progressDeadline
			}
			r := bootFake(t, context.Background(), cfg)
			if r.Outcome != c.want {
				t.Fatalf("Boot(%s).Outcome = %s (%s); want %s", c.guest, r.Outcome, r.Detail, c.want)
			}
			if !strings.Contains(r.Detail, c.detail) {
				t.Errorf("Boot(%s).Detail = %q; want it to contain %q", c.guest, r.Detail, c.detail)
			}
			if got := len(r.Stream.Results); c.results >= 0 && got != c.results {
				t.Errorf("Boot(%s) kept %d results; want %d", c.guest, got, c.results)
			}
			if c.channel != "" && r.Channel != c.channel {
				t.Errorf("Boot(%s).Channel = %q; want %q", c.guest, r.Channel, c.channel)
			}
			if c.maxTime > 0 && r.Duration > c.maxTime {
				t.Errorf("Boot(%s) took %s; want at most %s", c.guest, r.Duration, c.maxTime)
			}
			if max := c.limits.MaxBytes; max > 0 {
				raw, _ := os.ReadFile(filepath.Join(cfg.RunDir, resultsFile))
				if len(raw) > max {
					t.Errorf("Boot(%s) stored %d bytes of results; want at most the limit %d", c.guest, len(raw), max)
				}
			}
		})
	}
}

func TestBootCanceled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(context.Background())
	cfg := fakeConfig(t, "banner-hang")
	cfg.BootDeadline, cfg.ProgressDeadline = time.Minute, time.Minute
	time.AfterFunc(300*time.Millisecond, func() { cancel(errors.New("SIGINT")) })
	r := bootFake(t, ctx, cfg)
	if r.Outcome != Canceled || !strings.Contains(r.Detail, "SIGINT") {
		t.Errorf("Boot(canceled after 300ms) = %s (%s); want %s with the cause", r.Outcome, r.Detail, Canceled)
	}
	if r.Duration > 5*time.Second {
		t.Errorf("Boot(canceled after 300ms) took %s; want it to end at once", r.Duration)
	}
}

func TestBootPaced(t *testing.T) {
	t.Parallel()
	cfg := fakeConfig(t, "paced")
	cfg.ProgressDeadline = time.Second
	var mu sync.Mutex
	var steps []int
	cfg.Pace = func(step int, resume func()) {
		mu.Lock()
		steps = append(steps, step)
		mu.Unlock()
		// Wait longer than the progress deadline: a waiting guest is not stalled.
		time.AfterFunc(cfg.ProgressDeadline*3/2, resume)
	}
	r := bootFake(t, context.Background(), cfg)
	if r.Outcome != OK {
		t.Fatalf("Boot(paced) = %s (%s); want %s", r.Outcome, r.Detail, OK)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(steps, []int{1, 2}) {
		t.Errorf("Pace called for steps %v; want [1 2]", steps)
	}
	var names []string
	for _, res := range r.Stream.Results {
		names = append(names, string(res.Name))
	}
	if want := []string{"Fake/step=1", "Fake/step=2"}; !slices.Equal(names, want) {
		t.Errorf("Boot(paced) results %q; want %q", names, want)
	}
	if slices.Contains(strings.Fields(strings.Join(r.Command, " ")), wire.PacedArg) {
		t.Errorf("Result.Command %q is paced; want the unpaced command a person can run", r.Command)
	}
}

func TestBootLogsCommandLine(t *testing.T) {
	t.Parallel()
	var buf strings.Builder
	cfg := fakeConfig(t, "ok")
	cfg.Log = log.New(&buf, "P: ", 0)
	r := bootFake(t, context.Background(), cfg)
	if want := "P: " + shellquote.Join(r.Command) + "\n"; buf.String() != want {
		t.Errorf("Boot logged %q; want %q (the command line, once, with only the logger's prefix)", buf.String(), want)
	}
}

func TestBootCommandLineTooLong(t *testing.T) {
	cfg := fakeConfig(t, "ok")
	cfg.KernelArgs = append(cfg.KernelArgs, "lpmbisect.bench="+strings.Repeat("x", maxCommandLine))
	_, err := Boot(context.Background(), cfg)
	var long *CommandLineTooLongError
	if !errors.As(err, &long) || long.Max != maxCommandLine || long.Len != len(cfg.KernelCommandLine()) {
		t.Fatalf("Boot(%d-byte command line) = %v; want a CommandLineTooLongError{%d, %d}", len(cfg.KernelCommandLine()), err, len(cfg.KernelCommandLine()), maxCommandLine)
	}
	if strings.Contains(err.Error(), "--") {
		t.Errorf("Boot(too long).Error() = %q; want no command-line flag in a library error", err)
	}
}

func TestBootRecordsQEMUVersionAndCPUModel(t *testing.T) {
	t.Parallel()
	for _, accel := range []wire.Accel{wire.AccelTCG, wire.AccelIcount} {
		cfg := fakeConfig(t, "ok")
		cfg.Accel = accel
		r := bootFake(t, context.Background(), cfg) // checks the -cpu QEMU got against CPUModel
		if r.Outcome != OK || r.QEMUVersion != "7.2.22" || r.CPUModel != CPUModel(accel) {
			t.Errorf("Boot(%s) = %s, QEMU %q, CPU %q; want %s, QEMU \"7.2.22\", CPU %q", accel, r.Outcome, r.QEMUVersion, r.CPUModel, OK, CPUModel(accel))
		}
	}
}

// TestBootFlushed checks that a guest that waits for the host's ack of its
// flush marker loses nothing when QEMU still holds its last buffers, and
// that the fake models the loss: a guest that powers off at once loses
// the end of its insight document.
func TestBootFlushed(t *testing.T) {
	t.Parallel()
	r := bootFake(t, context.Background(), fakeConfig(t, "throttled"))
	if r.Outcome != OK || len(r.Stream.Results) != 3 {
		t.Fatalf("Boot(throttled) = %s (%s), %d results; want %s with 3", r.Outcome, r.Detail, len(r.Stream.Results), OK)
	}
	if !bytes.Equal(r.Stream.Insight, throttledDoc) {
		t.Errorf("Boot(throttled) got %d bytes of insight (%s); want all %d sent", len(r.Stream.Insight), r.Stream.InsightProblem, len(throttledDoc))
	}
	console, _ := os.ReadFile(r.ConsoleLog)
	if !strings.Contains(string(console), "guest: acknowledged, 0 buffers still queued") {
		t.Errorf("Boot(throttled) console %q; want the guest to get the ack after its last buffer left the queue", console)
	}

	r = bootFake(t, context.Background(), fakeConfig(t, "unflushed"))
	if len(r.Stream.Insight) >= len(throttledDoc) {
		t.Errorf("Boot(unflushed) got %d bytes of insight; want fewer than the %d sent (the fake must lose what QEMU holds at power-off)", len(r.Stream.Insight), len(throttledDoc))
	}
}

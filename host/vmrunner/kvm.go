package vmrunner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/lpmbisect/lpmbisect/wire"
)

// defaultKVMDevice is the device through which QEMU uses KVM.
const defaultKVMDevice = "/dev/kvm"

// kvmProbeDeadline is how long a probe waits for a kernel's banner under
// KVM when QEMU reports nothing, in QEMU's CPU time (with a wall-clock
// limit of icountWallSlack times as long, for a guest that hangs without
// using the CPU): a loaded host slows the probe down without changing its
// verdict. A working KVM brings a Debian kernel to its banner in a
// fraction of a second of CPU; a KVM that hangs its guests, or runs them a
// hundred times too slowly, says nothing (Debian's 6.1 took 97 s to its
// banner under kvm-pvm, most of it QEMU's CPU time in the host kernel,
// then QEMU reported an emulation failure).
const kvmProbeDeadline = 5 * time.Second

// kvmFailureMarkers are what QEMU prints on its standard error when KVM
// cannot run the guest (QEMU 7.2's accel/kvm/kvm-all.c and
// target/i386/kvm/kvm.c). After the first three QEMU keeps running with
// the VM stopped, and its monitor still says "running" for a while: only
// its standard error tells.
var kvmFailureMarkers = []string{
	"KVM internal error",                 // kvm_handle_internal_error: "KVM internal error. Suberror: N"
	"emulation failure",                  // the same, for KVM_INTERNAL_ERROR_EMULATION, before the register dump
	"KVM: entry failed",                  // "KVM: entry failed, hardware error 0x…"
	"kvm run failed",                     // "error: kvm run failed …" (the vCPU's KVM_RUN ioctl failed)
	"failed to initialize kvm",           // "-accel kvm: failed to initialize kvm: Permission denied"
	"Could not access KVM kernel module", // /dev/kvm missing as QEMU opens it
}

// kvmReportLine reports whether a line of QEMU's standard error says that
// KVM cannot run the guest (one of kvmFailureMarkers), and returns it as a
// report keeps it: QEMU's prefix off, bounded.
func kvmReportLine(line string) (string, bool) {
	for _, m := range kvmFailureMarkers {
		if strings.Contains(line, m) {
			return bound(strings.TrimPrefix(line, qemuPrefix)), true
		}
	}
	return "", false
}

// maxKVMReport bounds the lines of a report that KVM cannot run the guest
// that are kept: the first and those that follow it.
const maxKVMReport = 4

// maxQEMUErrLine bounds a line kept from QEMU's standard error.
const maxQEMUErrLine = 240

// KVMUnusableError says that KVM cannot run guests here: /dev/kvm does not
// open, a probe boot showed it, or a boot under KVM failed because of it.
// The remedy is another accelerator (icount, or auto, which decides by
// itself); callers that know their own option names add them.
type KVMUnusableError struct{ Reason string }

func (e *KVMUnusableError) Error() string {
	return "KVM unusable: " + e.Reason
}

// openKVM checks that device opens for reading and writing, as QEMU opens
// it. Opening is not working: a nested or paravirtual KVM may accept the
// open and then fail or hang every guest.
func openKVM(device string) error {
	f, err := os.OpenFile(device, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return f.Close()
}

// ProbeKernel is a real kernel to probe KVM with: a hand-made guest does
// not count, since what fails under a broken KVM is one instruction of a
// real kernel's decompressor.
type ProbeKernel struct {
	Image string // a bzImage, booted through its decompressor as a KVM boot is
	Name  string // how messages call it (its release)
}

// KVMProbeBoot is what one kernel's probe boot showed, timed from its
// QEMU's start.
type KVMProbeBoot struct {
	Kernel string `json:"kernel"` // ProbeKernel.Name
	// Event is what decided the boot: ProbeBanner, ProbeReport,
	// ProbeExit, ProbeDeadline, or "" for a boot ended because another
	// decided the probe.
	Event string `json:"event,omitempty"`
	// Line is the banner, QEMU's report (its failure lines, joined by
	// "; ") or its last words when it exited.
	Line string `json:"line,omitempty"`
	// At is when the event came, Ended when QEMU was gone, both from
	// QEMU's start; CPU is the CPU time QEMU had used at the event.
	At    time.Duration `json:"at_ns"`
	Ended time.Duration `json:"ended_ns"`
	CPU   time.Duration `json:"cpu_ns"`
}

// Events of a probe boot.
const (
	ProbeBanner   = "banner"   // the kernel printed its banner: KVM ran it
	ProbeReport   = "report"   // QEMU reported that KVM cannot run the guest
	ProbeExit     = "exit"     // QEMU exited before the banner
	ProbeDeadline = "deadline" // neither banner nor report within the deadline
)

// KVMProbeResult is what a probe showed.
type KVMProbeResult struct {
	Works bool
	// Why says what decided, in a clause: the report and where it came
	// ("QEMU reported \"…\" 0.42 s into 6.12.117's boot"), or that every
	// kernel printed its banner.
	Why   string
	Boots []KVMProbeBoot
	// Decisive is the boot whose event decided (-1 when every banner came).
	Decisive int
	// Took is the whole probe, from the first QEMU's start to the last
	// QEMU gone.
	Took time.Duration
}

// kvmProbe is a probe of KVM with real kernels.
type kvmProbe struct {
	QEMU    string // default DefaultQEMU
	Kernels []ProbeKernel
	// Deadline bounds the wait for a banner when QEMU says nothing, in
	// QEMU's CPU time (default kvmProbeDeadline).
	Deadline time.Duration
}

// probeMemoryMB is the probe VM's memory: enough to decompress a kernel.
const probeMemoryMB = 256

// probeArgs are QEMU's arguments for a probe boot of image under KVM: no
// initramfs (the boot is ended at the banner, long before the kernel
// looks for one), the console on the pipe at fd 3.
func probeArgs(image string) []string {
	return append(append([]string{"-nodefaults", "-no-user-config", "-no-reboot", "-display", "none"},
		qemuAccelArgs(wire.AccelKVM, CPUProfile{}, 0)...),
		"-m", fmt.Sprint(probeMemoryMB), "-smp", "1", "-kernel", image,
		"-append", "console=ttyS0,115200 earlyprintk=serial,ttyS0,115200 panic=-1",
		"-chardev", "file,id=console,path=/proc/self/fd/3", "-serial", "chardev:console")
}

// probeEvent is a line or the exit of one probe boot's QEMU.
type probeEvent struct {
	boot int
	kind string // ProbeBanner, ProbeReport, ProbeExit
	line string
	at   time.Time
}

// probeVM is one probe boot's QEMU.
type probeVM struct {
	cmd     *exec.Cmd
	started time.Time
	clock   *clock         // QEMU's CPU time
	ended   chan time.Time // when QEMU was reaped and its streams read
	report  []string       // its failure lines, in order (the stderr reader's until ended)
}

// Probe boots every kernel under KVM at once and reads what QEMU and the
// kernels say, line by line as they say it: the first failure QEMU reports
// on its standard error (an emulation failure, an internal error, a failed
// entry), or its exit before the banner, decides that KVM does not run
// guests, and every QEMU is killed at once; KVM works when every kernel
// printed its banner. Each QEMU is killed as soon as its kernel has shown
// what the probe needed. A kernel that shows neither within the deadline
// makes no progress under KVM: that decides too. Booting every kernel of a
// run matters: under kvm-pvm Debian's 6.12 is reported in about a second,
// while 6.1 crawls for 97 s before its own report. Probe returns an error
// only when QEMU cannot be started or ctx ends; no QEMU outlives it.
func (p kvmProbe) Probe(ctx context.Context) (*KVMProbeResult, error) {
	if len(p.Kernels) == 0 {
		return nil, errors.New("probe KVM: no kernel to probe with")
	}
	qemu := p.QEMU
	if qemu == "" {
		qemu = DefaultQEMU
	}
	if _, err := exec.LookPath(qemu); err != nil {
		return nil, ErrQEMUMissing
	}
	pr := &probing{deadline: p.Deadline, res: &KVMProbeResult{Boots: make([]KVMProbeBoot, len(p.Kernels)), Decisive: -1},
		// Room for every event of every boot (a banner or a report, and
		// the exit): a reader never blocks, nor drops one while the
		// probe reads.
		events: make(chan probeEvent, 3*len(p.Kernels))}
	if pr.deadline == 0 {
		pr.deadline = kvmProbeDeadline
	}
	defer pr.kill() // whatever happened, no QEMU outlives the probe
	first := time.Now()
	for i, k := range p.Kernels {
		pr.res.Boots[i].Kernel = k.Name
		vm, err := startProbeVM(qemu, k.Image, i, pr.events)
		if err != nil {
			return nil, fmt.Errorf("probe KVM: %w", err)
		}
		pr.vms = append(pr.vms, vm)
	}
	if err := pr.await(ctx); err != nil {
		return nil, err
	}
	pr.reap()
	pr.res.Took = time.Since(first)
	pr.res.explain()
	return pr.res, nil
}

// probing is a probe under way: its boots' QEMUs and what they showed.
type probing struct {
	res      *KVMProbeResult
	vms      []*probeVM
	events   chan probeEvent
	deadline time.Duration
	banners  int
	reported <-chan time.Time // after QEMU's first report line
}

// await reads the boots' events until they decide: every banner, a
// report (read on for reportGrace), an exit, or a boot past the deadline.
func (pr *probing) await(ctx context.Context) error {
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for decided := false; !decided; {
		select {
		case <-ctx.Done():
			return fmt.Errorf("probe KVM: %w", context.Cause(ctx))
		case now := <-ticker.C:
			decided = pr.pastDeadline(now)
		case e := <-pr.events:
			decided = pr.event(e)
		case <-pr.reported:
			decided = true
		}
	}
	return nil
}

// pastDeadline decides when a boot has shown nothing within the deadline
// of QEMU's CPU time (unless a report is deciding already).
func (pr *probing) pastDeadline(now time.Time) bool {
	if pr.reported != nil {
		return false // a report decides
	}
	for i, vm := range pr.vms {
		b := &pr.res.Boots[i]
		if elapsed, _ := vm.clock.since(now, vm.started, vm.started.UnixNano()); b.Event == "" && elapsed > pr.deadline {
			b.Event, b.At, b.CPU = ProbeDeadline, now.Sub(vm.started), vm.cpu()
			pr.res.Decisive = i
			pr.res.Why = fmt.Sprintf("%s showed no kernel banner under KVM within %s of QEMU's CPU time, and QEMU reported nothing (a nested or paravirtual KVM that runs guests far too slowly, or hangs them)", b.Kernel, pr.deadline)
			return true
		}
	}
	return false
}

// event records a boot's first event, and says whether the probe is
// decided: every boot showed its banner, or one QEMU exited; a report
// decides once its further lines are read (reported).
func (pr *probing) event(e probeEvent) (decided bool) {
	b := &pr.res.Boots[e.boot]
	if e.kind == ProbeExit && e.boot == pr.res.Decisive {
		decided = true // the reporting QEMU exited: its report is whole
	}
	if b.Event != "" || pr.reported != nil {
		return decided // this boot, or the probe, has decided already
	}
	vm := pr.vms[e.boot]
	b.Event, b.Line, b.At, b.CPU = e.kind, e.line, e.at.Sub(vm.started), vm.cpu()
	switch e.kind {
	case ProbeBanner:
		vm.cmd.Process.Kill() // it has shown what it had to
		if pr.banners++; pr.banners == len(pr.vms) {
			pr.res.Works = true
			pr.res.Why = fmt.Sprintf("every kernel printed its banner under KVM, the last %.2f s after its QEMU's start", b.At.Seconds())
			if len(pr.vms) == 1 {
				pr.res.Why = fmt.Sprintf("%s printed its banner under KVM %.2f s after QEMU's start", b.Kernel, b.At.Seconds())
			}
			return true
		}
	case ProbeReport:
		// Decided; the rest of the report ("emulation failure")
		// follows within microseconds, read for reportGrace.
		pr.res.Decisive = e.boot
		pr.reported = time.After(reportGrace)
	case ProbeExit:
		pr.res.Decisive = e.boot
		return true
	}
	return decided
}

// reap kills every QEMU, waits for each, and keeps when it ended and,
// of the decisive report, its further lines.
func (pr *probing) reap() {
	for _, vm := range pr.vms {
		vm.cmd.Process.Kill()
	}
	for i, vm := range pr.vms {
		end := <-vm.ended
		pr.res.Boots[i].Ended = end.Sub(vm.started)
		if i == pr.res.Decisive && pr.res.Boots[i].Event == ProbeReport {
			// The report's further lines, as far as QEMU printed them
			// before it was killed ("emulation failure").
			pr.res.Boots[i].Line = strings.Join(vm.report, "; ")
		}
	}
	pr.vms = nil // all reaped
}

// kill kills and reaps the QEMUs not reaped yet.
func (pr *probing) kill() {
	for _, vm := range pr.vms {
		vm.cmd.Process.Kill()
		<-vm.ended
	}
}

// explain says why KVM does not work, from the decisive boot, when the
// probe has not said it already.
func (res *KVMProbeResult) explain() {
	if res.Works || res.Why != "" {
		return
	}
	d := res.Boots[res.Decisive]
	if d.Event == ProbeReport {
		res.Why = fmt.Sprintf("QEMU reported %q %.2f s into %s's boot, after %.2f s of its CPU", d.Line, d.At.Seconds(), d.Kernel, d.CPU.Seconds())
	} else {
		res.Why = fmt.Sprintf("QEMU exited %.2f s into %s's boot, before the kernel's banner: %s", d.At.Seconds(), d.Kernel, d.Line)
	}
}

// startProbeVM starts QEMU on image under KVM, with readers of its
// console and standard error that send the probe's events.
func startProbeVM(qemu, image string, boot int, events chan<- probeEvent) (*probeVM, error) {
	conR, conW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		conR.Close()
		conW.Close()
		return nil, err
	}
	cmd := exec.Command(qemu, probeArgs(image)...)
	cmd.ExtraFiles = []*os.File{conW}
	cmd.Stdout, cmd.Stderr = errW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	conW.Close()
	errW.Close()
	if err != nil {
		conR.Close()
		errR.Close()
		return nil, fmt.Errorf("start %s: %w", qemu, err)
	}
	vm := &probeVM{cmd: cmd, started: time.Now(), ended: make(chan time.Time, 1)}
	pid := cmd.Process.Pid
	vm.clock = &clock{cpu: func() (time.Duration, error) { return processCPU(pid) }}
	send := func(kind, line string) {
		select {
		case events <- probeEvent{boot: boot, kind: kind, line: line, at: time.Now()}:
		default: // the probe has decided and reads no more
		}
	}
	console := make(chan struct{})
	go func() {
		defer close(console)
		defer conR.Close()
		readLines(conR, func(line string) bool {
			if strings.Contains(line, "Linux version ") {
				send(ProbeBanner, bound(line))
				return false
			}
			return true
		})
	}()
	stderr := make(chan []string, 1)
	go func() {
		defer errR.Close()
		var report, tail []string
		readLines(errR, func(line string) bool {
			if r, ok := kvmReportLine(line); ok {
				if report = append(report, r); len(report) == 1 {
					send(ProbeReport, r)
				}
			}
			if l := bound(strings.TrimPrefix(line, qemuPrefix)); l != "" {
				if tail = append(tail, l); len(tail) > 3 {
					tail = tail[1:]
				}
			}
			return len(report) < maxKVMReport
		})
		if len(report) == 0 {
			report = tail
		}
		stderr <- report
	}()
	go func() {
		err := cmd.Wait()
		<-console
		report := <-stderr
		vm.report = report
		last := strings.Join(report, "; ")
		switch {
		case last == "" && err != nil:
			last = err.Error()
		case last == "":
			last = "exit status 0"
		}
		send(ProbeExit, bound(last))
		vm.ended <- time.Now()
	}()
	return vm, nil
}

// cpu is the CPU time QEMU has used (0 once it is gone).
func (vm *probeVM) cpu() time.Duration {
	d, _ := vm.clock.cpu()
	return d
}

// reportGrace is how long the probe reads QEMU's standard error after the
// first line of its report before it kills QEMU, for the lines that follow
// it at once ("emulation failure" after "KVM internal error").
const reportGrace = 100 * time.Millisecond

// qemuPrefix starts QEMU's own error lines.
const qemuPrefix = "qemu-system-x86_64: "

// readLines calls line for each line of r (its end of line and carriage
// returns trimmed, at most 4 KiB kept of a longer one) until line returns
// false, then drains r to its end.
func readLines(r io.Reader, line func(string) bool) {
	br := bufio.NewReaderSize(r, 4<<10)
	more := true
	for {
		l, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			for err == bufio.ErrBufferFull { // skip the rest of a long line
				_, err = br.ReadSlice('\n')
			}
		}
		if more && len(l) > 0 {
			more = line(strings.TrimRight(string(l), "\r\n"))
		}
		if err != nil {
			return
		}
	}
}

// bound cuts a line of QEMU or the guest, which may be anything, to
// maxQEMUErrLine bytes.
func bound(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > maxQEMUErrLine {
		return s[:maxQEMUErrLine] + "…"
	}
	return s
}

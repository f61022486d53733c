package agent

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"time"

	"github.com/lpmbisect/lpmbisect/guest/bpf"
	"github.com/lpmbisect/lpmbisect/guest/workloads"
	"github.com/lpmbisect/lpmbisect/wire"
)

// options is what a boot needs from the program that starts it.
type options struct {
	// Plan is the host's run plan, decoded from the kernel command line
	// by wire.DecodePlan.
	Plan wire.Plan
	// PlanErr is why the plan could not be decoded. The boot then runs
	// nothing, since running other benchmarks than the host asked for
	// would mislabel their results: it reports the error on the results
	// channel of wire.DefaultPlan (a failed note and the trailer).
	PlanErr error
	// PID1 is true for the init process of a VM: it loads the modules and
	// writes to the virtio port or the serial fallback. Otherwise the boot
	// writes the stream to standard output and reads the host's lines
	// from standard input.
	PID1 bool
	// Infos are notes for the run log (wire.KeyInfo) gathered before
	// Run, such as a command line that could not be read.
	Infos []string
	// Faults, in the tests' guest alone, makes the boot misbehave.
	Faults Injector
}

// run does the work of a boot, in phases: set-up (modules), the results
// channel, the benchmarks, the insight pass, the info notes and the
// trailer, the insight document, and the flush. Whatever happens it tries
// to end the stream with a trailer, so the host can tell a finished run
// from a truncated one, and it recovers from panics, so that PID 1 still
// powers off. The error is for the console: the host learns what went
// wrong from the stream.
func run(o options) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("guest panic: %v\n%s", r, debug.Stack())
		}
	}()
	b := &boot{plan: o.Plan, planErr: o.PlanErr, pid1: o.PID1, infos: slices.Clone(o.Infos), faults: o.Faults}
	if b.planErr != nil {
		b.plan = wire.DefaultPlan() // its port carries the error to the host
	}
	b.markPhase(wire.PhaseToInit)
	b.setUp()
	if err := b.openChannel(); err != nil {
		return err
	}
	b.markPhase(wire.PhaseSetUp)
	return b.run()
}

// boot is the state of one boot's run, shared by its phases (its methods).
type boot struct {
	plan    wire.Plan
	planErr error
	pid1    bool
	// infos are the info notes, written after the results so that the
	// configuration lines open the stream.
	infos []string
	ch    *channel
	w     *wire.Writer
	// faults is the tests' injector (nil in the guest lpmbisect packs).
	faults Injector
}

func (b *boot) info(text string) { b.infos = append(b.infos, text) }

// setUp prepares the system for the benchmarks: in PID 1, the tests'
// injector, then the modules the host packed.
func (b *boot) setUp() {
	if b.faults != nil && b.pid1 {
		if err := b.faults.SetUp(); err != nil {
			b.info(err.Error())
		}
	}
	if b.pid1 {
		summary, problems := loadModules(wire.LoadOrderFile)
		if summary != "" {
			b.info(summary)
		}
		b.infos = append(b.infos, problems...)
	}
}

// openChannel opens the results channel of the plan's port, saying on the
// console and in an info note why it fell back to another.
func (b *boot) openChannel() error {
	ch, why, err := openChannel(b.plan.Port, b.pid1)
	if err != nil {
		return fmt.Errorf("no results channel: %w", err)
	}
	if why != "" {
		logf("%s", why)
		b.info(why)
	}
	ch.spin = b.plan.Accel.CountsInstructions()
	logf("results channel: %s %s", ch.kind, ch.path)
	b.ch = ch
	return nil
}

// run writes the stream on the open channel, then flushes and closes it,
// whether the stream ended well or not.
func (b *boot) run() (err error) {
	defer func() { err = errors.Join(err, b.flush()) }()
	return b.stream()
}

// stream writes the results stream: the benchmarks' results, the insight
// pass's info, the info notes and the trailer, then the insight document.
// It ends the stream with a trailer whatever goes wrong, and recovers from
// a panic with a failed note first.
func (b *boot) stream() (err error) {
	var ch io.Writer = b.ch
	if b.faults != nil {
		ch = b.faults.Stream(ch)
	}
	b.w = wire.NewWriter(ch)
	ended := false
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("guest panic: %v", r)
			b.w.Note(wire.KeyFailed, err.Error())
		}
		if !ended {
			err = errors.Join(err, b.w.End())
		}
	}()
	if b.planErr != nil {
		return errors.Join(b.planErr, b.w.Note(wire.KeyFailed, b.planErr.Error()))
	}
	benches, p, err := b.benchmarks()
	if err != nil {
		return err
	}
	b.markPhase(wire.PhaseBenchmarks)
	var insightDoc []byte
	if b.plan.Insight == wire.InsightOn {
		insightDoc = insightPass(benches, p, b.plan, b.faults != nil && b.faults.LowSampleRate(), b.info)
		b.markPhase(wire.PhaseInsight)
	}
	// Info notes come last so that the configuration lines open the stream.
	for _, text := range b.infos {
		if err := b.w.Note(wire.KeyInfo, text); err != nil {
			return err
		}
	}
	ended = true
	if err := b.w.End(); err != nil {
		return err
	}
	logf("wrote %d results and the trailer", b.w.Records())
	if insightDoc != nil {
		if err := b.w.Insight(insightDoc); err != nil {
			logf("insight document: %v", err) // the results are complete: the boot counts
		}
	}
	b.markPhase(wire.PhaseTrailer)
	return nil
}

// benchmarks runs the benchmarks the plan selects (package workloads) and
// writes their results, paced if the plan says so. It returns them and
// their parameters for the insight pass.
func (b *boot) benchmarks() ([]*workloads.Benchmark, workloads.Params, error) {
	accel := string(b.plan.Accel)
	if accel == "" {
		accel = "unknown"
	}
	cpuinfo, _ := os.ReadFile("/proc/cpuinfo")
	p := workloads.PlanParams(b.plan)
	p.CPUs = runtime.NumCPU()
	var out workloads.Output = b.w
	if b.faults != nil {
		out = b.faults.Results(b.w, b.ch, b.ch.drain)
	}
	rep := &workloads.Reporter{
		Out: out,
		Config: workloads.FileConfig(
			wire.KeyKernel, kernelRelease(),
			wire.KeyAccel, accel,
			wire.KeyCPU, cpuModel(string(cpuinfo)),
			wire.KeyChannel, b.ch.kind,
			wire.KeySamples, strconv.Itoa(p.Samples),
			wire.KeyRounds, strconv.Itoa(p.Rounds),
			wire.KeyLoops, strconv.Itoa(bpf.LoopIterations),
			wire.KeyVCPUs, strconv.Itoa(p.CPUs),
			wire.KeyBPFJIT, workloads.JITState(),
			wire.KeyHashSeed, workloads.HashSeed(p.Clock),
		),
		Logf: logf,
		Info: b.info,
	}
	// The kernel's view of the CPU the host emulated: which mitigations
	// every result below ran with.
	if v := wire.FormatVulnerabilities(vulnerabilities(wire.VulnerabilitiesDir)); v != "" {
		rep.Config = append(rep.Config, workloads.FileConfig(wire.KeyVulnerabilities, v)...)
	}
	if b.plan.Paced {
		g := &gate{w: b.w, ch: b.ch}
		rep.Gate, rep.Settle = g.wait, settleTime
	}

	// DecodePlan compiled the pattern already, so this fails only on a bug.
	re, err := regexp.Compile(b.plan.Bench)
	if err != nil {
		return nil, p, errors.Join(err, b.w.Note(wire.KeyFailed, err.Error()))
	}
	benches := workloads.Select(workloads.RegistryWith(b.plan.Workload, b.plan.Verify), re, p)
	if len(benches) == 0 {
		msg := fmt.Sprintf("no benchmark matches %s", wire.ParamBench.Arg(b.plan.Bench))
		logf("%s", msg)
		if err := b.w.Note(wire.KeyFailed, msg); err != nil {
			return nil, p, err
		}
	}
	if err := rep.RunAll(benches, p); err != nil {
		return nil, p, fmt.Errorf("results channel broke: %w", err)
	}
	if err := rep.End(); err != nil {
		return nil, p, fmt.Errorf("results channel broke: %w", err)
	}
	return benches, p, nil
}

// flush is the last phase: it waits until the stream has left the guest
// (channel.drain: on a virtio port, the host's ack of the flush marker) and
// closes the channel.
func (b *boot) flush() error {
	defer b.ch.close()
	begin := time.Now()
	if err := b.ch.drain(); err != nil {
		return fmt.Errorf("drain %s: %w", b.ch.path, err)
	}
	b.markPhase(wire.PhaseFlushAck)
	if b.ch.kind == wire.ChannelVirtio {
		logf("the host acknowledged the stream after %v of guest clock", time.Since(begin).Round(time.Microsecond))
	}
	return nil
}

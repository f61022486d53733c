// Command lpmbisect-guest is PID 1 of the lpmbisect initramfs. It mounts what
// it needs, loads the modules the host packed (to get a virtio-serial
// results port), runs the benchmarks the kernel command line selects, writes
// Go benchmark lines and a trailer to the host (package wire), and powers
// the VM off: on a virtio port only once the host has acknowledged the
// flush marker after its last line (wire.FlushLine; channel.drain), or
// when the wait for that runs out (ackTimeout), saying so on the console.
//
// The host's run plan comes on the kernel command line as lpmbisect.*
// parameters (wire.Plan, decoded by wire.DecodePlan; all optional, the
// defaults in brackets):
//
//	lpmbisect.bench=REGEXP   benchmarks whose full result name (without the
//	                         Benchmark prefix) matches [LPMTrie/op=lookup]
//	lpmbisect.samples=N      samples per benchmark [5]
//	lpmbisect.entries=N      trie size: dense keys [0,N) at /32 [10000]
//	lpmbisect.rounds=N       XDP test runs per sample, one bpf_loop of
//	                         10000 lookups each [20; 5 under icount:
//	                         wire.DefaultRounds]
//	lpmbisect.prefix_len=N   LPM key prefix length, 2^N ≥ entries [32]
//	lpmbisect.batch_entries=N  elements of the MapBatch maps [100000]
//	lpmbisect.accel=A        kvm, tcg or icount: the accel config line;
//	                         icount makes the unit insn/op instead of ns/op
//	lpmbisect.port=NAME      virtio-serial port name [lpmbisect.results]
//	lpmbisect.paced=1        stop before every step (the start of each
//	                         benchmark, each further sample, the trailer),
//	                         write an lpmbisect-ready note and wait for the
//	                         host's "go" line on the results channel, so the
//	                         host can let two VMs take turns [0]
//	lpmbisect.insight=0|1    1: after the samples, the insight pass: send
//	                         /proc/kallsyms, the benchmark programs' info
//	                         and calls counted per operation (see
//	                         insight.go); 0: not in this boot [off]
//	lpmbisect.count=F,G      functions the insight pass counts calls of
//	lpmbisect.kallsyms=1|0   0: the insight pass does not send kallsyms
//	                         (the host has a static symbol source) [1]
//	lpmbisect.fault=KIND     TEST-ONLY: after the first result, hang, flood,
//	                         longline, garbage, panic or exit; nobpf at once
//	                         (see fault.go)
//
// A value out of its limits (wire.Plan.Validate) or an unknown lpmbisect.*
// parameter runs nothing: the guest reports the error on the results
// channel (a failed note and the trailer), since running another benchmark
// than the host asked for would mislabel its results.
//
// Results go to the virtio-serial port called lpmbisect.port, found under
// /sys/class/virtio-ports within about 2 s of loading the modules listed
// in wire.LoadOrderFile (/lib/modules/lpmbisect/load-order); failing that, to /dev/ttyS1 in raw
// mode ("channel: serial"). Human-readable progress goes to the console.
//
// Run by hand as a process other than PID 1 (as root, on a kernel with BPF),
// it neither mounts nor loads modules nor powers off, writes the stream to
// standard output, and reads its parameters from $LPMBISECT_CMDLINE if set.
package main

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lpmbisect/lpmbisect/bpf"
	"github.com/lpmbisect/lpmbisect/wire"
	"github.com/lpmbisect/lpmbisect/workloads"
)

// settleTime is how long a paced guest waits after a benchmark before it
// says it is ready for the next step, so that the kernel frees the
// benchmark's maps and programs (on a workqueue, after close) within its own
// step. Without it, under TCG, the other guest's next sample ran up to 10 %
// slower: both VMs of a pair share one host CPU.
const settleTime = 150 * time.Millisecond

// portTimeout is how long the guest waits for the virtio port to appear.
const portTimeout = 2 * time.Second

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "lpmbisect-guest: "+format+"\n", args...)
}

func main() {
	pid1 := os.Getpid() == 1
	if pid1 {
		mountAll()
		ensureConsole()
	}
	start := time.Now()
	err := func() (err error) {
		// run recovers once the results stream is open; this catches
		// panics before that, so PID 1 still powers off.
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("guest panic: %v\n%s", r, debug.Stack())
			}
		}()
		return run(pid1)
	}()
	if err != nil {
		logf("%v", err)
	}
	logf("done in %v", time.Since(start).Round(time.Millisecond))
	if !pid1 {
		if err != nil {
			os.Exit(1)
		}
		return
	}
	powerOff()
}

// run does the work of a boot. Whatever happens it tries to end the stream
// with a trailer, so the host can tell a finished run from a truncated one.
func run(pid1 bool) (err error) {
	var infos []string
	cmdline := ""
	if b, rerr := os.ReadFile("/proc/cmdline"); rerr == nil {
		cmdline = string(b)
	} else {
		infos = append(infos, fmt.Sprintf("read /proc/cmdline: %v", rerr))
	}
	if v, ok := os.LookupEnv("LPMBISECT_CMDLINE"); ok && !pid1 {
		cmdline = v
	}
	plan, planErr := wire.DecodePlan(cmdline)
	if planErr != nil {
		planErr = fmt.Errorf("kernel command line: %w", planErr)
		plan = wire.DefaultPlan() // its port carries the error to the host
	}
	if plan.Fault == wire.FaultNoBPF && pid1 {
		if err := denyBPFSyscall(); err != nil {
			infos = append(infos, err.Error())
		}
	}

	if pid1 {
		summary, problems := loadModules(wire.LoadOrderFile)
		if summary != "" {
			infos = append(infos, summary)
		}
		infos = append(infos, problems...)
	}
	ch, why, err := openChannel(plan.Port, pid1)
	if err != nil {
		return fmt.Errorf("no results channel: %w", err)
	}
	if why != "" {
		logf("%s", why)
		infos = append(infos, why)
	}
	ch.spin = plan.Accel.CountsInstructions()
	logf("results channel: %s %s", ch.kind, ch.path)
	defer func() {
		begin := time.Now()
		if derr := ch.drain(); derr != nil {
			err = errors.Join(err, fmt.Errorf("drain %s: %w", ch.path, derr))
		} else if ch.kind == wire.ChannelVirtio {
			logf("the host acknowledged the stream after %v of guest clock", time.Since(begin).Round(time.Microsecond))
		}
		ch.close()
	}()

	w := wire.NewWriter(ch)
	ended := false
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("guest panic: %v", r)
			w.Note(wire.KeyFailed, err.Error())
		}
		if !ended {
			err = errors.Join(err, w.End())
		}
	}()
	if planErr != nil {
		return errors.Join(planErr, w.Note(wire.KeyFailed, planErr.Error()))
	}

	accel := string(plan.Accel)
	if accel == "" {
		accel = "unknown"
	}
	cpuinfo, _ := os.ReadFile("/proc/cpuinfo")
	p := workloads.PlanParams(plan)
	p.CPUs = runtime.NumCPU()
	rep := &workloads.Reporter{
		Out: &faultyOutput{w: w, ch: ch, fault: plan.Fault},
		Config: workloads.FileConfig(
			wire.KeyKernel, kernelRelease(),
			wire.KeyAccel, accel,
			wire.KeyCPU, cpuModel(string(cpuinfo)),
			wire.KeyChannel, ch.kind,
			wire.KeySamples, strconv.Itoa(p.Samples),
			wire.KeyRounds, strconv.Itoa(p.Rounds),
			wire.KeyLoops, strconv.Itoa(bpf.LoopIterations),
			wire.KeyVCPUs, strconv.Itoa(p.CPUs),
			wire.KeyBPFJIT, workloads.JITState(),
			wire.KeyHashSeed, workloads.HashSeed(p.Clock),
		),
		Logf: logf,
		Info: func(text string) { infos = append(infos, text) },
	}
	if plan.Paced {
		g := &gate{w: w, ch: ch}
		rep.Gate, rep.Settle = g.wait, settleTime
	}

	// DecodePlan compiled the pattern already, so this fails only on a bug.
	re, err := regexp.Compile(plan.Bench)
	if err != nil {
		return errors.Join(err, w.Note(wire.KeyFailed, err.Error()))
	}
	benches := workloads.Select(workloads.Registry(), re, p)
	if len(benches) == 0 {
		msg := fmt.Sprintf("no benchmark matches %s", wire.ParamBench.Arg(plan.Bench))
		logf("%s", msg)
		if err := w.Note(wire.KeyFailed, msg); err != nil {
			return err
		}
	}
	if err := rep.RunAll(benches, p); err != nil {
		return fmt.Errorf("results channel broke: %w", err)
	}
	if err := rep.End(); err != nil {
		return fmt.Errorf("results channel broke: %w", err)
	}
	var insightDoc []byte
	if plan.Insight == wire.InsightOn {
		insightDoc = insightPass(benches, p, plan, func(text string) { infos = append(infos, text) })
	}
	// Info notes come last so that the configuration lines open the stream.
	for _, text := range infos {
		if err := w.Note(wire.KeyInfo, text); err != nil {
			return err
		}
	}
	ended = true
	if err := w.End(); err != nil {
		return err
	}
	logf("wrote %d results and the trailer", w.Records())
	if insightDoc != nil {
		if err := w.Insight(insightDoc); err != nil {
			logf("insight document: %v", err) // the results are complete: the boot counts
		}
	}
	return nil
}

// openChannel opens the results channel: the virtio port called port, or
// the serial fallback. why explains a fallback.
func openChannel(port string, pid1 bool) (ch *channel, why string, err error) {
	if !pid1 {
		return &channel{fd: 1, kind: wire.ChannelStdout, path: "standard output"}, "", nil
	}
	if dev, ok := waitPort("/sys", port, portTimeout); ok {
		ch, err := openVirtioPort("/dev", "/sys", dev)
		if err == nil {
			return ch, "", nil
		}
		why = fmt.Sprintf("virtio port %s: %v; falling back to %s", port, err, serialFallback)
	} else {
		why = fmt.Sprintf("virtio port %s not found within %v (no virtio console in this kernel, or its modules are missing); falling back to %s", port, portTimeout, serialFallback)
	}
	ch, err = openSerial(serialFallback)
	return ch, why, err
}

// powerOff flushes file systems and powers the VM off. PID 1 must never
// return: that panics the kernel.
func powerOff() {
	unix.Sync()
	err := unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	logf("power off: %v", err)
	sleepForever()
}

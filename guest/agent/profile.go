package agent

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/lpmbisect/lpmbisect/guest/workloads"
	"github.com/lpmbisect/lpmbisect/wire"
)

// The profile pass (wire.ProfileDoc) runs each benchmark's operations
// again under a sampling perf event of this thread, whose BPF program
// counts the instruction pointers it interrupts, each with its caller.
//
// Why in the guest and not a TCG plugin: a plugin counting instructions
// per guest PC would be exact and invisible to the guest, but Debian's
// QEMU 7.2 ships no plugin and no qemu-plugin.h to build one, and a plugin
// would tie the profile to TCG. Under icount (shift=0, sleep=off) the
// guest clock advances one nanosecond per instruction, so a cpu-clock
// event sampling every P ns samples every P instructions: the profile is
// weighted by instructions. Two costs: code run with interrupts off is
// charged to the instruction after they are enabled again (the hrtimer
// fires then), and each sample's handler adds its own instructions to the
// boot (not to the profile: it runs with interrupts off).
//
// The event is per thread (pid 0, any CPU), so only the operations'
// thread is sampled, kernel and user: the goroutine is locked to it.
// Under KVM with a PMU the same code could sample cycles (EventCycles);
// that path is untested here. Under TCG without icount the guest clock is
// the host's, the emulator's time per instruction: not offered.

// profileMinSamples is how many samples the pass wants of each
// benchmark: it repeats the operations (up to profileMaxRepeats times)
// until it has them.
const (
	profileMinSamples = 8000
	profileMaxRepeats = 16
)

// The perf sysctls that bound a sampling event's rate.
const (
	sysctlMaxSampleRate = "/proc/sys/kernel/perf_event_max_sample_rate"
	sysctlCPUTimePct    = "/proc/sys/kernel/perf_cpu_time_max_percent"
)

// profilePass runs the profile pass on the benchmarks under the plan's
// accelerator, but for those the memory plugin profiled exactly (exact,
// by full name); never nil, a problem says why there is no profile.
// lowSampleRate keeps the kernel's maximum sample rate low instead of
// raising it (raiseSampleLimits).
func profilePass(benches []*workloads.Benchmark, p workloads.Params, plan wire.Plan, exact map[string]bool, lowSampleRate bool) *wire.ProfileDoc {
	start := time.Now()
	doc := &wire.ProfileDoc{Period: uint64(plan.ProfilePeriod)}
	switch plan.Accel {
	case wire.AccelIcount:
		doc.Event, doc.Weight = wire.EventCPUClock, "instructions"
	case wire.AccelKVM:
		doc.Event, doc.Weight = wire.EventCycles, "cycles" // untested: no KVM here
	default:
		doc.Problem = fmt.Sprintf("not offered under %s: the guest clock is the emulator's wall time, not the kernel's cost", accelName(plan.Accel))
		return doc
	}
	runtime.LockOSThread() // the event samples this thread only
	defer runtime.UnlockOSThread()
	workloads.RemoveMemlock()
	text, err := kernelText("/proc/kallsyms")
	if err != nil {
		doc.Problem = err.Error()
		return doc
	}
	doc.Text = text
	restore, limits := raiseSampleLimits(doc.Period, lowSampleRate)
	defer restore()
	doc.Limits = limits
	for _, b := range benches {
		if b.Instance == nil || !workloads.Supported(b) {
			continue
		}
		if exact[b.FullName(p)] {
			logf("profile: %s: profiled exactly by the memory plugin, not sampled", b.FullName(p))
			continue
		}
		bp := profileBenchmark(b, p, doc)
		if bp == nil {
			continue
		}
		logf("profile: %s: %d samples (%d lost, %d dropped), %d sites, %d ops, %d ns %s", bp.Benchmark, bp.Samples, bp.Lost, bp.Dropped, len(bp.Sites), bp.Ops, bp.Count, bp.Problem)
		doc.Benchmarks = append(doc.Benchmarks, *bp)
	}
	doc.Cost = uint64(time.Since(start).Nanoseconds())
	return doc
}

func accelName(a wire.Accel) string {
	if a == "" {
		return "an accelerator the host did not name"
	}
	return string(a)
}

// profileBenchmark samples one benchmark's operations; nil for one that
// has none to sample.
func profileBenchmark(b *workloads.Benchmark, p workloads.Params, doc *wire.ProfileDoc) *wire.BenchProfile {
	name := b.FullName(p)
	in, err := b.Instance(p, logf)
	if err != nil {
		return &wire.BenchProfile{Benchmark: name, Problem: err.Error()}
	}
	defer in.Close()
	if in.Operate == nil {
		return nil
	}
	bp := &wire.BenchProfile{Benchmark: name, Unit: in.Unit}
	s, err := newSampler(doc.Event, doc.Period)
	if err != nil {
		bp.Problem = err.Error()
		return bp
	}
	defer s.close()
	var due, ran uint64
	for i := 0; i < profileMaxRepeats && bp.Samples < profileMinSamples; i++ {
		if err := s.enable(); err != nil {
			bp.Problem = err.Error()
			return bp
		}
		ops, opErr := in.Operate()
		count, running, err := s.disable()
		if err := errors.Join(opErr, err); err != nil {
			bp.Problem = fmt.Sprintf("the operations failed: %v", err)
			return bp
		}
		bp.Ops += ops
		bp.Count += count
		// Due by the time the event ran, not its count: a throttled
		// cpu-clock event stops counting until the next tick, but runs on.
		// RESET zeroes the count, not the times: take the difference.
		due += max(count, running-ran) / doc.Period // each enable starts a period afresh
		ran = running
		bp.Samples, _ = s.stats()
	}
	bp.Samples, bp.Dropped = s.stats()
	if due > bp.Samples {
		bp.Lost = due - bp.Samples
	}
	bp.Sites, err = s.readSites()
	if err != nil {
		bp.Problem = err.Error()
	}
	bp.Symbols = programSymbols(in.Programs, bp.Sites)
	return bp
}

// kernelText reads the run-time address of _text from kallsyms, which
// lists it among its first lines.
func kernelText(path string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("read kallsyms: %w (is /proc mounted?)", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 0; sc.Scan() && n < 100_000; n++ {
		addr, rest, _ := strings.Cut(sc.Text(), " ")
		if rest == "T _text" {
			v, err := strconv.ParseUint(addr, 16, 64)
			if err != nil || v == 0 {
				return 0, errors.New("read kallsyms: the address of _text is hidden (run as root with kernel.kptr_restrict < 2)")
			}
			return v, nil
		}
	}
	return 0, errors.New("read kallsyms: no _text symbol")
}

// raiseSampleLimits lets the event sample at its period unthrottled: the
// kernel stops a sampling event for the rest of a tick once it took
// perf_event_max_sample_rate/HZ samples in it, and lowers that rate when
// samples take longer than perf_cpu_time_max_percent of the CPU. It sets
// the rate to four times what the period needs and switches the CPU-time
// check off (in that order: the kernel refuses to change the rate while
// the check is off), and returns what restores them and what it set.
// keepLow, which only a test's injector asks for, lowers the rate to 1000
// instead, so that throttling shows.
func raiseSampleLimits(period uint64, keepLow bool) (restore func(), limits string) {
	oldRate, errRate := os.ReadFile(sysctlMaxSampleRate)
	oldPct, errPct := os.ReadFile(sysctlCPUTimePct)
	if errRate != nil || errPct != nil {
		return func() {}, ""
	}
	rate := 4 * (1_000_000_000/period + 1)
	if keepLow {
		rate = 1000
		logf("perf_event_max_sample_rate kept low on purpose (a test): %d", rate)
	}
	var problems []string
	if err := os.WriteFile(sysctlMaxSampleRate, []byte(strconv.FormatUint(rate, 10)), 0); err != nil {
		problems = append(problems, err.Error())
	}
	if !keepLow {
		if err := os.WriteFile(sysctlCPUTimePct, []byte("0"), 0); err != nil {
			problems = append(problems, err.Error())
		}
	}
	read := func(path string) string {
		b, _ := os.ReadFile(path)
		return strings.TrimSpace(string(b))
	}
	limits = fmt.Sprintf("perf_event_max_sample_rate %s, perf_cpu_time_max_percent %s", read(sysctlMaxSampleRate), read(sysctlCPUTimePct))
	if len(problems) > 0 {
		limits += " (" + strings.Join(problems, "; ") + ")"
	}
	return func() {
		os.WriteFile(sysctlCPUTimePct, oldPct, 0)
		os.WriteFile(sysctlMaxSampleRate, oldRate, 0)
	}, limits
}

// programSymbols names the JITed images of the benchmark's programs that
// sites fall in (all of them when sites is nil), as kallsyms would without
// its tag: bpf_prog_NAME (a subprogram by its BTF name, else by its
// index).
func programSymbols(progs map[string]*ebpf.Program, sites []wire.ProfileSite) []wire.ProfileSymbol {
	var out []wire.ProfileSymbol
	for name, prog := range progs {
		info, err := prog.Info()
		if err != nil {
			continue
		}
		addrs, ok := info.JitedKsymAddrs()
		lens, _ := info.JitedFuncLens()
		if !ok || len(lens) != len(addrs) {
			continue
		}
		var funcNames []string
		if fi, err := info.FuncInfos(); err == nil {
			for _, f := range fi {
				funcNames = append(funcNames, f.Func.Name)
			}
		}
		for i, a := range addrs {
			lo, hi := uint64(a), uint64(a)+uint64(lens[i])
			used := slices.ContainsFunc(sites, func(s wire.ProfileSite) bool {
				return s.IP >= lo && s.IP < hi || s.Caller >= lo && s.Caller < hi
			})
			if sites != nil && !used {
				continue
			}
			fn := name
			switch {
			case len(funcNames) == len(addrs) && i > 0:
				fn = funcNames[i]
			case i > 0:
				fn = fmt.Sprintf("%s/%d", name, i)
			}
			out = append(out, wire.ProfileSymbol{Addr: lo, Size: uint64(lens[i]), Name: "bpf_prog_" + fn, Module: "bpf"})
		}
	}
	slices.SortFunc(out, func(a, b wire.ProfileSymbol) int { return cmp.Compare(a.Addr, b.Addr) })
	return out
}

// sampler is one sampling perf event of this thread with the counting
// program attached.
type sampler struct {
	fd    int
	link  link.Link
	prog  *ebpf.Program
	sites *ebpf.Map // {ip, caller} → samples
	stat  *ebpf.Map // [0] samples taken, [1] not stored (map full)
}

// siteKey is the key of sampler.sites.
type siteKey struct{ IP, Caller uint64 }

// newSampler opens the event (disabled) and attaches the program: with a
// BPF link (Linux 5.15), else the PERF_EVENT_IOC_SET_BPF ioctl (4.9).
func newSampler(event string, period uint64) (*sampler, error) {
	s := &sampler{fd: -1}
	var err error
	s.sites, err = ebpf.NewMap(&ebpf.MapSpec{Name: "lpmb_sites", Type: ebpf.Hash, KeySize: 16, ValueSize: 8, MaxEntries: wire.MaxProfileSites})
	if err != nil {
		return nil, fmt.Errorf("profile: sites map: %w", err)
	}
	s.stat, err = ebpf.NewMap(&ebpf.MapSpec{Name: "lpmb_pstat", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 2})
	if err != nil {
		s.close()
		return nil, fmt.Errorf("profile: stats map: %w", err)
	}
	s.prog, err = ebpf.NewProgram(&ebpf.ProgramSpec{Name: "lpmb_profile", Type: ebpf.PerfEvent, AttachType: ebpf.AttachPerfEvent,
		License: "GPL", Instructions: sampleProgram(s.sites.FD(), s.stat.FD())})
	if err != nil {
		s.close()
		return nil, fmt.Errorf("profile: load the sampling program: %w", err)
	}
	attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_CPU_CLOCK, Sample: period, Bits: unix.PerfBitDisabled,
		Read_format: unix.PERF_FORMAT_TOTAL_TIME_ENABLED | unix.PERF_FORMAT_TOTAL_TIME_RUNNING}
	if event == wire.EventCycles {
		attr.Type, attr.Config = unix.PERF_TYPE_HARDWARE, unix.PERF_COUNT_HW_CPU_CYCLES
	}
	attr.Size = uint32(unsafe.Sizeof(attr))
	s.fd, err = unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		s.close()
		return nil, fmt.Errorf("profile: perf_event_open %s: %w (a kernel without CONFIG_PERF_EVENTS?)", event, err)
	}
	s.link, err = link.AttachRawLink(link.RawLinkOptions{Target: s.fd, Program: s.prog, Attach: ebpf.AttachPerfEvent})
	if err != nil {
		if ierr := unix.IoctlSetInt(s.fd, unix.PERF_EVENT_IOC_SET_BPF, s.prog.FD()); ierr != nil {
			s.close()
			return nil, fmt.Errorf("profile: attach to the perf event: link: %w; ioctl: %w", err, ierr)
		}
	}
	return s, nil
}

func (s *sampler) enable() error {
	if err := unix.IoctlSetInt(s.fd, unix.PERF_EVENT_IOC_RESET, 0); err != nil {
		return fmt.Errorf("profile: reset the event: %w", err)
	}
	if err := unix.IoctlSetInt(s.fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
		return fmt.Errorf("profile: enable the event: %w", err)
	}
	return nil
}

// disable stops the event and returns its count and the ns it ran since
// enable.
func (s *sampler) disable() (count, running uint64, err error) {
	if err := unix.IoctlSetInt(s.fd, unix.PERF_EVENT_IOC_DISABLE, 0); err != nil {
		return 0, 0, fmt.Errorf("profile: disable the event: %w", err)
	}
	var v [3]uint64 // value, time enabled, time running
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*8)
	if n, err := unix.Read(s.fd, buf); err != nil || n != len(buf) {
		return 0, 0, fmt.Errorf("profile: read the event: %d bytes, %v", n, err)
	}
	return v[0], v[2], nil
}

// stats returns the samples the program took and those it could not store.
func (s *sampler) stats() (taken, dropped uint64) {
	s.stat.Lookup(uint32(0), &taken)
	s.stat.Lookup(uint32(1), &dropped)
	return taken, dropped
}

// readSites reads the samples by site, sorted by address and caller.
func (s *sampler) readSites() ([]wire.ProfileSite, error) {
	var out []wire.ProfileSite
	var k siteKey
	var v uint64
	it := s.sites.Iterate()
	for it.Next(&k, &v) {
		out = append(out, wire.ProfileSite{IP: k.IP, Caller: k.Caller, Samples: v})
	}
	if err := it.Err(); err != nil {
		return out, fmt.Errorf("profile: read the samples: %w", err)
	}
	slices.SortFunc(out, func(a, b wire.ProfileSite) int {
		if c := cmp.Compare(a.IP, b.IP); c != 0 {
			return c
		}
		return cmp.Compare(a.Caller, b.Caller)
	})
	return out, nil
}

func (s *sampler) close() {
	if s.link != nil {
		s.link.Close()
	}
	if s.fd >= 0 {
		unix.Close(s.fd)
	}
	if s.prog != nil {
		s.prog.Close()
	}
	for _, m := range []*ebpf.Map{s.sites, s.stat} {
		if m != nil {
			m.Close()
		}
	}
}

// ptRegsIP is the offset of ip in struct bpf_perf_event_data (its regs,
// struct pt_regs on x86-64).
const ptRegsIP = 16 * 8

// sampleProgram is the perf_event program: stat[0]++, then sites[{ip,
// caller}]++ where ip is the interrupted instruction (0 for user space:
// one bucket, the guest program's own code is not under test) and caller
// the first return address of the kernel stack (bpf_get_stack, Linux
// 4.18) that differs from ip; stat[1]++ when the map is full.
func sampleProgram(sites, stat int) asm.Instructions {
	const (
		stack  = -24 // 3 frames of bpf_get_stack
		key    = -40 // siteKey
		one    = -48 // the value 1
		statIx = -52 // u32 index into stat
	)
	bump := func(slot int32, label string) asm.Instructions {
		return asm.Instructions{
			asm.StoreImm(asm.RFP, statIx, int64(slot), asm.Word).WithSymbol(label),
			asm.LoadMapPtr(asm.R1, stat),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, statIx),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, label+"_done"),
			asm.Mov.Imm(asm.R1, 1),
			asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
			asm.Mov.Imm(asm.R0, 0).WithSymbol(label + "_done"),
		}
	}
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R7, asm.R6, ptRegsIP, asm.DWord),
		asm.Mov.Imm(asm.R8, 0),
		asm.Mov.Imm(asm.R9, 1),
		asm.StoreMem(asm.RFP, key+8, asm.R8, asm.DWord),
		asm.StoreMem(asm.RFP, one, asm.R9, asm.DWord),
		asm.JSGE.Imm(asm.R7, 0, "user"),
		asm.StoreMem(asm.RFP, key, asm.R7, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, stack),
		asm.Mov.Imm(asm.R3, 24),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnGetStack.Call(),
		asm.JSLT.Imm(asm.R0, 16, "count"),
		asm.LoadMem(asm.R1, asm.RFP, stack+8, asm.DWord),
		asm.JNE.Reg(asm.R1, asm.R7, "caller"),
		asm.JSLT.Imm(asm.R0, 24, "count"),
		asm.LoadMem(asm.R1, asm.RFP, stack+16, asm.DWord),
		asm.StoreMem(asm.RFP, key+8, asm.R1, asm.DWord).WithSymbol("caller"),
		asm.Ja.Label("count"),
		asm.StoreMem(asm.RFP, key, asm.R8, asm.DWord).WithSymbol("user"),
	}
	insns = append(insns, bump(0, "count")...)
	insns = append(insns,
		asm.LoadMapPtr(asm.R1, sites),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, key),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "new"),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.Ja.Label("exit"),
		asm.LoadMapPtr(asm.R1, sites).WithSymbol("new"),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, key),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, one),
		asm.Mov.Imm(asm.R4, int32(ebpf.UpdateNoExist)),
		asm.FnMapUpdateElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "exit"),
	)
	insns = append(insns, bump(1, "full")...)
	insns = append(insns,
		asm.Mov.Imm(asm.R0, 0).WithSymbol("exit"),
		asm.Return(),
	)
	return insns
}

package workloads

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"

	"github.com/lpmbisect/lpmbisect/guest/bpf"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Instance is a benchmark's program loaded and set up as for its samples,
// for the insight pass (see Insight).
type Instance struct {
	// Programs are the benchmark's programs by name.
	Programs map[string]*ebpf.Program
	// Operate runs the benchmark's operation a number of times, untimed
	// for the pass, and returns how many. Nil for a benchmark whose
	// operation is not worth counting (the controls, a gettid() without
	// lookups).
	Operate func() (ops uint64, err error)
	// Path is how Operate's operations reach the map code: it picks the
	// counting mechanism (see Insight).
	Path Path
	// Unit names what one of Operate's ops is when it is not one of the
	// benchmark's own operations ("lookup" for a gettid() that makes
	// several); "" when it is.
	Unit string
	// Close releases the programs and maps.
	Close func()
}

// Path is how a benchmark's operations reach the kernel's map code, which
// decides what can count calls there.
type Path int

const (
	// PathTestRun: a BPF program run by BPF_PROG_TEST_RUN (the XDP
	// benchmarks). Kprobes see it, on every symbol including .isra
	// clones; fentry is the fallback.
	PathTestRun Path = iota
	// PathSyscall: the bpf(2) map commands (MapBatch). The kernel runs
	// them under bpf_disable_instrumentation, so kprobe programs (and
	// kprobe.multi) never run there: only fentry counts, where the symbol
	// has a BTF FUNC.
	PathSyscall
	// PathKprobeProgram: map helpers called by a BPF program that a
	// kprobe runs (LPMTrieSyscall). A counting kprobe inside it is
	// skipped (bpf_prog_active): only fentry counts, as on PathSyscall.
	PathKprobeProgram
)

// kprobeBlind says why a kprobe cannot count on the path; "" for
// PathTestRun.
func (p Path) kprobeBlind() string {
	switch p {
	case PathSyscall:
		return "kprobes do not see the syscall path (bpf_disable_instrumentation)"
	case PathKprobeProgram:
		return "kprobes do not see calls from a program a kprobe runs (bpf_prog_active)"
	}
	return ""
}

// maxKallsymsBytes bounds what the pass reads of /proc/kallsyms: Linux
// 6.12 with CONFIG_KALLSYMS_ALL prints ~7 MB.
const maxKallsymsBytes = 32 << 20

// Insight is the guest's insight pass, after the timed samples: it reads
// /proc/kallsyms, the ProgramInfo of each benchmark's programs, and counts
// the calls of the functions in count (wire.SymbolMatches) during one
// sample's worth of each benchmark's operations. It never fails: what it
// cannot do is in the document's problems, counts and programs.
//
// Counting picks its mechanism by the benchmark's Path, and every count
// names it. On PathTestRun (the XDP benchmarks) a kprobe on each symbol,
// and where the kprobe does not attach, an fentry program. On PathSyscall
// and PathKprobeProgram kprobes are blind (bpf_disable_instrumentation,
// bpf_prog_active: they would count 0), so only fentry, which needs a BTF
// FUNC for the symbol: never for .isra or .constprop clones, and no
// attachment where the function has no ftrace entry (lpm_trie.c from
// Linux 6.13, c83508da5620). What attaches is found by attaching; what
// does not gets the reason in its count. Requires Linux 4.13 for the
// program sizes, 5.16 for the verified instructions; kprobe programs need
// CONFIG_KPROBES, fentry Linux 5.5 and kernel BTF.
//
// With sendKallsyms false (the host reads this kernel's symbols from a
// static source, wire.Plan.SkipKallsyms) kallsyms is read only to find
// the symbols to count, and left out of the document.
func Insight(benches []*Benchmark, p Params, count []string, sendKallsyms bool, logf func(string, ...any)) *wire.InsightDoc {
	doc := &wire.InsightDoc{Kernel: kernelRelease()}
	RemoveMemlock()
	var kallsyms []byte
	var err error
	if sendKallsyms || len(count) > 0 {
		kallsyms, err = readKallsyms("/proc/kallsyms")
	}
	switch {
	case err != nil:
		doc.KallsymsProblem = err.Error()
	case sendKallsyms:
		doc.Kallsyms = string(kallsyms)
	}
	targets := matchTargets(kallsyms, count)
	for _, b := range benches {
		if b.Instance == nil || !Supported(b) {
			continue
		}
		name := b.FullName(p)
		in, err := b.Instance(p, logf)
		if err != nil {
			doc.Problems = append(doc.Problems, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		doc.Programs = append(doc.Programs, programInfos(name, in.Programs)...)
		if in.Operate != nil && len(count) > 0 {
			doc.Counts = append(doc.Counts, countCalls(name, in, count, targets, logf)...)
		}
		in.Close()
	}
	return doc
}

// Supported reports whether the running kernel has what b requires (the
// timed run said why not, if not).
func Supported(b *Benchmark) bool {
	for _, req := range append([]Requirement{BPFSyscall}, b.Requires...) {
		if req.Probe() != nil {
			return false
		}
	}
	return true
}

func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// readKallsyms reads kallsyms within maxKallsymsBytes; all-zero addresses
// (not root, or kptr_restrict) are an error.
func readKallsyms(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read kallsyms: %w (is /proc mounted?)", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKallsymsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read kallsyms: %w", err)
	}
	if len(b) > maxKallsymsBytes {
		return nil, fmt.Errorf("read kallsyms: more than %d bytes", maxKallsymsBytes)
	}
	// Per-CPU symbols are absolute and start at 0; _text is not.
	i := bytes.Index(b, []byte(" T _text\n"))
	switch {
	case i < 0:
		return nil, errors.New("read kallsyms: no _text symbol (not the kernel's kallsyms?)")
	case bytes.Count(b[max(0, i-16):i], []byte("0")) == 16:
		return nil, errors.New("read kallsyms: addresses are hidden (run as root with kernel.kptr_restrict < 2)")
	}
	return codeSymbols(b), nil
}

// codeSymbols keeps the lines of the kernel's own code symbols (types t,
// T, w, W; no module's): what the size diff of functions and the
// disassembly need. It halves what the guest sends, and so how much of it
// is still on its way when the guest powers off; sizes of code symbols do
// not change, since data symbols do not lie in the text sections.
func codeSymbols(kallsyms []byte) []byte {
	out := make([]byte, 0, len(kallsyms)/2)
	for line := range bytes.Lines(kallsyms) {
		f := bytes.Fields(line)
		if len(f) == 3 && len(f[1]) == 1 && bytes.ContainsAny(f[1], "tTwW") {
			out = append(out, line...)
		}
	}
	return out
}

// matchTargets returns, for each function to count, the text symbols of
// kallsyms that are it or its clones, sorted.
func matchTargets(kallsyms []byte, count []string) map[string][]string {
	out := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(kallsyms))
	sc.Buffer(make([]byte, 0, 1024), 1024)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || len(f[1]) != 1 || !strings.ContainsAny(f[1], "tTwW") {
			continue // a module's symbol, or not code
		}
		for _, c := range count {
			if wire.SymbolMatches(f[2], c) && !slices.Contains(out[c], f[2]) {
				out[c] = append(out[c], f[2])
			}
		}
	}
	for _, syms := range out {
		sort.Strings(syms)
	}
	return out
}

// programInfos reads what the kernel says of each program.
func programInfos(bench string, progs map[string]*ebpf.Program) []wire.ProgramInfo {
	var names []string
	for n := range progs {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []wire.ProgramInfo
	for _, n := range names {
		pi := wire.ProgramInfo{Benchmark: bench, Program: n}
		info, err := progs[n].Info()
		if err != nil {
			pi.Problem = fmt.Sprintf("program info: %v", err)
			out = append(out, pi)
			continue
		}
		var problems []string
		if v, err := info.TranslatedSize(); err == nil {
			pi.TranslatedBytes = v
		} else {
			problems = append(problems, "translated size: "+err.Error())
		}
		if v, err := info.JitedSize(); err == nil {
			pi.JitedBytes = int(v)
		} else {
			problems = append(problems, "JITed size: "+err.Error())
		}
		if v, ok := info.VerifiedInstructions(); ok {
			pi.VerifiedInsns = int(v)
		}
		if code, ok := info.JitedInsns(); ok {
			sum := sha256.Sum256(code)
			pi.JitedSHA256 = hex.EncodeToString(sum[:])
			if len(code) <= wire.MaxJitedBytes {
				pi.Jited = code
			}
		}
		pi.Problem = strings.Join(problems, "; ")
		out = append(out, pi)
	}
	return out
}

// counter is one attached counting program.
type counter struct {
	cc   wire.CallCount
	link link.Link
}

// countCalls attaches a counting program to every symbol of the targets,
// by the mechanism in.Path allows, runs in.Operate once, and returns the
// calls per symbol. A function without a symbol, or whose symbols attach
// to nothing, gets one count saying why.
func countCalls(bench string, in *Instance, count []string, targets map[string][]string, logf func(string, ...any)) []wire.CallCount {
	var out []wire.CallCount
	n := 0
	for _, c := range count {
		n += max(1, len(targets[c]))
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: uint32(max(n, 1))})
	if err != nil {
		for _, c := range count {
			out = append(out, wire.CallCount{Benchmark: bench, Function: c, Unit: in.Unit, Why: fmt.Sprintf("counter map: %v", err)})
		}
		return out
	}
	defer m.Close()
	var counters []*counter
	defer func() {
		for _, k := range counters {
			if k.link != nil {
				k.link.Close()
			}
		}
	}()
	for _, c := range count {
		syms := targets[c]
		if len(syms) == 0 {
			out = append(out, wire.CallCount{Benchmark: bench, Function: c, Unit: in.Unit, Why: "no such function in kallsyms (inlined into every caller, or not built)"})
			continue
		}
		for _, sym := range syms {
			k := &counter{cc: wire.CallCount{Benchmark: bench, Function: c, Symbol: sym, Unit: in.Unit}}
			k.link, k.cc.Mechanism, k.cc.Why = attachCounter(sym, in.Path, m, uint32(len(counters)))
			counters = append(counters, k)
		}
	}
	before := readCounters(m, len(counters))
	ops, err := in.Operate()
	after := readCounters(m, len(counters))
	for i, k := range counters {
		if k.cc.Mechanism != "" {
			if err != nil {
				k.cc.Mechanism, k.cc.Why = "", fmt.Sprintf("the operations failed: %v", err)
			} else {
				k.cc.Calls, k.cc.Ops = after[i]-before[i], ops
			}
		}
		out = append(out, k.cc)
	}
	if logf != nil {
		for _, c := range out {
			logf("insight: %s: %s %s: %d calls in %d ops %s", bench, c.Symbol, c.Mechanism, c.Calls, c.Ops, c.Why)
		}
	}
	return out
}

func readCounters(m *ebpf.Map, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		m.Lookup(uint32(i), &out[i])
	}
	return out
}

// attachCounter attaches a program that adds 1 to slot of m on every call
// of sym: on PathTestRun a kprobe, else fentry; on the other paths fentry
// only, since a kprobe there attaches but never runs. It returns the
// mechanism that attached, or why none did.
func attachCounter(sym string, path Path, m *ebpf.Map, slot uint32) (link.Link, string, string) {
	var kerr error
	if path == PathTestRun {
		prog, err := counterProgram(ebpf.Kprobe, ebpf.AttachNone, "", m, slot)
		if err == nil {
			l, err := link.Kprobe(sym, prog, nil)
			prog.Close() // the link holds it
			if err == nil {
				return l, wire.MechanismKprobe, ""
			}
			kerr = err
		} else {
			kerr = err
		}
	}
	fprog, ferr := counterProgram(ebpf.Tracing, ebpf.AttachTraceFEntry, sym, m, slot)
	if ferr == nil {
		l, err := link.AttachTracing(link.TracingOptions{Program: fprog})
		fprog.Close()
		if err == nil {
			return l, wire.MechanismFentry, ""
		}
		ferr = err
	}
	_, berr := btf.LoadKernelSpec() // cached by cilium/ebpf
	return nil, "", whyNotCounted(sym, path, kerr, ferr, berr == nil)
}

// whyNotCounted says in one line why neither mechanism counts sym on the
// path, from the errors of the attempts (kerr nil when no kprobe was
// tried) and whether the kernel has BTF.
func whyNotCounted(sym string, path Path, kerr, ferr error, kernelBTF bool) string {
	fentry := "fentry: " + oneLine(ferr)
	if errors.Is(ferr, ebpf.ErrNotSupported) {
		// cilium/ebpf found no BTF FUNC of that name, or no kernel BTF.
		if !kernelBTF {
			fentry = "no kernel BTF, fentry cannot attach"
		} else if _, suffix, clone := strings.Cut(sym, "."); clone {
			kind, _, _ := strings.Cut(suffix, ".")
			fentry = "a ." + kind + " clone has no BTF FUNC, fentry cannot attach"
		} else {
			fentry = "no BTF FUNC for it, fentry cannot attach"
		}
	}
	if path != PathTestRun {
		return fmt.Sprintf("%s: %s; %s", sym, fentry, path.kprobeBlind())
	}
	why := "not traceable"
	if errors.Is(kerr, os.ErrNotExist) || errors.Is(kerr, ebpf.ErrNotSupported) {
		why = "no kprobes in the kernel, or not traceable"
	}
	return fmt.Sprintf("%s: kprobe: %v; %s", why, oneLine(kerr), fentry)
}

func oneLine(err error) string {
	if err == nil {
		return "ok"
	}
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// counterProgram is `counts[slot]++` as a program of type t.
func counterProgram(t ebpf.ProgramType, at ebpf.AttachType, attachTo string, m *ebpf.Map, slot uint32) (*ebpf.Program, error) {
	insns := asm.Instructions{
		asm.StoreImm(asm.RFP, -4, int64(slot), asm.Word),
		asm.LoadMapPtr(asm.R1, m.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "exit"),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("exit"),
		asm.Return(),
	}
	return ebpf.NewProgram(&ebpf.ProgramSpec{Name: "lpmb_count", Type: t, AttachType: at, AttachTo: attachTo, License: "GPL", Instructions: insns})
}

// lpmInstance loads an LPM trie benchmark's program as lpmRun does, with
// the trie filled when the operation needs it full; Operate runs one
// sample's worth of test runs (Params.Rounds × bpf.LoopIterations
// operations; PathTestRun). The trie resets of insert and delete are
// syscalls, which the kprobes that count here do not see.
func lpmInstance(op bpf.LPMOp, keys bpf.KeyOrder, layout bpf.KeyLayout) func(Params, func(string, ...any)) (*Instance, error) {
	return func(p Params, logf func(string, ...any)) (*Instance, error) {
		r := &Run{Params: p, Logf: logf, Info: func(string) {}}
		b, closeAll, err := lpmPrepare(r, op, keys, layout)
		if err != nil {
			return nil, err
		}
		in := &Instance{Programs: map[string]*ebpf.Program{bpf.LPMBench{Op: op, Layout: layout}.ProgName(): b.prog}, Path: PathTestRun, Close: closeAll}
		if op.UsesTrie() {
			in.Operate = func() (uint64, error) {
				s, err := b.sample(p.Rounds)
				return s.Ops, err
			}
		}
		return in, nil
	}
}

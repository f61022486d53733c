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
	"github.com/cilium/ebpf/link"

	"github.com/lpmbisect/lpmbisect/bpf"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Instance is a benchmark's program loaded and set up as for its samples,
// for the insight pass (see Insight).
type Instance struct {
	// Programs are the benchmark's programs by name.
	Programs map[string]*ebpf.Program
	// Operate runs the benchmark's operation a number of times, untimed
	// for the pass, and returns how many. Nil for a benchmark whose
	// operation is not worth counting (the controls).
	Operate func() (ops uint64, err error)
	// Close releases the programs and maps.
	Close func()
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
// Counting uses a kprobe on each symbol, since the benchmarks run their
// operations in XDP test runs, a path kprobes see; where the kprobe does
// not attach, an fentry program (which needs a BTF FUNC for the symbol,
// so never for .isra or .constprop clones). Calls made from the syscall
// path are invisible to kprobes (bpf_disable_instrumentation), and calls
// from BPF programs run by a kprobe too (bpf_prog_active): no benchmark
// counted here runs on either. Requires Linux 4.13 for the program sizes,
// 5.16 for the verified instructions; kprobe programs need
// CONFIG_KPROBES, fentry Linux 5.5 and kernel BTF.
func Insight(benches []*Benchmark, p Params, count []string, logf func(string, ...any)) *wire.InsightDoc {
	doc := &wire.InsightDoc{Kernel: kernelRelease()}
	RemoveMemlock()
	kallsyms, err := readKallsyms("/proc/kallsyms")
	if err != nil {
		doc.KallsymsProblem = err.Error()
	} else {
		doc.Kallsyms = string(kallsyms)
	}
	targets := matchTargets(kallsyms, count)
	for _, b := range benches {
		if b.Instance == nil || !supported(b) {
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
			doc.Counts = append(doc.Counts, countCalls(name, in.Operate, count, targets, logf)...)
		}
		in.Close()
	}
	return doc
}

// supported reports whether the running kernel has what b requires (the
// timed run said why not, if not).
func supported(b *Benchmark) bool {
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
// runs operate once, and returns the calls per symbol. A function without
// a symbol, or whose symbols attach to nothing, gets one count saying why.
func countCalls(bench string, operate func() (uint64, error), count []string, targets map[string][]string, logf func(string, ...any)) []wire.CallCount {
	var out []wire.CallCount
	n := 0
	for _, c := range count {
		n += max(1, len(targets[c]))
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: uint32(max(n, 1))})
	if err != nil {
		for _, c := range count {
			out = append(out, wire.CallCount{Benchmark: bench, Function: c, Why: fmt.Sprintf("counter map: %v", err)})
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
			out = append(out, wire.CallCount{Benchmark: bench, Function: c, Why: "no such function in kallsyms (inlined into every caller, or not built)"})
			continue
		}
		for _, sym := range syms {
			k := &counter{cc: wire.CallCount{Benchmark: bench, Function: c, Symbol: sym}}
			k.link, k.cc.Mechanism, k.cc.Why = attachCounter(sym, m, uint32(len(counters)))
			counters = append(counters, k)
		}
	}
	before := readCounters(m, len(counters))
	ops, err := operate()
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
// of sym: a kprobe, else fentry. It returns the mechanism that attached,
// or why none did.
func attachCounter(sym string, m *ebpf.Map, slot uint32) (link.Link, string, string) {
	prog, err := counterProgram(ebpf.Kprobe, ebpf.AttachNone, "", m, slot)
	var kerr error
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
	fprog, ferr := counterProgram(ebpf.Tracing, ebpf.AttachTraceFEntry, sym, m, slot)
	if ferr == nil {
		l, err := link.AttachTracing(link.TracingOptions{Program: fprog})
		fprog.Close()
		if err == nil {
			return l, wire.MechanismFentry, ""
		}
		ferr = err
	}
	why := "not traceable"
	if errors.Is(kerr, os.ErrNotExist) || errors.Is(kerr, ebpf.ErrNotSupported) {
		why = "no kprobes in the kernel, or not traceable"
	}
	return nil, "", fmt.Sprintf("%s: kprobe: %v; fentry: %v", why, oneLine(kerr), oneLine(ferr))
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
// operations).
func lpmInstance(op bpf.LPMOp, keys bpf.KeyOrder) func(Params, func(string, ...any)) (*Instance, error) {
	return func(p Params, logf func(string, ...any)) (*Instance, error) {
		r := &Run{Params: p, Logf: logf, Info: func(string) {}}
		b, closeAll, err := lpmPrepare(r, op, keys)
		if err != nil {
			return nil, err
		}
		in := &Instance{Programs: map[string]*ebpf.Program{bpf.LPMBench{Op: op}.ProgName(): b.prog}, Close: closeAll}
		if op.UsesTrie() {
			in.Operate = func() (uint64, error) {
				s, err := b.sample(p.Rounds)
				return s.Ops, err
			}
		}
		return in, nil
	}
}

package wire

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The insight pass is what a guest does once per kernel, after its timed
// samples, to explain a comparison rather than to measure it: it reads
// /proc/kallsyms, the cilium/ebpf ProgramInfo of the benchmark programs,
// and counts calls of some kernel functions per benchmark operation. The
// host asks for it with two parameters:
//
//	lpmbisect.insight=0|1   1: run the pass after the samples; 0: armed,
//	                        but not in this boot
//	lpmbisect.count=F,G     the functions to count (base names; each
//	                        counts every clone F.isra.0, F.constprop.1, …)
//	lpmbisect.kallsyms=1|0  1: send /proc/kallsyms in the document; 0: the
//	                        host has a static symbol source for this kernel
//	                        (a vmlinux, a -dbg package), so the guest reads
//	                        kallsyms only to find the symbols to count
//
// A plan that asks for the pass on one boot writes lpmbisect.insight on
// every boot of the run, 0 or 1, with the same lpmbisect.count and
// lpmbisect.kallsyms, so that the command lines of the timed boots and of
// the counting boot differ in one byte, not in length: the pass must not
// move the timed numbers, and under icount a longer command line is more
// instructions before the samples. For the same reason lpmbisect.kallsyms
// is written as 1 or 0, never left out: sides with and without a static
// source have command lines of one length.
//
// The guest sends one document (InsightDoc), gzip-compressed JSON, as
// KeyInsight lines of base64 after the trailer: a document lost or cut
// short in transit costs only itself (gzip's checksum tells), never the
// boot's results. A guest's output is untrusted: the host bounds the compressed
// bytes (MaxInsightBytes), the decompressed JSON (maxInsightJSONBytes) and
// every list in it (InsightDoc.Check).

// Parameters of the insight pass (see Params).
const (
	ParamInsight Param = "lpmbisect.insight" // Plan.Insight: 1 or 0, written when the plan is armed
	ParamCount   Param = "lpmbisect.count"   // Plan.Count, comma-separated, written when the plan is armed
	// ParamKallsyms is Plan.SkipKallsyms: 0 to skip, 1 to send; written
	// when the plan is armed.
	ParamKallsyms Param = "lpmbisect.kallsyms"
)

// KeyInsight lines carry the insight document: base64 of consecutive
// chunks of its gzip bytes. They are notes (so plain benchstat skips them),
// but Decode keeps them out of Stream.Notes and joins them into
// Stream.Insight.
const KeyInsight = "lpmbisect-insight"

// Limits of the insight pass.
const (
	// MaxCount bounds the functions counted, and MaxCountLen the bytes of
	// lpmbisect.count: the command line is 2048 bytes in all, Bench may
	// take 1024 of them.
	MaxCount    = 32
	MaxCountLen = 384
	// MaxInsightBytes bounds the compressed document. The results channel
	// takes 8 MiB in all (vmrunner.DefaultLimits); Linux 6.12's kallsyms,
	// ~7 MB of text, compresses to about 2 MB.
	MaxInsightBytes = 4 << 20
	// maxInsightJSONBytes bounds the document once decompressed.
	maxInsightJSONBytes = 48 << 20
	// maxInsightPrograms and maxInsightCounts bound the lists of a
	// document; MaxJitedBytes the JITed code it carries per program.
	maxInsightPrograms = 256
	maxInsightCounts   = 1024
	MaxJitedBytes      = 4096
	// insightChunk is the gzip bytes per KeyInsight line: 43 KiB of
	// base64, under the results channel's 64 KiB line limit.
	insightChunk = 32 << 10
)

// ErrInsightTooLarge is wrapped when a document exceeds a limit.
var ErrInsightTooLarge = errors.New("insight document too large")

// InsightDoc is what the guest's insight pass found on one kernel.
type InsightDoc struct {
	// Kernel is the guest's release (uname -r).
	Kernel string `json:"kernel"`
	// Kallsyms is /proc/kallsyms as root read it; "" with
	// KallsymsProblem saying why.
	Kallsyms        string `json:"kallsyms,omitempty"`
	KallsymsProblem string `json:"kallsyms_problem,omitempty"`
	// Programs are the benchmark programs as the kernel loaded them.
	Programs []ProgramInfo `json:"programs,omitempty"`
	// Counts are the calls counted, per benchmark and symbol.
	Counts []CallCount `json:"counts,omitempty"`
	// Profile is what the profile pass sampled (ProfileDoc); nil when
	// it was not armed.
	Profile *ProfileDoc `json:"profile,omitempty"`
	// Memory is what the memory pass ran (MemoryDoc); nil when it was
	// not armed.
	Memory *MemoryDoc `json:"memory,omitempty"`
	// Problems are what the pass could not do, one line each.
	Problems []string `json:"problems,omitempty"`
}

// ProgramInfo is one loaded program of a benchmark (cilium/ebpf
// ProgramInfo). Requires Linux 4.13 for the sizes, 5.16 for VerifiedInsns.
type ProgramInfo struct {
	Benchmark string `json:"benchmark"`
	Program   string `json:"program"`
	// TranslatedBytes is the size of the program after the verifier's
	// rewrites (xlated), in bytes: 8 per instruction.
	TranslatedBytes int `json:"translated_bytes"`
	// JitedBytes is the size of the JITed code, all functions; 0 without
	// the JIT.
	JitedBytes int `json:"jited_bytes"`
	// VerifiedInsns is the instructions the verifier processed; 0 when
	// the kernel does not say (before 5.16).
	VerifiedInsns int `json:"verified_insns"`
	// JitedSHA256 is the hex SHA-256 of the JITed code, "" without it;
	// Jited is the code itself when at most MaxJitedBytes.
	JitedSHA256 string `json:"jited_sha256,omitempty"`
	Jited       []byte `json:"jited,omitempty"`
	// Problem says what could not be read.
	Problem string `json:"problem,omitempty"`
}

// Mechanisms of a CallCount.
const (
	MechanismKprobe = "kprobe"
	MechanismFentry = "fentry"
)

// CallCount is the calls of one kernel symbol during a number of
// operations of one benchmark.
type CallCount struct {
	Benchmark string `json:"benchmark"`
	// Function is the name the host asked for; Symbol the kallsyms name
	// counted ("" when none matched).
	Function string `json:"function"`
	Symbol   string `json:"symbol,omitempty"`
	// Mechanism is MechanismKprobe or MechanismFentry; "" when the
	// symbol could not be counted, and Why says why.
	Mechanism string `json:"mechanism,omitempty"`
	Calls     uint64 `json:"calls"`
	Ops       uint64 `json:"ops"`
	// Unit names one of Ops when it is not one of the benchmark's own
	// operations ("lookup": LPMTrieSyscall counts per lookup, not per
	// gettid()); "" when it is.
	Unit string `json:"unit,omitempty"`
	Why  string `json:"why,omitempty"`
}

// PerOp returns Calls/Ops, or 0 without operations.
func (c CallCount) PerOp() float64 {
	if c.Ops == 0 {
		return 0
	}
	return float64(c.Calls) / float64(c.Ops)
}

// Check applies the list limits to a decoded document.
func (d *InsightDoc) Check() error {
	switch {
	case len(d.Programs) > maxInsightPrograms:
		return fmt.Errorf("%w: %d programs, more than %d", ErrInsightTooLarge, len(d.Programs), maxInsightPrograms)
	case len(d.Counts) > maxInsightCounts:
		return fmt.Errorf("%w: %d counts, more than %d", ErrInsightTooLarge, len(d.Counts), maxInsightCounts)
	}
	for _, p := range d.Programs {
		if len(p.Jited) > MaxJitedBytes {
			return fmt.Errorf("%w: %d bytes of JITed code for %s, more than %d", ErrInsightTooLarge, len(p.Jited), p.Program, MaxJitedBytes)
		}
	}
	if d.Memory != nil && len(d.Memory.Benchmarks) > maxInsightPrograms {
		return fmt.Errorf("%w: memory counts of %d benchmarks, more than %d", ErrInsightTooLarge, len(d.Memory.Benchmarks), maxInsightPrograms)
	}
	if d.Memory != nil {
		for _, b := range d.Memory.Benchmarks {
			if len(b.Programs) > maxProfileSymbols {
				return fmt.Errorf("%w: %d program images for %s, more than %d", ErrInsightTooLarge, len(b.Programs), b.Benchmark, maxProfileSymbols)
			}
		}
	}
	return d.Profile.check()
}

// EncodeInsight compresses a document for Writer.Insight. A document over
// MaxInsightBytes compressed is ErrInsightTooLarge: the guest then sends
// it without its kallsyms.
func EncodeInsight(d *InsightDoc) ([]byte, error) {
	if err := d.Check(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if err := json.NewEncoder(zw).Encode(d); err != nil {
		return nil, fmt.Errorf("encode insight: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("encode insight: %w", err)
	}
	if b.Len() > MaxInsightBytes {
		return nil, fmt.Errorf("%w: %d compressed bytes, more than %d", ErrInsightTooLarge, b.Len(), MaxInsightBytes)
	}
	return b.Bytes(), nil
}

// DecodeInsight decompresses and parses a document from a guest, within
// MaxInsightBytes, maxInsightJSONBytes and InsightDoc.Check.
func DecodeInsight(gz []byte) (*InsightDoc, error) {
	if len(gz) > MaxInsightBytes {
		return nil, fmt.Errorf("decode insight: %w: %d compressed bytes", ErrInsightTooLarge, len(gz))
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("decode insight: %w (not a document of this guest?)", err)
	}
	lr := &io.LimitedReader{R: zr, N: maxInsightJSONBytes + 1}
	var d InsightDoc
	if err := json.NewDecoder(lr).Decode(&d); err != nil {
		if lr.N <= 0 {
			return nil, fmt.Errorf("decode insight: %w: more than %d bytes of JSON", ErrInsightTooLarge, maxInsightJSONBytes)
		}
		return nil, fmt.Errorf("decode insight: %w", err)
	}
	if err := d.Check(); err != nil {
		return nil, fmt.Errorf("decode insight: %w", err)
	}
	return &d, nil
}

// Insight writes a compressed document (EncodeInsight) as KeyInsight
// lines, once, after End. The document follows the trailer so that one
// cut short in transit (a guest that powers off while the virtio queue
// still holds data the host was slow to read) costs only itself: the
// trailer proves the results, gzip's checksum the document.
func (w *Writer) Insight(gz []byte) error {
	if !w.ended {
		return errors.New("write insight: before the trailer (End first: the trailer proves the results, gzip's checksum the document)")
	}
	if len(gz) > MaxInsightBytes {
		return fmt.Errorf("write insight: %w", ErrInsightTooLarge)
	}
	for len(gz) > 0 {
		n := min(len(gz), insightChunk)
		line := KeyInsight + ": " + base64.StdEncoding.EncodeToString(gz[:n]) + "\n"
		if _, err := io.WriteString(w.out, line); err != nil {
			return fmt.Errorf("write insight: %w", err)
		}
		gz = gz[n:]
	}
	return nil
}

// insightLines joins KeyInsight lines as Decode meets them, within
// MaxInsightBytes.
type insightLines struct {
	data    []byte
	problem string
}

func (l *insightLines) add(text string) {
	if l.problem != "" {
		return
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(text))
	switch {
	case err != nil:
		l.problem = "an insight line is not base64"
	case len(l.data)+len(b) > MaxInsightBytes:
		l.problem = fmt.Sprintf("insight document over %d bytes", MaxInsightBytes)
	default:
		l.data = append(l.data, b...)
		return
	}
	l.data = nil
}

// SymbolMatches reports whether the kallsyms name sym is the function
// target of lpmbisect.count: the name itself or a GCC clone of it
// ("longest_prefix_match.isra.0"), not a .cold part.
func SymbolMatches(sym, target string) bool {
	if sym == target {
		return true
	}
	rest, ok := strings.CutPrefix(sym, target+".")
	return ok && rest != "" && rest != "cold" && !strings.HasPrefix(rest, "cold.") && !strings.Contains(rest, ".cold")
}

// CountList splits Plan.Count into its names.
func (p Plan) CountList() []string {
	if p.Count == "" {
		return nil
	}
	return strings.Split(p.Count, ",")
}

// checkCount checks the lpmbisect.count list: at most MaxCount C
// identifiers, MaxCountLen bytes joined.
func checkCount(joined string) error {
	if joined == "" {
		return nil
	}
	count := strings.Split(joined, ",")
	if len(count) > MaxCount || len(joined) > MaxCountLen {
		return &ParamError{ParamCount, joined, fmt.Errorf("%w: %d functions in %d bytes, more than %d or %d", ErrOutOfRange, len(count), len(joined), MaxCount, MaxCountLen)}
	}
	for _, f := range count {
		if !isIdentifier(f) {
			return &ParamError{ParamCount, joined, fmt.Errorf("%w: %q is not a C function name", ErrMalformed, f)}
		}
	}
	return nil
}

func isIdentifier(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func (p Plan) insightArgs() []string {
	var args []string
	if p.Insight != InsightOff {
		args = append(args, ParamInsight.Arg(string(p.Insight)))
	}
	if p.Count != "" {
		args = append(args, ParamCount.Arg(p.Count))
	}
	if p.Insight != InsightOff || p.SkipKallsyms {
		args = append(args, kallsymsArg(!p.SkipKallsyms))
	}
	if p.ProfilePeriod > 0 {
		args = append(args, ParamProfile.Arg(strconv.Itoa(p.ProfilePeriod)))
	}
	if p.Memory || p.Deferred {
		args = append(args, memoryArg(p.Deferred))
	}
	return args
}

// kallsymsArg is lpmbisect.kallsyms=1 (send) or =0.
func kallsymsArg(send bool) string {
	if send {
		return ParamKallsyms.Arg("1")
	}
	return ParamKallsyms.Arg("0")
}

// InsightArgs returns the kernel arguments that arm the insight pass with
// the functions to count (lpmbisect.insight=0 lpmbisect.count=…
// lpmbisect.kallsyms=1), for a host that adds the pass to a plan it
// encoded without: ArmInsight then switches it on for one boot, and
// SkipKallsyms keeps a kernel's kallsyms at home. The error is a
// *ParamError.
func InsightArgs(count []string) ([]string, error) {
	p := Plan{Insight: InsightArmed, Count: strings.Join(count, ",")}
	if err := checkCount(p.Count); err != nil {
		return nil, err
	}
	return p.insightArgs(), nil
}

// ArmInsight returns the arguments of an armed plan (lpmbisect.insight=0)
// with the pass switched on for this boot: the same arguments, same
// length, with lpmbisect.insight=1. Arguments of a plan that is not armed
// are returned as they are.
func ArmInsight(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == ParamInsight.Arg("0") {
			a = ParamInsight.Arg("1")
		}
		out[i] = a
	}
	return out
}

// SkipKallsyms returns the arguments of an armed plan for a kernel whose
// symbols the host reads from a static source: the same arguments, same
// length, with lpmbisect.kallsyms=0, so that its guest does not read,
// compress and send kallsyms it would only throw away. Arguments without
// lpmbisect.kallsyms are returned as they are.
func SkipKallsyms(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == kallsymsArg(true) {
			a = kallsymsArg(false)
		}
		out[i] = a
	}
	return out
}

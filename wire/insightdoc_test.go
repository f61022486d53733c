package wire

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"
)

func TestInsightStreamRoundTrip(t *testing.T) {
	doc := &InsightDoc{
		Kernel:   "6.1.0-57-cloud-amd64",
		Kallsyms: kallsymsText(20000),
		Programs: []ProgramInfo{{Benchmark: "LPMTrie/op=lookup", Program: "lpm_lookup", TranslatedBytes: 800, JitedBytes: 512, VerifiedInsns: 61, JitedSHA256: "ab", Jited: []byte{0xcc, 0x90}}},
		Counts: []CallCount{{Benchmark: "LPMTrie/op=lookup", Function: "longest_prefix_match", Symbol: "longest_prefix_match.isra.0",
			Mechanism: MechanismKprobe, Calls: 100000, Ops: 10000}},
	}
	gz, err := EncodeInsight(doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(gz) <= insightChunk {
		t.Fatalf("EncodeInsight = %d bytes; want more than one line's %d for this test", len(gz), insightChunk)
	}
	var b bytes.Buffer
	w := NewWriter(&b)
	r := benchfmt.Result{Name: []byte("LPMTrie/op=lookup"), Iters: 1, Values: []benchfmt.Value{{Value: 1, Unit: "insn/op"}}}
	if err := w.Result(&r); err != nil {
		t.Fatal(err)
	}
	if err := w.Insight(gz); err == nil {
		t.Fatal("Writer.Insight before End succeeded; want an error (the document follows the trailer)")
	}
	if err := w.End(); err != nil {
		t.Fatal(err)
	}
	if err := w.Insight(gz); err != nil {
		t.Fatal(err)
	}
	s := Decode(b.Bytes())
	if !s.Complete || len(s.Results) != 1 || len(s.Notes) != 0 || s.InsightProblem != "" {
		t.Fatalf("Decode = complete %v (%s), %d results, notes %v, insight problem %q; want a complete stream of 1 result, no notes", s.Complete, s.Problem, len(s.Results), s.Notes, s.InsightProblem)
	}
	got, err := DecodeInsight(s.Insight)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, doc) {
		t.Errorf("DecodeInsight(Decode(stream)) = %+v; want %+v", got.Counts, doc.Counts)
	}
	if pc := got.Counts[0].PerOp(); pc != 10 {
		t.Errorf("PerOp() = %v; want 10", pc)
	}

	// A document cut short in transit costs only itself: the results
	// stand, and gzip's checksum tells the document is incomplete.
	cut := b.Bytes()[:b.Len()-insightChunk/2]
	s = Decode(cut)
	if !s.Complete || len(s.Results) != 1 {
		t.Errorf("Decode(stream with its insight cut short) = complete %v (%s), %d results; want the complete results", s.Complete, s.Problem, len(s.Results))
	}
	if _, err := DecodeInsight(s.Insight); err == nil && s.InsightProblem == "" {
		t.Errorf("Decode(stream with its insight cut short): the document decoded; want an error")
	}
	// Insight lines before the trailer are not the document.
	stray := append([]byte(KeyInsight+": H4sI\n"), b.Bytes()[:bytes.Index(b.Bytes(), []byte(KeyEnd))]...)
	if s := Decode(stray); s.Insight != nil {
		t.Errorf("Decode(insight line before the trailer).Insight = %d bytes; want none", len(s.Insight))
	}
}

// kallsymsText makes n lines of kallsyms that compress about as badly as
// the real ones.
func kallsymsText(n int) string {
	var b strings.Builder
	x := uint64(0x9e3779b97f4a7c15)
	for i := range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		fmt.Fprintf(&b, "%016x t f%d_%x\n", 0xffffffff81000000+uint64(i)*64, i, x&0xffffff)
	}
	return b.String()
}

func TestInsightBounds(t *testing.T) {
	s := Decode([]byte(KeyEnd + ": records=0 sha256=x\n" + KeyInsight + ": not base64!\n"))
	if s.Insight != nil || s.InsightProblem == "" {
		t.Errorf("Decode(bad insight line) = %d bytes, problem %q; want none and a problem", len(s.Insight), s.InsightProblem)
	}
	if _, err := DecodeInsight(make([]byte, MaxInsightBytes+1)); !errors.Is(err, ErrInsightTooLarge) {
		t.Errorf("DecodeInsight(%d bytes) = %v; want ErrInsightTooLarge", MaxInsightBytes+1, err)
	}
	// A small gzip bomb: 64 MiB of spaces in about 64 KiB.
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(`{"kernel":"`))
	chunk := bytes.Repeat([]byte(" "), 1<<20)
	for range 64 {
		zw.Write(chunk)
	}
	zw.Close()
	if _, err := DecodeInsight(b.Bytes()); !errors.Is(err, ErrInsightTooLarge) {
		t.Errorf("DecodeInsight(64 MiB of JSON) = %v; want ErrInsightTooLarge", err)
	}
	many := &InsightDoc{Counts: make([]CallCount, maxInsightCounts+1)}
	if _, err := EncodeInsight(many); !errors.Is(err, ErrInsightTooLarge) {
		t.Errorf("EncodeInsight(%d counts) = %v; want ErrInsightTooLarge", len(many.Counts), err)
	}
	big := &InsightDoc{Programs: []ProgramInfo{{Jited: make([]byte, MaxJitedBytes+1)}}}
	if _, err := EncodeInsight(big); !errors.Is(err, ErrInsightTooLarge) {
		t.Errorf("EncodeInsight(%d bytes of JITed code) = %v; want ErrInsightTooLarge", MaxJitedBytes+1, err)
	}
}

func TestInsightParams(t *testing.T) {
	p := DefaultPlan()
	p.Insight, p.Count = InsightArmed, "trie_lookup_elem,longest_prefix_match"
	args := p.KernelArgs()
	on := ArmInsight(args)
	if len(strings.Join(on, " ")) != len(strings.Join(args, " ")) {
		t.Errorf("ArmInsight changed the command line's length: %q → %q", args, on)
	}
	got, err := DecodePlan(strings.Join(on, " "))
	if err != nil || got.Insight != InsightOn || !reflect.DeepEqual(got.CountList(), []string{"trie_lookup_elem", "longest_prefix_match"}) {
		t.Errorf("DecodePlan(ArmInsight(%q)) = %+v, %v; want the pass on with two functions", args, got, err)
	}
	if off := ArmInsight(DefaultPlan().KernelArgs()); !reflect.DeepEqual(off, DefaultPlan().KernelArgs()) {
		t.Errorf("ArmInsight(a plan without insight) = %q; want it unchanged", off)
	}
	// A side with a static symbol source: the same length again, and its
	// guest is told to keep kallsyms at home; the armed plan sends it.
	if got.SkipKallsyms {
		t.Errorf("DecodePlan(%q).SkipKallsyms = true; want kallsyms sent by default", on)
	}
	skip := SkipKallsyms(on)
	if len(strings.Join(skip, " ")) != len(strings.Join(on, " ")) {
		t.Errorf("SkipKallsyms changed the command line's length: %q → %q", on, skip)
	}
	if got, err := DecodePlan(strings.Join(skip, " ")); err != nil || !got.SkipKallsyms || got.Insight != InsightOn || got.Count != p.Count {
		t.Errorf("DecodePlan(SkipKallsyms(%q)) = %+v, %v; want the pass on, kallsyms skipped", on, got, err)
	}
	armed, err := InsightArgs([]string{"trie_lookup_elem"})
	if err != nil || !slices.Contains(armed, "lpmbisect.kallsyms=1") || !slices.Contains(SkipKallsyms(armed), "lpmbisect.kallsyms=0") {
		t.Errorf("InsightArgs = %q, %v; SkipKallsyms of it %q; want kallsyms=1, then 0", armed, err, SkipKallsyms(armed))
	}
	if none := SkipKallsyms(DefaultPlan().KernelArgs()); !reflect.DeepEqual(none, DefaultPlan().KernelArgs()) {
		t.Errorf("SkipKallsyms(a plan without insight) = %q; want it unchanged", none)
	}
	for _, tc := range []struct {
		cmdline string
		want    error
	}{
		{"lpmbisect.insight=2", ErrMalformed},
		{"lpmbisect.kallsyms=yes", ErrMalformed},
		{"lpmbisect.count=a,b;c", ErrMalformed},
		{"lpmbisect.count=a,,b", ErrMalformed},
		{"lpmbisect.count=" + strings.Repeat("f,", MaxCount) + "f", ErrOutOfRange},
	} {
		if _, err := DecodePlan(tc.cmdline); !errors.Is(err, tc.want) {
			t.Errorf("DecodePlan(%q) = %v; want %v", tc.cmdline, err, tc.want)
		}
	}
}

func TestSymbolMatches(t *testing.T) {
	for _, tc := range []struct {
		sym, target string
		want        bool
	}{
		{"longest_prefix_match.isra.0", "longest_prefix_match", true},
		{"longest_prefix_match", "longest_prefix_match", true},
		{"longest_prefix_match.constprop.1", "longest_prefix_match", true},
		{"longest_prefix_match.cold", "longest_prefix_match", false},
		{"longest_prefix_match.isra.0.cold", "longest_prefix_match", false},
		{"longest_prefix_matches", "longest_prefix_match", false},
		{"__pfx_longest_prefix_match.isra.0", "longest_prefix_match", false},
	} {
		if got := SymbolMatches(tc.sym, tc.target); got != tc.want {
			t.Errorf("SymbolMatches(%q, %q) = %v; want %v", tc.sym, tc.target, got, tc.want)
		}
	}
}

// The memory pass is armed on every boot (lpmbisect.memory=0) and runs in
// the one that loads the plugin (LoadPlugin: =1, the same length; =2 with
// the deferred work pass); any other value is malformed. Too many program
// images are refused.
func TestMemoryParam(t *testing.T) {
	args := append(DefaultPlan().KernelArgs(), MemoryArg)
	armed, err := DecodePlan(strings.Join(args, " "))
	if err != nil || armed.Memory {
		t.Errorf("DecodePlan(%q) = %+v, %v; want the pass armed, not run", args, armed, err)
	}
	on := LoadPlugin(args, false)
	if len(strings.Join(on, " ")) != len(strings.Join(args, " ")) {
		t.Errorf("LoadPlugin changed the command line's length: %q → %q", args, on)
	}
	loaded, err := DecodePlan(strings.Join(on, " "))
	if err != nil || !loaded.Memory || loaded.Deferred {
		t.Errorf("DecodePlan(LoadPlugin(%q)) = %+v, %v; want the pass run", args, loaded, err)
	}
	if again, err := DecodePlan(strings.Join(loaded.KernelArgs(), " ")); err != nil || !again.Memory {
		t.Errorf("the loaded plan's arguments %q decode to %+v, %v; want the pass run", loaded.KernelArgs(), again, err)
	}
	deferred := LoadPlugin(args, true)
	withDeferred, err := DecodePlan(strings.Join(deferred, " "))
	if err != nil || !withDeferred.Memory || !withDeferred.Deferred || len(strings.Join(deferred, " ")) != len(strings.Join(args, " ")) {
		t.Errorf("DecodePlan(LoadPlugin(%q, deferred)) = %+v, %v; want the pass and its deferred work pass, at the same length", args, withDeferred, err)
	}
	if again, err := DecodePlan(strings.Join(withDeferred.KernelArgs(), " ")); err != nil || !again.Deferred {
		t.Errorf("the deferred plan's arguments %q decode to %+v, %v; want the deferred work pass", withDeferred.KernelArgs(), again, err)
	}
	if _, err := DecodePlan(strings.Join(append(DefaultPlan().KernelArgs(), "lpmbisect.memory=3"), " ")); err == nil {
		t.Errorf("DecodePlan(lpmbisect.memory=3) = nil error; want it malformed")
	}
	doc := &InsightDoc{Memory: &MemoryDoc{Benchmarks: []BenchMemory{{Benchmark: "b", Programs: make([]ProfileSymbol, maxProfileSymbols+1)}}}}
	if _, err := EncodeInsight(doc); !errors.Is(err, ErrInsightTooLarge) {
		t.Errorf("EncodeInsight(%d program images) = %v; want ErrInsightTooLarge", maxProfileSymbols+1, err)
	}
}

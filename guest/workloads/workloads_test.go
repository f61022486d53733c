package workloads

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/wire"
)

func TestFullName(t *testing.T) {
	p := Params{Entries: 10000, PrefixLen: 32, BatchEntries: 1000}
	byName := map[string]*Benchmark{}
	for _, b := range Registry() {
		full := b.FullName(p)
		if byName[full] != nil {
			t.Errorf("two benchmarks named %s", full)
		}
		byName[full] = b
		if b.Doc == "" || len(b.Requires) == 0 || b.Run == nil || b.MinKernel() == "" {
			t.Errorf("%s lacks a doc, requirements, a minimum kernel or a run function", full)
		}
	}
	for _, want := range []string{
		"LPMTrie/op=noop",
		"LPMTrie/op=baseline/keys=random/entries=10000",
		"LPMTrie/op=lookup/keys=random/entries=10000",
		"LPMTrie/op=lookup/keys=sequential/entries=10000",
		"LPMTrie/op=update/keys=random/entries=10000",
		"LPMTrie/op=insert/keys=sequential/entries=10000",
		"LPMTrie/op=delete/keys=sequential/entries=10000",
		"LPMTrie/op=free/entries=10000",
		"LPMTrieUnrolled/op=lookup/keys=random/entries=10000",
		"LPMTrieSyscall/lookups=0/entries=0",
		"LPMTrieSyscall/lookups=32/entries=8192",
		"MapBatch/map=hash/op=lookup/batch=1000/entries=1000",
		"MapBatch/map=lpm_trie/op=delete/batch=all/entries=1000",
		"RingBuf/api=reserve/mode=consumer/producers=1",
		"RingBuf/api=output/mode=overwrite/producers=2",
	} {
		if byName[want] == nil {
			t.Errorf("no benchmark named %s", want)
		}
	}
	lookup := byName["LPMTrie/op=lookup/keys=random/entries=10000"]
	if got := lookup.FullName(Params{Entries: 100, PrefixLen: 8}); got != "LPMTrie/op=lookup/keys=random/entries=100/prefix_len=8" {
		t.Errorf("FullName(prefix_len 8) = %q; want the prefix length in the name", got)
	}
	if got := lookup.MinKernel(); got != "5.17" {
		t.Errorf("lookup MinKernel() = %q; want 5.17", got)
	}
	if got := byName["RingBuf/api=output/mode=overwrite/producers=2"].MinKernel(); got != "6.19" {
		t.Errorf("overwrite MinKernel() = %q; want 6.19", got)
	}
}

func TestKernelVersionLess(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{{"5.17", "6.1", true}, {"6.1", "5.17", false}, {"4.11", "4.12", true}, {"5.8", "5.13", true}, {"6.19", "6.19", false}, {"3.19", "4.1", true}} {
		if got := kernelVersionLess(c.a, c.b); got != c.want {
			t.Errorf("kernelVersionLess(%q, %q) = %v; want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestSelect(t *testing.T) {
	p := Params{Entries: 500, PrefixLen: 32, BatchEntries: 100, CPUs: 2}
	names := func(pattern string) []string {
		var got []string
		for _, b := range Select(Registry(), regexp.MustCompile(ResolveBench(pattern)), p) {
			got = append(got, b.FullName(p))
		}
		return got
	}
	for _, tt := range []struct {
		pattern string
		want    []string
	}{
		{DefaultBench, []string{"LPMTrie/op=lookup/keys=random/entries=500", "LPMTrie/op=lookup/keys=sequential/entries=500"}},
		{"lookup", []string{"LPMTrie/op=lookup/keys=random/entries=500", "LPMTrie/op=lookup/keys=sequential/entries=500"}},
		{"controls", []string{"LPMTrie/op=noop", "LPMTrie/op=baseline/keys=random/entries=500", "LPMTrie/op=baseline/keys=sequential/entries=500"}},
		{"LPMTrie/op=noop", []string{"LPMTrie/op=noop"}},
		{"LPMTrie/op=baseline", []string{"LPMTrie/op=baseline/keys=random/entries=500", "LPMTrie/op=baseline/keys=sequential/entries=500"}},
		{"^LPMTrie.*sequential/entries=500$", []string{"LPMTrie/op=baseline/keys=sequential/entries=500", "LPMTrie/op=lookup/keys=sequential/entries=500", "LPMTrie/op=update/keys=sequential/entries=500",
			"LPMTrie/op=insert/keys=sequential/entries=500", "LPMTrie/op=delete/keys=sequential/entries=500", "LPMTrieUnrolled/op=lookup/keys=sequential/entries=500", "LPMTrieUnrolled/op=update/keys=sequential/entries=500"}},
		{"RingBuf/api=reserve/mode=consumer", []string{"RingBuf/api=reserve/mode=consumer/producers=1", "RingBuf/api=reserve/mode=consumer/producers=2"}},
		{"entries=10000", nil},
	} {
		if got := names(tt.pattern); fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("Select(Registry(), %q, entries=500) = %v; want %v", tt.pattern, got, tt.want)
		}
	}
	counts := map[string]int{}
	for _, preset := range Presets {
		counts[preset.Name] = len(names(preset.Name))
	}
	if counts["all"] != len(Select(Registry(), regexp.MustCompile("."), p)) || counts["lpm"] != 14 || counts["syscall"] != 10 || counts["batch"] != 28 || counts["ringbuf"] != 12 || counts["hash"] != 18 || counts["bloom"] != 6 || counts["storage"] != 6 || counts["seed"] != 3 || counts["branch"] != 3 || counts["verifier"] != 67 {
		t.Errorf("preset sizes = %v; want lpm 14, seed 3, syscall 10, batch 28, ringbuf 12 (2 vCPUs), hash 18, bloom 6, storage 6, branch 3, verifier 67 (11 LPM trie, 3 seed, 4 unrolled, 10 syscall, 6 ring buffer, 18 hash map, 6 bloom filter, 6 task storage, 3 branch programs)", counts)
	}
	if got := counts["lpm"] + counts["seed"] + counts["syscall"] + counts["batch"] + counts["ringbuf"] + counts["hash"] + counts["bloom"] + counts["storage"] + counts["branch"] + counts["verifier"]; got != counts["all"] {
		t.Errorf("presets lpm+seed+syscall+batch+ringbuf+hash+bloom+storage+branch+verifier select %d benchmarks; all selects %d", got, counts["all"])
	}
}

func TestResolveBench(t *testing.T) {
	if err := compilePresets(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ in, want string }{
		{"lpm", "^LPMTrie(Unrolled)?/"},
		{"all", "."},
		{"LPMTrie/op=lookup", "LPMTrie/op=lookup"},
		{"syscall,batch", "(^LPMTrieSyscall/)|(^MapBatch/)"},
		{"lpm,nosuch", "lpm,nosuch"},
	} {
		if got := ResolveBench(c.in); got != c.want {
			t.Errorf("ResolveBench(%q) = %q; want %q", c.in, got, c.want)
		}
	}
}

func TestPlanParams(t *testing.T) {
	if want := (Params{Entries: 10000, PrefixLen: 32, BatchEntries: 100000, Samples: 5, Rounds: 20, Clock: WallClock}); DefaultParams != want {
		t.Errorf("DefaultParams = %+v; want %+v", DefaultParams, want)
	}
	plan := wire.Plan{Bench: ".", Samples: 3, Entries: 1 << 26, Rounds: 7, PrefixLen: 26, BatchEntries: 1 << 24, Accel: wire.AccelIcount}
	want := Params{Entries: 1 << 26, PrefixLen: 26, BatchEntries: 1 << 24, Samples: 3, Rounds: 7, Clock: InstructionClock}
	if got := PlanParams(plan); got != want {
		t.Errorf("PlanParams(%+v) = %+v; want %+v", plan, got, want)
	}
	for a, clock := range map[wire.Accel]Clock{"": WallClock, wire.AccelKVM: WallClock, wire.AccelTCG: WallClock, wire.AccelIcount: InstructionClock} {
		if got := clockOf(a); got != clock {
			t.Errorf("ClockOf(%q) = %v; want %v", a, got, clock)
		}
	}
}

func TestClockUnit(t *testing.T) {
	if got := WallClock.Unit(); got != "ns/op" {
		t.Errorf("WallClock.Unit() = %q; want ns/op", got)
	}
	if got := InstructionClock.Unit(); got != "insn/op" {
		t.Errorf("InstructionClock.Unit() = %q; want insn/op", got)
	}
	if got := InstructionClock.Per("lookup"); got != "insn/lookup" {
		t.Errorf("InstructionClock.Per(lookup) = %q; want insn/lookup", got)
	}
	if got := WallClock.Per("lookup"); got != "ns/lookup" {
		t.Errorf("WallClock.Per(lookup) = %q; want ns/lookup", got)
	}
}

// recorder is an Output that keeps what it gets and can be made to fail.
type recorder struct {
	lines   []string
	failing bool
}

func (r *recorder) Result(res *benchfmt.Result) error {
	if r.failing {
		return errors.New("channel broken")
	}
	r.lines = append(r.lines, fmt.Sprintf("Benchmark%s %d %v %s", res.Name, res.Iters, res.Values[0].Value, res.Values[0].Unit))
	return nil
}

func (r *recorder) Note(key, text string) error {
	if r.failing {
		return errors.New("channel broken")
	}
	r.lines = append(r.lines, key+": "+text)
	return nil
}

func fakeBench(name string, probe error, run func(r *Run) error) *Benchmark {
	return &Benchmark{
		Name:     name,
		Requires: []Requirement{{Feature: "magic", MinKernel: "9.9", Probe: func() error { return probe }}},
		Run:      run,
	}
}

func samples(n int, s Sample) func(r *Run) error {
	return func(r *Run) error {
		for range n {
			if err := r.Sample(s); err != nil {
				return err
			}
		}
		return nil
	}
}

func TestRunAll(t *testing.T) {
	notSupported := fmt.Errorf("magic: %w", ebpf.ErrNotSupported)
	benches := []*Benchmark{
		fakeBench("Missing", notSupported, samples(2, Sample{Ops: 1, Elapsed: 1})),
		fakeBench("ProbeFails", errors.New("EPERM"), samples(2, Sample{Ops: 1, Elapsed: 1})),
		fakeBench("RunFails", nil, func(r *Run) error { return errors.New("lookup missed") }),
		fakeBench("Panics", nil, func(r *Run) error { panic("boom") }),
		fakeBench("TooFew", nil, samples(1, Sample{Ops: 3, Elapsed: 3})),
		fakeBench("Good", nil, samples(2, Sample{Ops: 3, Elapsed: 1000})),
	}
	out := &recorder{}
	rep := &Reporter{Out: out}
	if err := rep.RunAll(benches, Params{Samples: 2, Rounds: 1, Clock: InstructionClock}); err != nil {
		t.Fatalf("RunAll() = %v; want nil", err)
	}
	want := []string{
		"lpmbisect-unsupported: BenchmarkMissing needs magic (Linux 9.9)",
		"lpmbisect-failed: BenchmarkProbeFails: probe magic: EPERM",
		"lpmbisect-failed: BenchmarkRunFails: lookup missed",
		"lpmbisect-failed: BenchmarkPanics: panic: boom",
		"BenchmarkTooFew 3 1 insn/op",
		"lpmbisect-failed: BenchmarkTooFew: reported 1 samples, want 2",
		"BenchmarkGood 3 333.33 insn/op",
		"BenchmarkGood 3 333.33 insn/op",
	}
	if got := strings.Join(out.lines, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("RunAll() wrote\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
}

func TestRunAllStopsOnBrokenOutput(t *testing.T) {
	ran := 0
	count := func(r *Run) error { ran++; return r.Sample(Sample{Ops: 1, Elapsed: 1}) }
	rep := &Reporter{Out: &recorder{failing: true}}
	err := rep.RunAll([]*Benchmark{fakeBench("A", nil, count), fakeBench("B", nil, count)}, Params{Samples: 1})
	if err == nil || ran != 1 {
		t.Errorf("RunAll() on a broken output = %v after %d runs; want an error after 1 run", err, ran)
	}
}

func TestRunAllWire(t *testing.T) {
	var buf bytes.Buffer
	w := wire.NewWriter(&buf)
	var infos []string
	rep := &Reporter{
		Out:    w,
		Config: FileConfig(wire.KeyKernel, "6.1.0-test", wire.KeyAccel, "tcg"),
		Info:   func(text string) { infos = append(infos, text) },
	}
	info := func(r *Run) error { r.Info("filled"); return samples(2, Sample{Ops: 200000, Elapsed: 100000000})(r) }
	if err := rep.RunAll([]*Benchmark{fakeBench("X/entries=1", nil, info)}, Params{Samples: 2}); err != nil {
		t.Fatal(err)
	}
	if err := w.End(); err != nil {
		t.Fatal(err)
	}
	s := wire.Decode(buf.Bytes())
	if !s.Complete || len(s.Results) != 2 {
		t.Fatalf("Decode(stream) = complete %v (%s), %d results; want complete, 2 results\n%s", s.Complete, s.Problem, len(s.Results), buf.String())
	}
	if got := s.Config[wire.KeyKernel]; got != "6.1.0-test" {
		t.Errorf("config kernel = %q; want 6.1.0-test", got)
	}
	if v := s.Results[0].Values[0]; v.OrigValue != 500 || v.OrigUnit != "ns/op" {
		t.Errorf("value = %v %s; want 500 ns/op", v.OrigValue, v.OrigUnit)
	}
	if want := "BenchmarkX/entries=1: filled"; len(infos) != 1 || infos[0] != want {
		t.Errorf("infos = %q; want [%q]", infos, want)
	}
}

// TestRunAllGates checks that a paced guest takes the same number of steps
// for every benchmark, whatever happens to it, so two guests running one
// plan stay in step, and that the gate comes before each step's work.
func TestRunAllGates(t *testing.T) {
	notSupported := fmt.Errorf("magic: %w", ebpf.ErrNotSupported)
	benches := []*Benchmark{
		fakeBench("Missing", notSupported, samples(3, Sample{Ops: 1, Elapsed: 1})),
		fakeBench("RunFails", nil, func(r *Run) error { return errors.New("lookup missed") }),
		fakeBench("TooFew", nil, samples(1, Sample{Ops: 3, Elapsed: 3})),
		fakeBench("Good", nil, samples(3, Sample{Ops: 3, Elapsed: 1000})),
	}
	out := &recorder{}
	rep := &Reporter{Out: out, Gate: func() error { out.lines = append(out.lines, "gate"); return nil }}
	if err := rep.RunAll(benches, Params{Samples: 3, Rounds: 1}); err != nil {
		t.Fatalf("RunAll() = %v; want nil", err)
	}
	var shape []string
	for _, l := range out.lines {
		switch {
		case l == "gate":
			shape = append(shape, "G")
		case strings.HasPrefix(l, "Benchmark"):
			shape = append(shape, "s")
		default:
			shape = append(shape, "n")
		}
	}
	// Missing: gate, note, two padding gates; RunFails: gate, note, two
	// padding; TooFew: gate, sample, gate (after sample 1), note, one
	// padding gate; Good: gate, sample, gate, sample, gate, sample.
	want := "G n G G G n G G G s G n G G s G s G s"
	if got := strings.Join(shape, " "); got != want {
		t.Errorf("RunAll() with a gate took steps\n%s\nwant\n%s", got, want)
	}
}

func TestRunAllGateErrorStops(t *testing.T) {
	ran := 0
	count := func(r *Run) error { ran++; return samples(2, Sample{Ops: 1, Elapsed: 1})(r) }
	gates := 0
	rep := &Reporter{Out: &recorder{}, Gate: func() error {
		if gates++; gates == 2 {
			return errors.New("host gone")
		}
		return nil
	}}
	err := rep.RunAll([]*Benchmark{fakeBench("A", nil, count), fakeBench("B", nil, count)}, Params{Samples: 2})
	if err == nil || ran != 1 {
		t.Errorf("RunAll() with a failing gate = %v after %d runs; want an error after 1 run", err, ran)
	}
}

func TestEndTakesTheLastStep(t *testing.T) {
	gates := 0
	rep := &Reporter{Out: &recorder{}}
	if err := rep.End(); err != nil || gates != 0 {
		t.Fatalf("End() without a gate = %v; want nil and no step", err)
	}
	rep.Gate = func() error { gates++; return nil }
	if err := rep.RunAll([]*Benchmark{fakeBench("A", nil, samples(2, Sample{Ops: 1, Elapsed: 1}))}, Params{Samples: 2}); err != nil {
		t.Fatal(err)
	}
	if err := rep.End(); err != nil || gates != 3 {
		t.Errorf("End() after one benchmark of 2 samples: %v, %d steps in all; want 3 (2 for the benchmark, 1 at the end)", err, gates)
	}
}

// compilePresets checks the preset patterns (used by tests).
func compilePresets() error {
	for _, p := range Presets {
		if _, err := regexp.Compile(p.Pattern); err != nil {
			return err
		}
	}
	return nil
}

func TestWarmUpRounds(t *testing.T) {
	for _, c := range []struct {
		clock Clock
		want  int
	}{{WallClock, 20}, {InstructionClock, 1}} {
		if got := (Params{Rounds: 20, Clock: c.clock}).WarmUpRounds(); got != c.want {
			t.Errorf("Params{Rounds: 20, Clock: %v}.WarmUpRounds() = %d; want %d", c.clock, got, c.want)
		}
	}
}

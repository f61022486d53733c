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
	p := Params{Entries: 10000}
	want := []string{
		"LPMTrie/op=lookup/keys=random/entries=10000",
		"LPMTrie/op=lookup/keys=sequential/entries=10000",
	}
	reg := Registry()
	if len(reg) != len(want) {
		t.Fatalf("len(Registry()) = %d; want %d", len(reg), len(want))
	}
	for i, b := range reg {
		if got := b.FullName(p); got != want[i] {
			t.Errorf("Registry()[%d].FullName(%+v) = %q; want %q", i, p, got, want[i])
		}
		if b.Doc == "" || len(b.Requires) == 0 || b.Run == nil {
			t.Errorf("Registry()[%d] (%s) lacks a doc, requirements or run function", i, b.Name)
		}
	}
}

func TestSelect(t *testing.T) {
	p := Params{Entries: 500}
	for _, tt := range []struct {
		pattern string
		want    []string
	}{
		{"LPMTrie/op=lookup", []string{"LPMTrie/op=lookup/keys=random", "LPMTrie/op=lookup/keys=sequential"}},
		{"keys=random", []string{"LPMTrie/op=lookup/keys=random"}},
		{"sequential/entries=500$", []string{"LPMTrie/op=lookup/keys=sequential"}},
		{"entries=10000", nil},
		{"op=update", nil},
	} {
		var got []string
		for _, b := range Select(Registry(), regexp.MustCompile(tt.pattern), p) {
			got = append(got, b.Name)
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("Select(Registry(), %q, entries=500) = %v; want %v", tt.pattern, got, tt.want)
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

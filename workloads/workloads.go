// Package workloads defines the benchmarks the guest runs and runs them.
//
// A Benchmark is a definition: a name, what it measures, the parameters that
// appear in its full name, the kernel features it requires (with the first
// Linux release that has each, and a probe), and a run function that yields
// timed samples. Registry lists every definition; Select picks the ones whose
// full name matches the host's pattern; RunAll probes, runs and reports them
// as Go benchmark results and lpmbisect notes.
//
// Benchmarks time themselves inside the kernel (bpf_ktime_get_ns around a
// bpf_loop), so a sample is "Ops operations took Elapsed clock units". The
// clock is the guest's: wall nanoseconds under KVM or plain TCG, and guest
// instructions under TCG with -icount shift=0, where the clock advances 1 ns
// per instruction. The two units are never mixed: Params.Clock picks
// "ns/op" or "insn/op" for the whole boot.
//
// Failure handling: a benchmark whose requirement is missing gets an
// "unsupported" note naming the feature and its minimum kernel; a benchmark
// whose probe or run fails gets a "failed" note; the other benchmarks still
// run. Only a broken output (the results channel) stops RunAll.
package workloads

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/wire"
)

// Clock says what the guest clock counts.
type Clock int

const (
	// WallClock: the guest clock runs in real nanoseconds (KVM, TCG).
	WallClock Clock = iota
	// InstructionClock: the guest clock advances one nanosecond per guest
	// instruction (TCG with -icount shift=0,align=off,sleep=off).
	InstructionClock
)

// Unit returns the benchmark unit for per-operation values on this clock.
func (c Clock) Unit() string {
	if c == InstructionClock {
		return "insn/op"
	}
	return "ns/op"
}

// Params are the knobs the host sets for one boot.
type Params struct {
	// Entries is the size of the data structure under test (LPM trie:
	// the dense keys [0, Entries)).
	Entries uint32
	// Samples is the number of results each benchmark reports.
	Samples int
	// Rounds is the number of program runs (BPF_PROG_TEST_RUN
	// repetitions) per sample; each run does one bpf_loop.
	Rounds int
	// Clock is what the guest clock counts.
	Clock Clock
}

// DefaultParams are the parameters of a boot whose host set none.
var DefaultParams = Params{Entries: 10000, Samples: 5, Rounds: 20}

// Requirement is a kernel feature a benchmark needs.
type Requirement struct {
	// Feature names what is needed, e.g. "bpf_loop".
	Feature string
	// MinKernel is the first Linux release that has it, e.g. "5.17".
	MinKernel string
	// Probe returns nil if the running kernel has the feature, an error
	// wrapping ebpf.ErrNotSupported if it does not, and any other error
	// if it cannot tell.
	Probe func() error
}

// Sample is one timed measurement: Ops operations took Elapsed units of the
// guest clock.
type Sample struct {
	Ops     uint64
	Elapsed uint64
}

// PerOp returns Elapsed/Ops, or NaN for an empty sample.
func (s Sample) PerOp() float64 {
	if s.Ops == 0 {
		return math.NaN()
	}
	return float64(s.Elapsed) / float64(s.Ops)
}

// Run is what a benchmark's run function gets.
type Run struct {
	Params Params
	// Logf writes progress to the console.
	Logf func(format string, args ...any)
	// Info records information for the run log (an info note).
	Info func(text string)
	// Sample reports one sample. An error means the output is broken and
	// the run function must return it.
	Sample func(Sample) error
}

// Benchmark is a benchmark definition.
type Benchmark struct {
	// Name is the benchmark name without the "Benchmark" prefix and
	// without parameters, e.g. "LPMTrie/op=lookup/keys=random".
	Name string
	// Doc says what the benchmark measures.
	Doc string
	// Params lists the Params fields that shape the benchmark and appear
	// in its full name, in order, as key=value: "entries".
	Params []string
	// Requires lists the kernel features the benchmark needs.
	Requires []Requirement
	// Run runs the benchmark and reports Params.Samples samples.
	Run func(r *Run) error
}

// FullName returns the benchmark's name with its parameters, as it appears
// in results (without the "Benchmark" prefix), e.g.
// "LPMTrie/op=lookup/keys=random/entries=10000".
func (b *Benchmark) FullName(p Params) string {
	var sb strings.Builder
	sb.WriteString(b.Name)
	for _, key := range b.Params {
		sb.WriteString("/" + key + "=")
		switch key {
		case "entries":
			sb.WriteString(strconv.FormatUint(uint64(p.Entries), 10))
		default:
			sb.WriteString("?")
		}
	}
	return sb.String()
}

// Registry returns every benchmark definition, in the order they run.
func Registry() []*Benchmark {
	return append([]*Benchmark(nil), lpmTrieBenchmarks()...)
}

// Select returns the benchmarks of all whose full name under p matches re.
func Select(all []*Benchmark, re *regexp.Regexp, p Params) []*Benchmark {
	var out []*Benchmark
	for _, b := range all {
		if re.MatchString(b.FullName(p)) {
			out = append(out, b)
		}
	}
	return out
}

// Output is where results and notes go; *wire.Writer is one.
type Output interface {
	Result(*benchfmt.Result) error
	Note(key, text string) error
}

// Reporter turns samples into benchmark results and problems into notes.
type Reporter struct {
	Out Output
	// Config are the configuration lines written before the results
	// (kernel, accel, cpu, channel, parameters).
	Config []benchfmt.Config
	// Logf writes progress to the console.
	Logf func(format string, args ...any)
	// Info records an info note. Nil writes it to Out at once.
	Info func(text string)
}

// errOutput marks an error writing to Out: it stops RunAll.
type errOutput struct{ err error }

func (e errOutput) Error() string { return e.err.Error() }
func (e errOutput) Unwrap() error { return e.err }

// RunAll probes and runs each benchmark with p and reports the results. It
// returns an error only if writing to the output failed.
func (rep *Reporter) RunAll(benches []*Benchmark, p Params) error {
	for _, b := range benches {
		if err := rep.run(b, p); err != nil {
			return err
		}
	}
	return nil
}

func (rep *Reporter) logf(format string, args ...any) {
	if rep.Logf != nil {
		rep.Logf(format, args...)
	}
}

func (rep *Reporter) info(text string) error {
	if rep.Info != nil {
		rep.Info(text)
		return nil
	}
	if err := rep.Out.Note(wire.KeyInfo, text); err != nil {
		return errOutput{err}
	}
	return nil
}

func (rep *Reporter) note(key, text string) error {
	rep.logf("%s", text)
	if err := rep.Out.Note(key, text); err != nil {
		return errOutput{err}
	}
	return nil
}

// run probes and runs one benchmark. It returns only output errors.
func (rep *Reporter) run(b *Benchmark, p Params) (err error) {
	name := "Benchmark" + b.FullName(p)
	for _, req := range b.Requires {
		perr := req.Probe()
		switch {
		case errors.Is(perr, ebpf.ErrNotSupported):
			return rep.note(wire.KeyUnsupported, Unsupported(name, req))
		case perr != nil:
			return rep.note(wire.KeyFailed, fmt.Sprintf("%s: probe %s: %v", name, req.Feature, perr))
		}
	}

	rep.logf("running %s (%d samples × %d rounds)", name, p.Samples, p.Rounds)
	samples := 0
	var infoErr error
	defer func() { err = errors.Join(err, infoErr) }()
	run := &Run{
		Params: p,
		Logf:   rep.logf,
		Info: func(text string) {
			if err := rep.info(name + ": " + text); err != nil && infoErr == nil {
				infoErr = err
			}
		},
		Sample: func(s Sample) error {
			if err := rep.Out.Result(rep.result(name, p, s)); err != nil {
				return errOutput{err}
			}
			samples++
			rep.logf("%s sample %d: %d ops, %.2f %s", name, samples, s.Ops, s.PerOp(), p.Clock.Unit())
			return nil
		},
	}
	defer func() {
		if r := recover(); r != nil {
			err = errors.Join(err, rep.note(wire.KeyFailed, fmt.Sprintf("%s: panic: %v", name, r)))
		}
	}()
	rerr := b.Run(run)
	var oerr errOutput
	switch {
	case errors.As(rerr, &oerr):
		return rerr
	case errors.Is(rerr, ebpf.ErrNotSupported):
		return errors.Join(err, rep.note(wire.KeyUnsupported, fmt.Sprintf("%s: %v", name, rerr)))
	case rerr != nil:
		return errors.Join(err, rep.note(wire.KeyFailed, fmt.Sprintf("%s: %v", name, rerr)))
	case samples != p.Samples:
		return errors.Join(err, rep.note(wire.KeyFailed, fmt.Sprintf("%s: reported %d samples, want %d", name, samples, p.Samples)))
	}
	return err
}

// Unsupported returns the text of the unsupported note for a benchmark
// (full name with the "Benchmark" prefix) that lacks req.
func Unsupported(name string, req Requirement) string {
	return fmt.Sprintf("%s needs %s (Linux %s)", name, req.Feature, req.MinKernel)
}

// result builds the benchmark result line of one sample.
func (rep *Reporter) result(name string, p Params, s Sample) *benchfmt.Result {
	cfg := make([]benchfmt.Config, len(rep.Config))
	copy(cfg, rep.Config)
	return &benchfmt.Result{
		Config: cfg,
		Name:   benchfmt.Name(strings.TrimPrefix(name, "Benchmark")),
		Iters:  int(s.Ops),
		Values: []benchfmt.Value{{Value: math.Round(s.PerOp()*100) / 100, Unit: p.Clock.Unit()}},
	}
}

// FileConfig returns benchfmt file configuration lines for key/value pairs,
// in order.
func FileConfig(kv ...string) []benchfmt.Config {
	var out []benchfmt.Config
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, benchfmt.Config{Key: kv[i], Value: []byte(kv[i+1]), File: true})
	}
	return out
}

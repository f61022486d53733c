// Package workloads defines the benchmarks the guest runs and runs them.
//
// A Benchmark is a definition: a name, what it measures, the parameters that
// appear in its full name, the kernel features it requires (with the first
// Linux release that has each, and a probe), and a run function that yields
// timed samples. Registry lists every definition; Select picks the ones whose
// full name matches the host's pattern; RunAll probes, runs and reports them
// as Go benchmark results and lpmbisect notes.
//
// The families (see Registry, Presets and `lpmbisect list`):
//
//   - LPMTrie/op=…: the kernel's LPM trie bench (Linux 6.18 selftests):
//     noop and baseline controls, lookup, update, insert, delete, timed
//     in-kernel around bpf_loop (5.17), and free, timed with fentry/fexit on
//     bpf_map_free_deferred (5.5, kernel BTF).
//   - LPMTrieSeed/op=…: the kernel bench's lookup, update and delete as it
//     runs them: keys in host byte order, the delete's rate with its
//     refill by one syscall per key (5.17).
//   - LPMTrieUnrolled/…: lookup and update without bpf_loop (4.12).
//   - LPMTrieSyscall/…: a kprobe on gettid() doing 0, 1, 8 or 32 lookups on
//     tries of 0, 1 and 8192 entries; per syscall, and derived per lookup.
//   - MapBatch/…: BPF_MAP_*_BATCH at batch sizes 10, 1000 and all against
//     one syscall per element, on hash maps (5.6) and LPM tries (5.13).
//   - RingBuf/…: reserve/submit and output producers, one per vCPU up to
//     the guest's count, with a reader, without one, and in overwrite mode
//     (6.19).
//   - HashMap/…: the kernel's bpf-hashmap-lookup and
//     bpf-hashmap-full-update on hash, LRU and per-CPU hash maps, key sizes
//     4 and 64, timed around bpf_loop (5.17).
//   - BloomFilter/…: bloom filter lookups and updates (5.16), and hash map
//     lookups with and without a filter in front.
//   - TaskStorage/…: task local storage gets and create/delete from a raw
//     tracepoint and an fentry program (5.11 helpers; bpf_loop 5.17).
//   - BranchModel/pattern=…: controls of the memory pass's branch model, one
//     conditional branch per iteration always taken, alternating or
//     random (5.17).
//   - Workload/prog=NAME: a user's BPF program (--workload) and a noop of
//     its type, timed by BPF_PROG_TEST_RUN (see workloadBenchmarks).
//
// Most benchmarks time themselves inside the kernel (bpf_ktime_get_ns around a
// bpf_loop), so a sample is "Ops operations took Elapsed clock units";
// LPMTrieSyscall and MapBatch use the guest's clock from user space. The
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
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/guest/bpf"
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

// clockOf returns the clock of a guest running under a.
func clockOf(a wire.Accel) Clock {
	if a.CountsInstructions() {
		return InstructionClock
	}
	return WallClock
}

// Unit returns the benchmark unit for per-operation values on this clock:
// wire.UnitInsnPerOp or wire.UnitNsPerOp.
func (c Clock) Unit() string {
	if c == InstructionClock {
		return wire.UnitInsnPerOp
	}
	return wire.UnitNsPerOp
}

// Params are the knobs the host sets for one boot (see wire.Plan, whose
// limits they obey), in the types the benchmarks use, plus what only the
// guest knows (its vCPUs).
type Params struct {
	// Entries is the size of the LPM trie under test: the dense keys
	// [0, Entries).
	Entries uint32
	// PrefixLen is the prefix length of the LPM keys (1 to 32); it must
	// satisfy 2^PrefixLen ≥ Entries. It appears in names only when it is
	// not 32.
	PrefixLen uint32
	// BatchEntries is the number of elements of the maps of the MapBatch
	// benchmarks.
	BatchEntries uint32
	// Samples is the number of results each benchmark reports.
	Samples int
	// Rounds is the number of program runs (BPF_PROG_TEST_RUN
	// repetitions) per sample; each run does one bpf_loop. Benchmarks
	// that do not run an XDP program scale their sample size from it
	// (see each benchmark's doc).
	Rounds int
	// Clock is what the guest clock counts.
	Clock Clock
	// CPUs is the number of vCPUs of the guest (0: unknown). Benchmarks
	// that need more (ring buffer producer sweeps) are not selected.
	CPUs int
	// MemoryMarks makes the programs timed around one bpf_loop (the LPM
	// trie's, the hash maps', the bloom filter's, task storage's) bracket
	// their bpf_loop with the memory plugin's window marks
	// (bpf.WindowMarks): set by the memory pass alone, never for timed
	// samples (the marks are two instructions per run).
	MemoryMarks bool
	// Harness, when set, runs what a benchmark does in user space around
	// its programs (see Harness): the memory pass's, which marks it for
	// the plugin. Nil: run it as it is.
	Harness Harness
}

// Harness runs a benchmark's work in user space for the memory pass:
// Untimed the work its harness does between timed runs (refilling or
// emptying a trie), which the deferred work pass must not count as work
// the operations left for later; Timed user-space work that is part of
// the operations (the kernel bench's refill after its deletes), which the
// plugin counts as it counts a program's timed loop.
type Harness interface {
	Untimed(work func() error) error
	Timed(work func() error) error
}

// untimed runs work as p.Harness says.
func (p Params) untimed(work func() error) error {
	if p.Harness == nil {
		return work()
	}
	return p.Harness.Untimed(work)
}

// timed runs work as p.Harness says.
func (p Params) timed(work func() error) error {
	if p.Harness == nil {
		return work()
	}
	return p.Harness.Timed(work)
}

// windowMarks are the marks p asks the timed loops for.
func (p Params) windowMarks() bpf.WindowMarks {
	if !p.MemoryMarks {
		return bpf.WindowMarks{}
	}
	return bpf.WindowMarks{Start: wire.MemWindowStart, Stop: wire.MemWindowStop}
}

// PlanParams returns the parameters of a run plan (CPUs unknown). The plan
// must have passed wire.Plan.Validate, whose limits fit every field.
func PlanParams(p wire.Plan) Params {
	return Params{
		Entries:      uint32(p.Entries),
		PrefixLen:    uint32(p.PrefixLen),
		BatchEntries: uint32(p.BatchEntries),
		Samples:      p.Samples,
		Rounds:       p.Rounds,
		Clock:        clockOf(p.Accel),
	}
}

// WarmUpRounds is the number of program runs of the untimed run that
// precedes an LPM trie benchmark's samples: a sample's worth (Rounds) under
// a wall clock, where caches, branch predictors and the host's CPU
// frequency settle over time, and one under the instruction clock, where
// the first run has JITed code, faulted the pages in and filled the
// kernel's caches as much as any later run would: on Debian 6.1 and 6.12
// every count stayed within its calibrated bound of a full warm-up, and
// warm-ups were 186 million of the 1.25 billion instructions of a boot of
// the default plan and its controls.
func (p Params) WarmUpRounds() int {
	if p.Clock == InstructionClock {
		return 1
	}
	return p.Rounds
}

// DefaultParams are the parameters of wire.DefaultPlan, a boot whose host
// set none.
var DefaultParams = PlanParams(wire.DefaultPlan())

// Per returns the unit of a value per thing on this clock, e.g.
// "ns/lookup" or "insn/lookup": Unit with "op" replaced by thing.
func (c Clock) Per(thing string) string {
	return strings.TrimSuffix(c.Unit(), "op") + thing
}

// Requirement is a kernel feature a benchmark needs.
type Requirement struct {
	// Feature names what is needed, e.g. "bpf_loop".
	Feature string
	// MinKernel is the first Linux release that has it, e.g. "5.17".
	MinKernel string
	// Hint, if set, follows the unsupported note, e.g. what runs instead.
	Hint string
	// Probe returns nil if the running kernel has the feature, an error
	// wrapping ebpf.ErrNotSupported if it does not, and any other error
	// if it cannot tell.
	Probe func() error
}

// Sample is one timed measurement: Ops operations took Elapsed units of the
// guest clock. Extra holds further values of the same sample (a derived
// per-lookup time, a drop rate); Labels, configuration lines of this
// sample's result alone (a rejected program's wire.KeyVerifierError).
type Sample struct {
	Ops     uint64
	Elapsed uint64
	Extra   []Metric
	Labels  []benchfmt.Config
}

// Metric is one extra value of a sample, e.g. {12.5, "ns/lookup"}.
type Metric struct {
	Value float64
	Unit  string
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
	// without the parameters that come from Params, e.g.
	// "LPMTrie/op=lookup/keys=random". It may hold fixed parameters
	// ("LPMTrieSyscall/lookups=8/entries=8192").
	Name string
	// Doc says what the benchmark measures.
	Doc string
	// Params lists the Params that shape the benchmark and appear in its
	// full name, in order (see ParamInfos): "entries", "prefix_len",
	// "batch_entries".
	Params []string
	// Requires lists the kernel features the benchmark needs.
	Requires []Requirement
	// MinCPUs is the number of vCPUs the benchmark needs; it is not
	// selected on a guest with fewer.
	MinCPUs int
	// Functions are the kernel functions its operation really calls, by
	// base name ("__htab_map_lookup_elem"): the functions of interest of
	// the insight block (their callees, sizes and calls per operation)
	// when it is selected. Nil for the LPM trie families, whose functions
	// are insight's defaults, and for controls.
	Functions []string
	// Run runs the benchmark and reports Params.Samples samples.
	Run func(r *Run) error
	// Spec, if set, builds the collection of BPF programs and maps the
	// benchmark loads under p: its Run and Instance load what it returns
	// and nothing else. Programs names its programs; each has a Verifier
	// row (verifierBenchmarks), which verifies Spec's collection. Nil for
	// benchmarks that load no program (MapBatch) and for the Verifier rows
	// themselves.
	Spec     func(p Params) (*ebpf.CollectionSpec, error)
	Programs []string
	// Instance, if set, loads the benchmark's programs for the insight
	// pass (Insight), after the timed samples.
	Instance func(p Params, logf func(string, ...any)) (*Instance, error)
}

// Functions returns the functions of interest of benches
// (Benchmark.Functions), each once, in order.
func Functions(benches []*Benchmark) []string {
	var out []string
	for _, b := range benches {
		for _, f := range b.Functions {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

// Countable says whether any of benches has an insight instance, the one
// thing the memory pass counts (under marks): without one (the Verifier
// rows alone, a user's programs), a boot need not load the memory plugin,
// and an emulator's plugin is one more thing that can fail.
func Countable(benches []*Benchmark) bool {
	return slices.ContainsFunc(benches, func(b *Benchmark) bool { return b.Instance != nil })
}

// ParamInfo describes a parameter that can appear in benchmark names.
type ParamInfo struct {
	Key  string // in Benchmark.Params
	Name string // in the full name: Name=value
	Doc  string
}

// ParamInfos lists the parameters benchmarks take from Params.
var ParamInfos = []ParamInfo{
	{"entries", "entries", "map size: the dense keys [0,N) of the LPM trie, the hash map, the bloom filter"},
	{"prefix_len", "prefix_len", "LPM key prefix length, 2^prefix_len ≥ entries (in the name only when not 32)"},
	{"batch_entries", "entries", "elements of the MapBatch maps"},
}

// FullName returns the benchmark's name with its parameters, as it appears
// in results (without the "Benchmark" prefix), e.g.
// "LPMTrie/op=lookup/keys=random/entries=10000".
func (b *Benchmark) FullName(p Params) string {
	var sb strings.Builder
	sb.WriteString(b.Name)
	for _, key := range b.Params {
		switch key {
		case "entries":
			fmt.Fprintf(&sb, "/entries=%d", p.Entries)
		case "prefix_len":
			if p.PrefixLen != 0 && p.PrefixLen != bpf.PrefixLen {
				fmt.Fprintf(&sb, "/prefix_len=%d", p.PrefixLen)
			}
		case "batch_entries":
			fmt.Fprintf(&sb, "/entries=%d", p.BatchEntries)
		default:
			sb.WriteString("/" + key + "=?")
		}
	}
	return sb.String()
}

// MinKernel returns the newest of the minimum kernels of the benchmark's
// requirements: the first Linux release that can run it.
func (b *Benchmark) MinKernel() string {
	newest := ""
	for _, r := range b.Requires {
		if newest == "" || kernelVersionLess(newest, r.MinKernel) {
			newest = r.MinKernel
		}
	}
	return newest
}

// kernelVersionLess compares dotted kernel versions ("5.17" < "6.1").
func kernelVersionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// Registry returns every benchmark definition, in the order they run.
func Registry() []*Benchmark {
	var all []*Benchmark
	all = append(all, lpmTrieBenchmarks()...)
	all = append(all, lpmSeedBenchmarks()...)
	all = append(all, unrolledBenchmarks()...)
	all = append(all, syscallBenchmarks()...)
	all = append(all, batchBenchmarks()...)
	all = append(all, ringbufBenchmarks()...)
	all = append(all, hashMapBenchmarks()...)
	all = append(all, bloomBenchmarks()...)
	all = append(all, storageBenchmarks()...)
	all = append(all, branchBenchmarks()...)
	all = append(all, verifierBenchmarks(all)...)
	return all
}

// Select returns the benchmarks of all whose full name under p matches re
// and that fit the guest's vCPUs.
func Select(all []*Benchmark, re *regexp.Regexp, p Params) []*Benchmark {
	var out []*Benchmark
	for _, b := range all {
		if p.CPUs > 0 && b.MinCPUs > p.CPUs {
			continue
		}
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
	// Gate, when set, is called before every step: the start of each
	// benchmark (before its probes and set-up) and each sample after the
	// first. Every benchmark takes Params.Samples steps whatever happens to
	// it (unsupported, failed), so two guests running the same plan stay in
	// step. An error means the output is broken.
	Gate func() error
	// Settle is how long to wait before the start gate of every benchmark
	// but the first: what the previous one left to the kernel's background
	// work (freeing its maps and programs on a workqueue) then runs while
	// this guest's step still lasts, and not during another guest's step.
	Settle time.Duration
	ran    bool // a benchmark has run: the next one settles first
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

// End takes a gated guest's last step, after the last benchmark has
// settled, so that this guest idles while the other one of a pair takes its
// last sample. Without Gate it does nothing.
func (rep *Reporter) End() error {
	if rep.Gate == nil {
		return nil
	}
	rep.settle()
	return rep.Gate()
}

// settle waits Settle if a benchmark has run.
func (rep *Reporter) settle() {
	if rep.ran {
		time.Sleep(rep.Settle)
	}
}

// run gates, probes and runs one benchmark. It returns only output errors.
func (rep *Reporter) run(b *Benchmark, p Params) error {
	if rep.Gate == nil {
		return rep.runBenchmark(b, p, func(int) error { return nil })
	}
	rep.settle()
	rep.ran = true
	steps := 0
	step := func() error {
		steps++
		if err := rep.Gate(); err != nil {
			return errOutput{err}
		}
		return nil
	}
	if err := step(); err != nil {
		return err
	}
	err := rep.runBenchmark(b, p, func(taken int) error {
		if taken < p.Samples {
			return step()
		}
		return nil
	})
	var oerr errOutput
	if errors.As(err, &oerr) {
		return err
	}
	for steps < p.Samples {
		if gerr := step(); gerr != nil {
			return errors.Join(err, gerr)
		}
	}
	return err
}

// runBenchmark probes and runs one benchmark; after the nth sample is
// reported it calls next(n). It returns only output errors.
func (rep *Reporter) runBenchmark(b *Benchmark, p Params, next func(taken int) error) (err error) {
	name := "Benchmark" + b.FullName(p)
	for _, req := range append([]Requirement{BPFSyscall}, b.Requires...) {
		perr := req.Probe()
		switch {
		case errors.Is(perr, ebpf.ErrNotSupported):
			return rep.note(wire.KeyUnsupported, unsupported(name, req))
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
			return next(samples)
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

// unsupported returns the text of the unsupported note for a benchmark
// (full name with the "Benchmark" prefix) that lacks req.
func unsupported(name string, req Requirement) string {
	return name + " " + (&wire.UnsupportedError{Feature: req.Feature, MinKernel: req.MinKernel, Hint: req.Hint}).Error()
}

// result builds the benchmark result line of one sample.
func (rep *Reporter) result(name string, p Params, s Sample) *benchfmt.Result {
	cfg := append(slices.Clone(rep.Config), s.Labels...)
	values := []benchfmt.Value{{Value: round2(s.PerOp()), Unit: p.Clock.Unit()}}
	for _, m := range s.Extra {
		values = append(values, benchfmt.Value{Value: round2(m.Value), Unit: m.Unit})
	}
	return &benchfmt.Result{
		Config: cfg,
		Name:   benchfmt.Name(strings.TrimPrefix(name, "Benchmark")),
		Iters:  int(s.Ops),
		Values: values,
	}
}

// round2 rounds to two decimals, keeping at least four significant digits
// of small values.
func round2(v float64) float64 {
	if v != 0 && math.Abs(v) < 10 {
		return math.Round(v*1e4) / 1e4
	}
	return math.Round(v*100) / 100
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

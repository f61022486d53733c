package wire

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Plan is the guest's run plan: which benchmarks to run and how. The host
// encodes it as kernel parameters (KernelArgs) and the guest decodes it from
// /proc/cmdline (DecodePlan). Both sides check it with Validate, so one set
// of limits holds on both. The guest and the host are always built together
// (the host packs its own guest into every initramfs), so the encoding has no
// versions and no compatibility rules: a parameter this guest does not know
// is an error, not something to skip.
type Plan struct {
	// Bench selects the benchmarks: a regexp over full result names
	// without "Benchmark" ("LPMTrie/op=lookup/keys=random/entries=10000").
	// The host resolves preset names into their pattern before encoding.
	Bench string
	// Samples is the number of samples of each benchmark in one boot.
	Samples int
	// Entries is the size of the LPM trie under test: the dense keys
	// [0, Entries).
	Entries int
	// Rounds is the number of program runs per sample; each run does
	// LoopIterations operations (see package bpf). Benchmarks that do not
	// run an XDP program scale their sample size from it. Its default
	// depends on the accelerator (DefaultRounds).
	Rounds int
	// PrefixLen is the prefix length of the LPM keys, 1 to 32; 2^PrefixLen
	// must be at least Entries.
	PrefixLen int
	// BatchEntries is the number of elements of the MapBatch maps.
	BatchEntries int
	// Accel is the accelerator the guest runs under, "" when the host does
	// not say (the guest then labels results "unknown" and assumes a wall
	// clock). AccelIcount makes the unit UnitInsnPerOp.
	Accel Accel
	// Port is the name of the virtio-serial port for results.
	Port string
	// Paced makes the guest stop before every step of its run (the start
	// of each benchmark, each further sample, the trailer), write a
	// KeyReady note and wait for the host's Go line, so that the host can
	// let two VMs take turns.
	Paced bool
	// Insight says whether the guest runs the insight pass after its
	// samples (see ParamInsight): InsightOff (the default), InsightArmed
	// (not in this boot, but the parameter is written, so every boot of a
	// run has a command line of one length) or InsightOn.
	Insight InsightMode
	// Count lists the functions the insight pass counts calls of, base
	// names (SymbolMatches) joined by commas (a string, so that a Plan
	// stays comparable); at most MaxCount in MaxCountLen bytes.
	Count string
	// SkipKallsyms tells the insight pass not to send /proc/kallsyms:
	// the host has a static symbol source for the kernel (see
	// ParamKallsyms). The pass still reads it to find the symbols to
	// count.
	SkipKallsyms bool
	// Workload names the user's BPF programs that the guest runs as the
	// Workload/prog=NAME benchmarks (and verifies as Verifier/prog=NAME),
	// from the object the host packed at WorkloadObject, joined by commas;
	// "" for none.
	Workload string
	// Verify names, joined by commas, the further programs of that object
	// the guest only loads and verifies (Verifier/prog=NAME): those
	// BPF_PROG_TEST_RUN cannot run. "" for none.
	Verify string
	// ProfilePeriod arms the profile pass (ParamProfile) with its sample
	// period; 0 leaves it out. It runs in the boot that runs the insight
	// pass.
	ProfilePeriod int
	// Memory runs the memory pass (ParamMemory=1) in the boot that runs
	// the insight pass, which the host starts with the memory plugin
	// loaded (wire.LoadPlugin); the plugin then also profiles the
	// benchmarks it counts, exactly, and the profile pass samples only
	// the others. Armed without the plugin (ParamMemory=0) it is false.
	Memory bool
	// Deferred adds the deferred work pass to the memory pass
	// (ParamMemory=2; wire.DeferredDoc).
	Deferred bool
}

// DefaultBench is the selection when none is given: the two LPM trie lookup
// benchmarks, a few seconds per boot under TCG.
const DefaultBench = "LPMTrie/op=lookup"

// Default program runs per sample (Plan.Rounds), by clock.
const (
	// DefaultWallClockRounds is the default under a wall clock (KVM,
	// TCG, or an accelerator the guest is not told): 20 runs of 10000
	// operations, long enough that a sample outlasts the host's
	// scheduling hiccups.
	DefaultWallClockRounds = 20
	// DefaultIcountRounds is the default under AccelIcount, where a
	// sample's only noise is what else the guest kernel runs meanwhile
	// (timer ticks, RCU and workqueue items), a fixed cost per event
	// that fewer operations per sample make larger per operation.
	// Measured on Debian 6.1 and 6.12 (QEMU 7.2, Westmere-v1, 3 boots of
	// 5 samples; spread of samples within a boot, and of boot medians):
	// LPM lookups with random keys stay within 0.08 % and 0.034 % at 5
	// rounds, against 0.039 % and 0.008 % at 20; the controls within
	// 0.012 % and 0 % at 2 to 20 rounds. At 1 round single events show:
	// noop 1.6 % within a boot, the random-key baseline 2.7 % within and
	// 1.5 % between boots. 5 rounds keeps that cliff 5 times away and
	// takes a quarter of the samples' instructions: one icount boot of
	// the default plan with its controls runs 20–30 % faster.
	DefaultIcountRounds = 5
)

// DefaultRounds returns the default Plan.Rounds for a guest under a:
// DefaultIcountRounds for AccelIcount, where the clock counts instructions,
// and DefaultWallClockRounds for any other value, including "" and the
// name of a host's automatic choice (which never picks icount).
//
// Results measured at different rounds differ slightly even under icount
// (the LPM lookups by up to 0.05 % between 2 and 20 rounds: each sample
// carries a share of the kernel's own work), so results files record the
// rounds (KeyRounds) and only results with equal rounds compare.
func DefaultRounds(a Accel) int {
	if a.CountsInstructions() {
		return DefaultIcountRounds
	}
	return DefaultWallClockRounds
}

// Default samples per benchmark per boot (Plan.Samples), by clock.
const (
	// DefaultWallClockSamples is the default under a wall clock: five
	// samples give the in-boot spread and the median of a boot something
	// to stand on.
	DefaultWallClockSamples = 5
	// DefaultIcountSamples is the default under AccelIcount, where the
	// samples of one boot repeat the same count: on Debian 6.1 and 6.12
	// (QEMU 7.2, Westmere-v1, 5 rounds, warm-up of 1 round) a boot of 1
	// sample keeps the controls and the LPM lookups with sequential keys
	// within 0.03 % of the 5-sample medians, and the random-key lookups
	// within 0.16 % (boot to boot, the calibrated jitter bound); fewer
	// than 5 rounds moves the random-key baseline out of its ±0.03 %
	// (timer ticks then weigh more). One sample a boot halves an icount
	// boot's instructions. A row whose boots disagree falls back to the
	// significance test with one sample per boot: the boots are its
	// units, so the adaptive loop adds boots (4 a side at least) instead
	// of reading samples that are not independent anyway.
	DefaultIcountSamples = 1
)

// DefaultSamples returns the default Plan.Samples for a guest under a:
// DefaultIcountSamples for AccelIcount, DefaultWallClockSamples for any
// other value.
func DefaultSamples(a Accel) int {
	if a.CountsInstructions() {
		return DefaultIcountSamples
	}
	return DefaultWallClockSamples
}

// DefaultPlan returns the plan of a boot whose command line sets no
// lpmbisect parameter, which is what DecodePlan starts from. Its Rounds is
// DefaultRounds(""), the wall-clock default; DecodePlan of a command line
// that names an accelerator but no rounds takes DefaultRounds of that
// accelerator.
func DefaultPlan() Plan {
	return Plan{
		Bench:     DefaultBench,
		Samples:   DefaultSamples(""),
		Entries:   10000,
		Rounds:    DefaultRounds(""),
		PrefixLen: 32,
		// The batch ops series measured 1M entries; under TCG one pass
		// of one syscall per element over 1M entries takes seconds.
		BatchEntries: 100000,
		Port:         PortName,
	}
}

// Limits of a Plan, checked by Validate on the host before any VM starts and
// in the guest before anything runs. They bound what an untrusted or
// mistyped value can make a boot do, not what is useful; useful values are
// far below them.
const (
	// maxBenchLen bounds the Bench regexp, in bytes: the x86 kernel
	// command line holds 2048 bytes in all (COMMAND_LINE_SIZE), and the
	// console settings and the other parameters need about 300.
	maxBenchLen = 1024
	// maxSamples bounds the samples per benchmark per boot. Samples of one
	// boot are correlated (memory layout, KASLR): the boot is the unit of
	// measurement, and more samples within one narrow nothing a comparison
	// uses. 1000 samples are ~100 kB of results per benchmark, well inside
	// what the host reads from one boot.
	maxSamples = 1000
	// maxEntries bounds the LPM trie size: 2^26 trie nodes take about
	// 4 GiB of kernel memory (~64 bytes each), more than a guest is given,
	// so a larger value could only fail in the fill.
	maxEntries = 1 << 26
	// maxRounds bounds the program runs per sample: 2^20 runs of 10000
	// operations are 10^10 operations a sample, hours under TCG, beyond
	// any progress deadline.
	maxRounds = 1 << 20
	// maxPrefixLen is the key width of the LPM tries: IPv4, 32 bits.
	maxPrefixLen = 32
	// maxBatchEntries bounds the MapBatch maps: a 16M-entry hash map needs
	// about 1 GiB.
	maxBatchEntries = 1 << 24
)

// maxWorkloadLen bounds each of Plan.Workload and Plan.Verify: ELF symbol
// names of BPF programs joined by commas, which must fit on the kernel
// command line (2048 bytes on x86) beside the other parameters.
const maxWorkloadLen = 512

var workloadNames = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(,[A-Za-z_][A-Za-z0-9_]*)*$`)

// Programs splits a comma-joined list of program names (Plan.Workload,
// Plan.Verify); nil for "".
func Programs(list string) []string {
	if list == "" {
		return nil
	}
	return strings.Split(list, ",")
}

// The results of a user's program (Plan.Workload) are named after it:
// WorkloadBench is the program run by BPF_PROG_TEST_RUN, WorkloadNoop a
// program of its type that returns at once, run the same way (the
// harness: the test run's loop and context reset), and WorkloadOwn the
// row the host derives from the two, boot by boot: the program's own
// work, the total less the harness. The guest writes the first two; no
// guest writes WorkloadOwn.
func WorkloadBench(prog string) string { return workloadPrefix + prog }

// WorkloadNoop is the name of the control of the program prog: see
// WorkloadBench.
func WorkloadNoop(prog string) string { return WorkloadBench(prog) + "/op=noop" }

// WorkloadOwn is the name of the derived row of the program prog: see
// WorkloadBench.
func WorkloadOwn(prog string) string { return WorkloadBench(prog) + "/op=own" }

const workloadPrefix = "Workload/prog="

// WorkloadOf returns the program of a result name of a user's program
// (WorkloadBench, WorkloadNoop, WorkloadOwn) and whether it is one.
func WorkloadOf(bench string) (prog string, ok bool) {
	rest, ok := strings.CutPrefix(bench, workloadPrefix)
	if !ok {
		return "", false
	}
	prog, _, _ = strings.Cut(rest, "/")
	return prog, prog != ""
}

// Where the host packs a user's BPF program and its inputs (Plan.Workload)
// in the initramfs: the ELF object, the packet its test runs get (optional:
// the guest's default packet otherwise) and the key/value pairs to put in
// its maps (optional).
const (
	workloadDir    = "/lib/lpmbisect/workload"
	WorkloadObject = workloadDir + "/object.o"
	WorkloadPacket = workloadDir + "/packet"
	WorkloadMaps   = workloadDir + "/maps"
)

// Param is a kernel command line parameter of the run plan.
type Param string

// The parameters, in the order KernelArgs writes them.
const (
	ParamBench        Param = "lpmbisect.bench"         // Plan.Bench
	ParamSamples      Param = "lpmbisect.samples"       // Plan.Samples
	ParamEntries      Param = "lpmbisect.entries"       // Plan.Entries
	ParamRounds       Param = "lpmbisect.rounds"        // Plan.Rounds
	ParamPrefixLen    Param = "lpmbisect.prefix_len"    // Plan.PrefixLen
	ParamBatchEntries Param = "lpmbisect.batch_entries" // Plan.BatchEntries
	ParamAccel        Param = "lpmbisect.accel"         // Plan.Accel, omitted when ""
	ParamPort         Param = "lpmbisect.port"          // Plan.Port, omitted when PortName
	ParamPaced        Param = "lpmbisect.paced"         // Plan.Paced: 1 or 0, omitted when 0
	ParamWorkload     Param = "lpmbisect.workload"      // Plan.Workload, omitted when ""
	ParamVerify       Param = "lpmbisect.verify"        // Plan.Verify, omitted when ""
)

// InsightMode is Plan.Insight.
type InsightMode string

// Values of Plan.Insight; InsightArmed and InsightOn are the values of
// ParamInsight.
const (
	InsightOff   InsightMode = ""
	InsightArmed InsightMode = "0"
	InsightOn    InsightMode = "1"
)

// params lists every parameter, in the order KernelArgs writes them.
var params = []Param{ParamBench, ParamSamples, ParamEntries, ParamRounds, ParamPrefixLen, ParamBatchEntries,
	ParamAccel, ParamPort, ParamPaced, ParamInsight, ParamCount, ParamKallsyms, ParamWorkload, ParamVerify, ParamProfile, ParamMemory}

// paramPrefix starts every run plan parameter. DecodePlan ignores the
// parameters without it (they are the kernel's) and rejects unknown ones
// with it.
const paramPrefix = "lpmbisect."

// PacedArg is the kernel argument of a paced plan (Plan.Paced).
const PacedArg = string(ParamPaced) + "=1"

// Name is the parameter's name without paramPrefix ("samples"), as errors
// call it.
func (p Param) Name() string { return strings.TrimPrefix(string(p), paramPrefix) }

// Arg returns the kernel argument that sets p to value ("lpmbisect.samples=5").
func (p Param) Arg(value string) string { return string(p) + "=" + value }

// Reasons a parameter is rejected; a *ParamError wraps one of them.
var (
	// ErrOutOfRange: a value outside its limits.
	ErrOutOfRange = errors.New("out of range")
	// ErrMalformed: a value that does not parse, or that the kernel
	// command line cannot carry (spaces, quotes, control characters).
	ErrMalformed = errors.New("malformed")
	// ErrUnknownParam: an lpmbisect parameter that is not in Params.
	ErrUnknownParam = errors.New("unknown parameter")
)

// ParamError is a parameter of a plan that cannot be used. It names the
// parameter, not a command-line flag: callers that took the value from a
// flag map Param to their flag.
type ParamError struct {
	Param Param
	Value string // the value as given or as it would be encoded
	// Err is the reason. Plan.Validate and DecodePlan wrap ErrOutOfRange,
	// ErrMalformed or ErrUnknownParam; a host's own checks of a plan may
	// give their own reason.
	Err error
}

// Error reads like "samples 0 out of range [1, 1000]".
func (e *ParamError) Error() string {
	if errors.Is(e.Err, ErrUnknownParam) {
		return fmt.Sprintf("%s: %v (known: %s)", e.Param, e.Err, orList(params))
	}
	return e.Param.Name() + " " + showValue(e.Value) + " " + e.Err.Error()
}

func (e *ParamError) Unwrap() error { return e.Err }

// showValue prints a value for an error: integers bare, anything else
// quoted and cut to a readable length.
func showValue(v string) string {
	if isDecimal(v) && len(v) <= 20 {
		return v
	}
	const max = 48
	if len(v) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(v[cut]) {
			cut--
		}
		return strconv.Quote(v[:cut]) + "…"
	}
	return strconv.Quote(v)
}

func isDecimal(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Validate checks every field of the plan against its limits and returns a
// *ParamError for the first that fails.
func (p Plan) Validate() error {
	if err := checkBench(p.Bench); err != nil {
		return err
	}
	for _, c := range []struct {
		param     Param
		v, lo, hi int
	}{
		{ParamSamples, p.Samples, 1, maxSamples},
		{ParamEntries, p.Entries, 1, maxEntries},
		{ParamRounds, p.Rounds, 1, maxRounds},
		{ParamPrefixLen, p.PrefixLen, 1, maxPrefixLen},
		{ParamBatchEntries, p.BatchEntries, 1, maxBatchEntries},
	} {
		if c.v < c.lo || c.v > c.hi {
			return &ParamError{c.param, strconv.Itoa(c.v), fmt.Errorf("%w [%d, %d]", ErrOutOfRange, c.lo, c.hi)}
		}
	}
	if p.PrefixLen < 32 && p.Entries > 1<<p.PrefixLen {
		return &ParamError{ParamPrefixLen, strconv.Itoa(p.PrefixLen),
			fmt.Errorf("%w: %d distinct prefixes, fewer than %s %d (raise %s)", ErrOutOfRange, 1<<p.PrefixLen, ParamEntries.Name(), p.Entries, ParamPrefixLen.Name())}
	}
	if p.Accel != "" {
		if _, err := parseBootAccel(string(p.Accel)); err != nil {
			return &ParamError{ParamAccel, string(p.Accel), fmt.Errorf("%w: %w", ErrMalformed, errors.Unwrap(err))}
		}
	}
	if err := checkArgValue(p.Port); err != nil || strings.ContainsRune(p.Port, '/') {
		return &ParamError{ParamPort, p.Port, fmt.Errorf("%w: not a port name (want a non-empty name without '/', spaces or quotes)", ErrMalformed)}
	}
	switch p.Insight {
	case InsightOff, InsightArmed, InsightOn:
	default:
		return &ParamError{ParamInsight, string(p.Insight), fmt.Errorf("%w: want 0 or 1", ErrMalformed)}
	}
	if err := checkCount(p.Count); err != nil {
		return err
	}
	for _, l := range []struct {
		param Param
		val   string
	}{{ParamWorkload, p.Workload}, {ParamVerify, p.Verify}} {
		if l.val != "" && (len(l.val) > maxWorkloadLen || !workloadNames.MatchString(l.val)) {
			return &ParamError{l.param, l.val, fmt.Errorf("%w: not BPF program names (want letters, digits and underscores, joined by commas, at most %d bytes)", ErrMalformed, maxWorkloadLen)}
		}
	}
	if err := checkProfilePeriod(p.ProfilePeriod); err != nil {
		return err
	}
	return nil
}

func checkBench(bench string) error {
	if len(bench) > maxBenchLen {
		return &ParamError{ParamBench, bench, fmt.Errorf("%w: %d bytes, more than the %d the kernel command line leaves for it (use a shorter regexp)", ErrOutOfRange, len(bench), maxBenchLen)}
	}
	if err := checkArgValue(bench); err != nil {
		return &ParamError{ParamBench, bench, fmt.Errorf("%w: %w (want a regexp over result names)", ErrMalformed, err)}
	}
	if _, err := regexp.Compile(bench); err != nil {
		return &ParamError{ParamBench, bench, fmt.Errorf("%w: %w", ErrMalformed, err)}
	}
	return nil
}

// checkArgValue checks that a value survives the kernel command line as one
// argument: not empty, and without spaces, quotes or control characters
// (the kernel splits at spaces outside quotes and drops the quotes).
func checkArgValue(v string) error {
	if v == "" {
		return errors.New("empty")
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c <= ' ' || c == 0x7f || c == '"' {
			return errors.New("contains a space, a quote or a control character")
		}
	}
	return nil
}

// KernelArgs encodes the plan as kernel parameters, the inverse of
// DecodePlan: for every plan that passes Validate, DecodePlan of the
// arguments joined by spaces returns the plan. The numeric parameters and
// Bench are always written, so a command line says what a boot ran whatever
// the guest's defaults; Accel, Port and Paced only when they differ
// from DefaultPlan, and so Insight, Count and SkipKallsyms. Validate the plan first: an invalid plan encodes to
// arguments that DecodePlan rejects.
func (p Plan) KernelArgs() []string {
	args := []string{
		ParamBench.Arg(p.Bench),
		ParamSamples.Arg(strconv.Itoa(p.Samples)),
		ParamEntries.Arg(strconv.Itoa(p.Entries)),
		ParamRounds.Arg(strconv.Itoa(p.Rounds)),
		ParamPrefixLen.Arg(strconv.Itoa(p.PrefixLen)),
		ParamBatchEntries.Arg(strconv.Itoa(p.BatchEntries)),
	}
	if p.Accel != "" {
		args = append(args, ParamAccel.Arg(string(p.Accel)))
	}
	if p.Port != PortName {
		args = append(args, ParamPort.Arg(p.Port))
	}
	if p.Paced {
		args = append(args, PacedArg)
	}
	args = append(args, p.insightArgs()...)
	if p.Workload != "" {
		args = append(args, ParamWorkload.Arg(p.Workload))
	}
	if p.Verify != "" {
		args = append(args, ParamVerify.Arg(p.Verify))
	}
	return args
}

// DecodePlan decodes the run plan from a kernel command line (the contents
// of /proc/cmdline): DefaultPlan, with every lpmbisect parameter applied in
// order; without lpmbisect.rounds, Rounds is DefaultRounds of the plan's
// accelerator. Parameters without paramPrefix are ignored; a later repetition of a
// parameter overrides an earlier one, as the kernel does for most of its
// own. A malformed value, an unknown lpmbisect parameter or a plan that
// fails Validate is a *ParamError: running a different benchmark than the
// host asked for would mislabel its results.
func DecodePlan(cmdline string) (Plan, error) {
	p := DefaultPlan()
	roundsGiven := false
	for _, arg := range splitCmdline(cmdline) {
		key, val, _ := strings.Cut(arg, "=")
		if !strings.HasPrefix(key, paramPrefix) {
			continue
		}
		param := Param(key)
		var err error
		switch param {
		case ParamBench:
			p.Bench = val
		case ParamSamples:
			p.Samples, err = parseCount(val)
		case ParamEntries:
			p.Entries, err = parseCount(val)
		case ParamRounds:
			p.Rounds, err = parseCount(val)
			roundsGiven = true
		case ParamPrefixLen:
			p.PrefixLen, err = parseCount(val)
		case ParamBatchEntries:
			p.BatchEntries, err = parseCount(val)
		case ParamAccel:
			p.Accel, err = parseBootAccel(val)
			if err != nil {
				err = fmt.Errorf("%w: %w", ErrMalformed, errors.Unwrap(err))
			}
		case ParamPort:
			p.Port = val
		case ParamPaced:
			switch val {
			case "0", "1":
				p.Paced = val == "1"
			default:
				err = fmt.Errorf("%w: want 0 or 1", ErrMalformed)
			}
		case ParamInsight:
			switch InsightMode(val) {
			case InsightArmed, InsightOn:
				p.Insight = InsightMode(val)
			default:
				err = fmt.Errorf("%w: want 0 or 1", ErrMalformed)
			}
		case ParamCount:
			p.Count = val
		case ParamKallsyms:
			switch val {
			case "0", "1":
				p.SkipKallsyms = val == "0"
			default:
				err = fmt.Errorf("%w: want 0 or 1", ErrMalformed)
			}
		case ParamWorkload:
			p.Workload = val
		case ParamVerify:
			p.Verify = val
		case ParamProfile:
			p.ProfilePeriod, err = parseCount(val)
		case ParamMemory:
			switch val {
			case "0", "1", "2":
				p.Memory, p.Deferred = val != "0", val == "2"
			default:
				err = fmt.Errorf("%w: want 0, 1 or 2", ErrMalformed)
			}
		default:
			err = ErrUnknownParam
		}
		if err != nil {
			return Plan{}, &ParamError{Param: param, Value: val, Err: err}
		}
	}
	if !roundsGiven {
		p.Rounds = DefaultRounds(p.Accel)
	}
	if err := p.Validate(); err != nil {
		return Plan{}, err
	}
	return p, nil
}

// parseCount parses a non-negative decimal integer: digits only, no sign.
// Values too large for an int are out of range (of every limit).
func parseCount(s string) (int, error) {
	if !isDecimal(s) {
		return 0, fmt.Errorf("%w: want a decimal integer", ErrMalformed)
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%w: too large for an integer", ErrOutOfRange)
	}
	return n, nil
}

// splitCmdline splits a kernel command line into arguments the way the
// kernel's next_arg does: at white space (isspace) outside double quotes;
// then a quote that opens the argument or its value is dropped, with the
// quote that ends the argument, so both param="a b" and "param=a b" give
// `param=a b`. Quotes anywhere else stay in the value.
func splitCmdline(s string) []string {
	var args []string
	start, inQuote := -1, false
	for i := 0; i <= len(s); i++ {
		if i < len(s) && (inQuote || !isSpace(s[i])) {
			if start < 0 {
				start = i
			}
			if s[i] == '"' {
				inQuote = !inQuote
			}
			continue
		}
		if start >= 0 {
			args = append(args, unquoteArg(s[start:i]))
			start = -1
		}
	}
	return args
}

// unquoteArg drops the quotes next_arg drops from one argument.
func unquoteArg(arg string) string {
	quoted := strings.HasPrefix(arg, `"`)
	arg = strings.TrimPrefix(arg, `"`)
	param, val, hasVal := strings.Cut(arg, "=")
	if hasVal && strings.HasPrefix(val, `"`) {
		val, quoted = val[1:], true
	}
	if quoted {
		if hasVal {
			val = strings.TrimSuffix(val, `"`)
		} else {
			param = strings.TrimSuffix(param, `"`)
		}
	}
	if !hasVal {
		return param
	}
	return param + "=" + val
}

// isSpace is the kernel's isspace for ASCII.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

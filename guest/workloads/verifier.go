package workloads

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/wire"
)

// The Verifier/prog=NAME benchmarks load a program and report what its
// verification cost: each sample is one load with the verifier log at
// ebpf.LogLevelStats (BPF_LOG_STATS, Linux 5.2), whose statistics lines
// give the processed instructions, the states, the stack depth and the
// verification time; the program's spec gives its size as loaded, its
// type and attach type; and, for a program the verifier accepted,
// BPF_OBJ_GET_INFO_BY_FD gives verified_insns (Linux 5.16) and the size of
// its JITed code (Linux 4.13): every stat of veristat's CSV but its
// mem_peak, which the kernel reports through no interface lpmbisect reads
// (veristat measures it as a cgroup's memory.peak around the load, which
// counts the verifier's allocations only from Linux 6.15, where they are
// charged to the memory cgroup). A program the verifier rejects is not a
// failed benchmark but an outcome: its samples carry wire.VerdictRejected and
// the log's last lines (wire.KeyVerifierError), with the statistics the
// verifier printed before it gave up. See wire.VerifierPrefix for the
// units.

// ReqVerifierStats is the verifier log's statistics level.
var ReqVerifierStats = Requirement{Feature: "verifier statistics (BPF_LOG_STATS)", MinKernel: "5.2", Probe: bpfProbe(func() error { return nil })}

// verifierLogStart is the verifier log's first buffer: enough for the
// statistics and the last lines of a rejection of a small program;
// cilium/ebpf grows it when the kernel says it was too small.
const verifierLogStart = 64 << 10

// verifierStats are the statistics of one verification.
type verifierStats struct {
	// Processed, TotalStates, PeakStates and MaxStatesPerInsn are from
	// the line "processed N insns (limit L) max_states_per_insn M
	// total_states T peak_states P mark_read R".
	Processed, TotalStates, PeakStates, MaxStatesPerInsn uint64
	// MarkRead is that line's mark_read, which newer kernels do not
	// print (HasMarkRead false).
	MarkRead    uint64
	HasMarkRead bool
	// Usec is "verification time N usec": the kernel's clock around
	// bpf_check, in microseconds (thousands of instructions under
	// icount).
	Usec uint64
	// StackBytes is "stack depth A+B+…", the stack depth of each
	// subprogram, summed as veristat sums it (HasStack false when the log
	// has no such line).
	StackBytes uint64
	HasStack   bool
	// Found reports whether the log had the processed line at all.
	Found bool
}

var (
	processedLine = regexp.MustCompile(`^processed (\d+) insns \(limit \d+\) max_states_per_insn (\d+) total_states (\d+) peak_states (\d+)(?: mark_read (\d+))?`)
	timeLine      = regexp.MustCompile(`^verification time (\d+) usec`)
	stackLine     = regexp.MustCompile(`^stack depth (\d+(?:\+\d+)*)$`)
)

// parseVerifierStats reads the statistics lines of a verifier log.
func parseVerifierStats(log []string) verifierStats {
	var s verifierStats
	num := func(v string) uint64 { n, _ := strconv.ParseUint(v, 10, 64); return n }
	for _, l := range log {
		l = strings.TrimSpace(l)
		if m := processedLine.FindStringSubmatch(l); m != nil {
			s.Found = true
			s.Processed, s.MaxStatesPerInsn, s.TotalStates, s.PeakStates = num(m[1]), num(m[2]), num(m[3]), num(m[4])
			if m[5] != "" {
				s.MarkRead, s.HasMarkRead = num(m[5]), true
			}
		}
		if m := timeLine.FindStringSubmatch(l); m != nil {
			s.Usec = num(m[1])
		}
		if m := stackLine.FindStringSubmatch(l); m != nil {
			s.StackBytes, s.HasStack = 0, true
			for _, d := range strings.Split(m[1], "+") {
				s.StackBytes += num(d)
			}
		}
	}
	return s
}

// isStatsLine reports whether l is one of the statistics lines, which
// follow a rejection's reason.
func isStatsLine(l string) bool {
	return processedLine.MatchString(l) || timeLine.MatchString(l) || stackLine.MatchString(l)
}

// rejectionReason is the last lines of a rejected program's verifier log
// before its statistics, joined by " | " and cut to
// wire.MaxVerifierErrorLen bytes.
func rejectionReason(log []string) string {
	var lines []string
	for _, l := range log {
		if l = strings.TrimSpace(l); l != "" && !isStatsLine(l) {
			lines = append(lines, l)
		}
	}
	s := verifierTail(lines)
	if len(s) > wire.MaxVerifierErrorLen {
		s = strings.ToValidUTF8(s[:wire.MaxVerifierErrorLen-3], "") + "..."
	}
	return s
}

// loadFacts are what a load tells about a program besides the
// verifier's statistics: what the kernel was given (its type, attach type
// and size) and what it made of it (bpf_prog_info).
type loadFacts struct {
	// ProgType and AttachType are libbpf's names of the spec's type and
	// expected attach type ("" when libbpf has none).
	ProgType, AttachType string
	// Insns is the program's size as loaded, in 8-byte instructions.
	Insns uint64
	// Verified is bpf_prog_info.verified_insns (Linux 5.16) and Jited
	// its jited_prog_len (Linux 4.13), where the kernel gave them: never
	// for a rejected program.
	Verified, Jited       uint32
	HasVerified, HasJited bool
}

// specFacts are the facts of a program's spec, before it is loaded.
func specFacts(p *ebpf.ProgramSpec) loadFacts {
	return loadFacts{ProgType: libbpfProgTypes[p.Type], AttachType: libbpfAttachTypes[p.AttachType],
		Insns: p.Instructions.Size() / asm.InstructionSize}
}

// verifierSample turns one verification into a sample: the
// verification time per load, and the counts.
func verifierSample(st verifierStats, f loadFacts, reason string) Sample {
	s := Sample{Ops: 1, Elapsed: st.Usec * 1000}
	add := func(v uint64, unit string) { s.Extra = append(s.Extra, Metric{Value: float64(v), Unit: unit}) }
	add(st.Processed, wire.UnitInsnsProcessed)
	if f.HasVerified {
		add(uint64(f.Verified), wire.UnitInsnsVerified)
	}
	add(st.TotalStates, wire.UnitStatesTotal)
	add(st.PeakStates, wire.UnitStatesPeak)
	add(st.MaxStatesPerInsn, wire.UnitStatesPerInsnMax)
	if st.HasMarkRead {
		add(st.MarkRead, wire.UnitMarkReadMax)
	}
	if st.HasStack {
		add(st.StackBytes, wire.UnitStackBytes)
	}
	add(f.Insns, wire.UnitProgInsns)
	if f.HasJited {
		add(uint64(f.Jited), wire.UnitJitedBytes)
	}
	add(wire.VerdictAccepted, wire.UnitVerdict)
	if reason != "" {
		s.Extra[len(s.Extra)-1].Value = wire.VerdictRejected
		s.Labels = append(s.Labels, benchfmt.Config{Key: wire.KeyVerifierError, Value: []byte(reason), File: true})
	}
	for _, l := range []struct{ key, value string }{{wire.KeyProgType, f.ProgType}, {wire.KeyAttachType, f.AttachType}} {
		if l.value != "" {
			s.Labels = append(s.Labels, benchfmt.Config{Key: l.key, Value: []byte(l.value), File: true})
		}
	}
	return s
}

// verifyOnce loads program prog of spec (a copy, with its maps) with the
// statistics log and returns its sample. A rejection is a sample; any
// other failure to load is an error.
func verifyOnce(spec *ebpf.CollectionSpec, prog string) (Sample, error) {
	spec = spec.Copy()
	for n := range spec.Programs {
		if n != prog {
			delete(spec.Programs, n)
		}
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{
		Programs: ebpf.ProgramOptions{LogLevel: ebpf.LogLevelStats, LogSizeStart: verifierLogStart},
	})
	facts := specFacts(spec.Programs[prog])
	var verr *ebpf.VerifierError
	switch {
	case errors.As(err, &verr):
		st := parseVerifierStats(verr.Log)
		return verifierSample(st, facts, rejectionReason(verr.Log)), nil
	case err != nil && spec.Programs[prog].AttachTo != "":
		return Sample{}, fmt.Errorf("load %s: %w", prog, untraceable(err, spec.Programs[prog].AttachTo))
	case err != nil:
		return Sample{}, fmt.Errorf("load %s: %w", prog, err)
	}
	defer coll.Close()
	p := coll.Programs[prog]
	st := parseVerifierStats(strings.Split(p.VerifierLog, "\n"))
	if !st.Found {
		return Sample{}, fmt.Errorf("load %s: the verifier log has no statistics line (log level %d ignored?)", prog, ebpf.LogLevelStats)
	}
	if info, err := p.Info(); err == nil {
		facts.Verified, facts.HasVerified = info.VerifiedInstructions()
		jited, err := info.JitedSize()
		facts.Jited, facts.HasJited = jited, err == nil
	}
	return verifierSample(st, facts, ""), nil
}

// verifierRun reports Params.Samples verifications of prog from the
// collection spec that load returns.
func verifierRun(prog string, load func(Params) (*ebpf.CollectionSpec, error)) func(*Run) error {
	return func(r *Run) error {
		spec, err := load(r.Params)
		if err != nil {
			return err
		}
		rejected := false
		return reportSamples(r, func() (Sample, error) {
			s, err := verifyOnce(spec, prog)
			if err == nil && s.Labels != nil && s.Labels[0].Key == wire.KeyVerifierError && !rejected {
				rejected = true
				r.Info("rejected by the verifier: " + string(s.Labels[0].Value))
			}
			return s, err
		})
	}
}

// verifierSweepKeys are the parts of benchmark names that sweep how a
// program is run, not the program: benchmarks that differ only in them
// load the same programs (TestVerifierRowsCoverEveryProgram checks it),
// which get one Verifier row, verified from the first one's collection.
var verifierSweepKeys = []string{"op", "producers"}

// verifierRowName is the name of the Verifier row of program prog of the
// benchmark named bench: wire.VerifierPrefix, the program's name, and the
// parts of bench that set its programs apart from other benchmarks' of the
// same name (bench's parts but the family and verifierSweepKeys; the
// operation is in the program's name). A part keyed prog (TaskStorage's
// driver) is written driver, as the row's own prog= names the program.
// The benchmark's Params follow in the full name.
func verifierRowName(prog, bench string) string {
	name := wire.VerifierPrefix + prog
	parts := strings.Split(bench, "/")
	for _, part := range parts[1:] {
		key, value, ok := strings.Cut(part, "=")
		if !ok || slices.Contains(verifierSweepKeys, key) {
			continue
		}
		if key == "prog" {
			key = "driver"
		}
		name += "/" + key + "=" + value
	}
	return name
}

// verifierBenchmarks are the Verifier rows of every program the
// benchmarks of all load (Benchmark.Spec and Programs): one per program
// and variant (verifierRowName), in the order of all, with the
// benchmark's parameters and requirements, so that a kernel without a
// program's map type or helper reports its row unsupported.
func verifierBenchmarks(all []*Benchmark) []*Benchmark {
	var out []*Benchmark
	seen := map[string]bool{}
	for _, b := range all {
		if b.Spec == nil {
			continue
		}
		for _, prog := range b.Programs {
			name := verifierRowName(prog, b.Name)
			if seen[name] {
				continue
			}
			seen[name] = true
			out = append(out, &Benchmark{
				Name:     name,
				Doc:      fmt.Sprintf("the verifier's cost of the program %s of %s: verification time per load, instructions processed and verified, states, stack depth, program and JIT sizes", prog, b.Name),
				Params:   b.Params,
				Requires: append([]Requirement{ReqVerifierStats}, b.Requires...),
				Run:      verifierRun(prog, b.Spec),
			})
		}
	}
	return out
}

// OwnPrograms are the names of the programs lpmbisect's own benchmarks
// load (Benchmark.Programs), each once, in the order of Registry: the
// names a --workload program may not take, and the programs of
// lpmbisect's own Verifier rows.
func OwnPrograms() []string {
	var out []string
	for _, b := range Registry() {
		for _, p := range b.Programs {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// workloadVerifier is the row of the user's program prog, loaded from the
// object at object.
func workloadVerifier(prog, object string) *Benchmark {
	return &Benchmark{
		Name:     wire.VerifierPrefix + prog,
		Doc:      "the verifier's cost of the user's program " + prog + " (--workload): verification time per load, instructions processed and verified, states, stack depth, program and JIT sizes; or its rejection",
		Requires: []Requirement{ReqVerifierStats},
		Run: verifierRun(prog, func(Params) (*ebpf.CollectionSpec, error) {
			spec, err := ebpf.LoadCollectionSpec(object)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", object, err)
			}
			if spec.Programs[prog] == nil {
				return nil, fmt.Errorf("the object has no program %q", prog)
			}
			return spec, nil
		}),
	}
}

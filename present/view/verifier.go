package view

import (
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/wire"
)

// ownObject is the File of lpmbisect's own programs in verifier reports
// (veristat's File column).
const ownObject = "lpmbisect"

// unknownWorkload is the File of a --workload program when the object is
// not known (a results file given again to stat): the rows of programs
// that are not lpmbisect's own (Workload.Own).
const unknownWorkload = "workload"

// VerifierProgram is one program's verifier rows (wire.VerifierPrefix),
// side by side: what veristat prints per program.
type VerifierProgram struct {
	// File is the object the program came from: the --workload object's
	// base name, or ownObject.
	File string `json:"file"`
	// Program is the program's name and, for lpmbisect's own programs,
	// the variant and parameters of its row ("hash_lookup/map=lru_hash/
	// key_size=4/entries=10000"): the row's name after
	// wire.VerifierPrefix, unique per row as veristat's prog_name must be
	// (several benchmarks load programs of one name that differ).
	Program string `json:"program"`
	// Benchmark is the row's full name ("Verifier/prog=NAME[/…]").
	Benchmark string `json:"benchmark"`
	// A and B are the sides; a run of one kernel has only A.
	A, B VerifierSide `json:"-"`
	// Verdicts are the rows' verdicts by unit, in a comparison.
	Verdicts map[string]compare.Verdict `json:"-"`
}

// VerifierSide is one kernel's verification of a program: the centres
// (medians of the boots' medians) of its values.
type VerifierSide struct {
	// Present reports whether this side loaded the program at all.
	Present bool
	// Rejected reports whether the verifier rejected it; Error is then
	// its last lines (wire.KeyVerifierError).
	Rejected bool
	Error    string
	// DurationUs is the kernel's verification time in microseconds, as
	// veristat prints it: under icount, thousands of instructions
	// (HasDuration false when the results have no time).
	DurationUs  float64
	HasDuration bool
	// Stats are the counts by unit (wire.verifierUnits but the verdict):
	// those the side's loads reported.
	Stats map[string]float64
	// ProgType and AttachType are libbpf's names of the program's type
	// and attach type as loaded (wire.KeyProgType, wire.KeyAttachType);
	// "" when the results do not say.
	ProgType, AttachType string
}

// Verdict is veristat's word for the side: "success", "failure", or ""
// when absent.
func (s VerifierSide) Verdict() string {
	switch {
	case !s.Present:
		return ""
	case s.Rejected:
		return "failure"
	}
	return "success"
}

// Workload names the --workload object for verifier reports.
type Workload struct {
	// File is the object's base name; Programs, those it holds (nil when
	// not known: see unknownWorkload).
	File     string   `json:"file,omitempty"`
	Programs []string `json:"programs,omitempty"`
	// Own are the names of lpmbisect's own programs
	// (workloads.OwnPrograms): their rows are ownObject's.
	Own []string `json:"-"`
}

// Verifiers gathers the verifier rows among rows (a comparison's, or one
// kernel's from compare.Summarize, whose A side is the kernel) with what
// their loads' results say of them (the rejection reason, the program and
// attach type), one VerifierProgram per program, in the order of rows.
func Verifiers(rows []compare.Row, results []*benchfmt.Result, w Workload) []VerifierProgram {
	var out []VerifierProgram
	index := map[string]int{}
	for _, r := range rows {
		rest, ok := strings.CutPrefix(r.Benchmark, wire.VerifierPrefix)
		if !ok {
			continue
		}
		i, ok := index[r.Benchmark]
		if !ok {
			prog, _, _ := strings.Cut(rest, "/")
			file := ownObject
			switch {
			case slices.Contains(w.Programs, prog):
				file = w.File
			case w.Programs == nil && !slices.Contains(w.Own, prog):
				file = unknownWorkload
			}
			i = len(out)
			index[r.Benchmark] = i
			out = append(out, VerifierProgram{File: file, Program: rest, Benchmark: r.Benchmark, Verdicts: map[string]compare.Verdict{}})
		}
		p := &out[i]
		if r.B.Boots > 0 {
			p.Verdicts[r.Unit] = r.Verdict
		}
		for side, sum := range []compare.Summary{r.A, r.B} {
			if sum.Boots == 0 {
				continue
			}
			s := &p.A
			if side == 1 {
				s = &p.B
			}
			s.Present = true
			if s.Stats == nil {
				s.Stats = map[string]float64{}
			}
			switch r.Unit {
			case "sec/op":
				s.DurationUs, s.HasDuration = sum.Center*1e6, true
			case wire.UnitInsnPerOp:
				s.DurationUs, s.HasDuration = sum.Center/1000, true
			case wire.UnitVerdict:
				s.Rejected = sum.Center > wire.VerdictAccepted
			default:
				s.Stats[r.Unit] = sum.Center
			}
		}
	}
	for _, res := range results {
		i, ok := index[res.Name.String()]
		if !ok {
			continue
		}
		s := &out[i].A
		if res.GetConfig(wire.KeySide) == compare.SideB {
			s = &out[i].B
		}
		for _, f := range []struct {
			key string
			to  *string
		}{{wire.KeyVerifierError, &s.Error}, {wire.KeyProgType, &s.ProgType}, {wire.KeyAttachType, &s.AttachType}} {
			if v := res.GetConfig(f.key); v != "" {
				*f.to = v
			}
		}
	}
	return out
}

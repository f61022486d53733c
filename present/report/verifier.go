package report

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/wire"
)

// veristatStat is one of veristat's stats (veristat v0.5.1, stat_defs):
// its names, the first the CSV's header and the others the aliases its
// --emit takes too, and how a side's value is had.
type veristatStat struct {
	names []string
	// key marks file_name and prog_name, which name the program rather
	// than measure it: veristat's -C writes them once, not per side.
	key bool
	// text marks a stat whose value is a word (verdict, prog_type,
	// attach_type): -C's difference of two words is MATCH or MISMATCH.
	text bool
	// value is the stat of program p on side s: a whole number or a word,
	// and whether the side has it.
	value func(p view.VerifierProgram, s view.VerifierSide) (string, bool)
}

// veristatCount is the value of a verifier row's count in unit, rounded
// to a whole number as veristat writes it.
func veristatCount(unit string) func(view.VerifierProgram, view.VerifierSide) (string, bool) {
	return func(_ view.VerifierProgram, s view.VerifierSide) (string, bool) {
		v, ok := s.Stats[unit]
		return strconv.FormatInt(int64(math.Round(v)), 10), ok
	}
}

// veristatStats are veristat's stats in the order of its CSV (veristat -o
// csv without --emit): every column of that file.
var veristatStats = []veristatStat{
	{names: []string{"file_name", "filename", "file"}, key: true,
		value: func(p view.VerifierProgram, _ view.VerifierSide) (string, bool) { return veristatName(p.File), true }},
	{names: []string{"prog_name", "progname", "prog"}, key: true,
		value: func(p view.VerifierProgram, _ view.VerifierSide) (string, bool) { return veristatName(p.Program), true }},
	{names: []string{"verdict"}, text: true,
		value: func(_ view.VerifierProgram, s view.VerifierSide) (string, bool) { return s.Verdict(), s.Present }},
	{names: []string{"duration", "dur"},
		value: func(_ view.VerifierProgram, s view.VerifierSide) (string, bool) {
			return strconv.FormatInt(int64(math.Round(s.DurationUs)), 10), s.HasDuration
		}},
	{names: []string{"total_insns", "insns"}, value: veristatCount(wire.UnitInsnsProcessed)},
	{names: []string{"total_states", "states"}, value: veristatCount(wire.UnitStatesTotal)},
	{names: []string{"peak_states"}, value: veristatCount(wire.UnitStatesPeak)},
	{names: []string{"max_states_per_insn"}, value: veristatCount(wire.UnitStatesPerInsnMax)},
	{names: []string{"max_mark_read_len", "mark_read"}, value: veristatCount(wire.UnitMarkReadMax)},
	{names: []string{"prog_size"}, value: veristatCount(wire.UnitProgInsns)},
	{names: []string{"prog_size_jited"}, value: veristatCount(wire.UnitJitedBytes)},
	{names: []string{"prog_type"}, text: true,
		value: func(_ view.VerifierProgram, s view.VerifierSide) (string, bool) { return s.ProgType, s.ProgType != "" }},
	{names: []string{"attach_type"}, text: true,
		value: func(_ view.VerifierProgram, s view.VerifierSide) (string, bool) {
			return s.AttachType, s.AttachType != ""
		}},
	{names: []string{"stack_depth", "stack"}, value: veristatCount(wire.UnitStackBytes)},
	// veristat's mem_peak is a cgroup's memory.peak around the load, in
	// MiB: no kernel reports the verifier's memory through an interface
	// lpmbisect reads (see guest/workloads), so it is always N/A.
	{names: []string{"mem_peak"},
		value: func(view.VerifierProgram, view.VerifierSide) (string, bool) { return "", false }},
}

// veristatNA is what veristat writes for a value it has not; it reads it
// back in a number's column (as 0, saying "Failed to parse 'N/A' as
// integer" on standard error), where an empty cell makes it stop.
const veristatNA = "N/A"

// VeristatEmitError is a --emit list with a name that is not one of
// veristat's stats.
type VeristatEmitError struct{ Name string }

func (e *VeristatEmitError) Error() string {
	var names, aliases []string
	for _, s := range veristatStats {
		names, aliases = append(names, s.names[0]), append(aliases, s.names[1:]...)
	}
	return fmt.Sprintf("%q is not one of veristat's stats (%s, or their aliases %s)", e.Name, strings.Join(names, ", "), strings.Join(aliases, ", "))
}

// ParseVeristatEmit reads a list of veristat's stats as its --emit takes
// it ("file,prog,verdict,states": names or aliases, comma-separated) and
// returns their names (the CSV's headers), in its order; nil for "", all
// of them.
func ParseVeristatEmit(spec string) ([]string, error) {
	if spec == "" {
		return nil, nil
	}
	var out []string
	for _, name := range strings.Split(spec, ",") {
		i := slices.IndexFunc(veristatStats, func(s veristatStat) bool { return slices.Contains(s.names, name) })
		if i < 0 {
			return nil, &VeristatEmitError{Name: name}
		}
		out = append(out, veristatStats[i].names[0])
	}
	return out, nil
}

// veristatEmitted are the stats named by emit (ParseVeristatEmit's
// names), or all of them for nil.
func veristatEmitted(emit []string) []veristatStat {
	if emit == nil {
		return veristatStats
	}
	var out []veristatStat
	for _, name := range emit {
		if i := slices.IndexFunc(veristatStats, func(s veristatStat) bool { return s.names[0] == name }); i >= 0 {
			out = append(out, veristatStats[i])
		}
	}
	return out
}

// veristatName keeps a file or program name readable by veristat, which
// splits its lines at every comma and newline, honouring no quotes: each
// comma and control character becomes "_".
func veristatName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == ',' || r < 0x20 || r == 0x7f {
			return '_'
		}
		return r
	}, s)
}

// veristatOrder are progs in veristat's order: by file, then program, as
// bytes (strcmp), with the names as veristat reads them (veristatName).
func veristatOrder(progs []view.VerifierProgram) []view.VerifierProgram {
	out := slices.Clone(progs)
	slices.SortStableFunc(out, func(a, b view.VerifierProgram) int {
		return cmp.Or(strings.Compare(veristatName(a.File), veristatName(b.File)), strings.Compare(veristatName(a.Program), veristatName(b.Program)))
	})
	return out
}

// WriteVeristat writes the verifier rows of one kernel (side A) as
// veristat's CSV (veristat -o csv): a line per program, by file and
// program as veristat orders them, with the stats of emit (veristat's
// names; nil for all fifteen of its CSV, file_name to mem_peak); N/A where
// the kernel or the results do not give a stat (mem_peak always, no
// prog_size_jited for a rejected program, no max_mark_read_len where the
// kernel no longer prints it). veristat's -R and -C read it. duration is
// in µs as the kernel counts it: thousands of instructions under icount.
func WriteVeristat(w io.Writer, progs []view.VerifierProgram, emit []string) error {
	stats := veristatEmitted(emit)
	bw := bufio.NewWriter(w)
	line := make([]string, 0, len(stats))
	for _, st := range stats {
		line = append(line, st.names[0])
	}
	fmt.Fprintln(bw, strings.Join(line, ","))
	for _, p := range veristatOrder(progs) {
		if !p.A.Present {
			continue
		}
		line = line[:0]
		for _, st := range stats {
			v, ok := st.value(p, p.A)
			if !ok {
				v = veristatNA
			}
			line = append(line, v)
		}
		fmt.Fprintln(bw, strings.Join(line, ","))
	}
	return bw.Flush()
}

// writeVeristatCompare writes the verifier rows of a comparison as
// veristat -C -o csv does: the stats of emit (nil: all of veristat's CSV),
// file_name and prog_name once, every other stat as its base (A),
// comparison (B) and difference columns (_base, _comp, _diff; the
// difference "+N (+P.PP%)", or MATCH and MISMATCH for a word such as the
// verdict, N/A where a side has not the program or the stat), a line per
// program in veristat's order. With --emit file,prog,verdict,states it is
// the file BPF CI's veristat_compare.py reads.
func writeVeristatCompare(w io.Writer, progs []view.VerifierProgram, emit []string) error {
	stats := veristatEmitted(emit)
	bw := bufio.NewWriter(w)
	var line []string
	for _, st := range stats {
		if st.key {
			line = append(line, st.names[0])
			continue
		}
		line = append(line, st.names[0]+"_base", st.names[0]+"_comp", st.names[0]+"_diff")
	}
	fmt.Fprintln(bw, strings.Join(line, ","))
	for _, p := range veristatOrder(progs) {
		line = line[:0]
		for _, st := range stats {
			a, aok := st.value(p, p.A)
			if st.key {
				line = append(line, a)
				continue
			}
			b, bok := st.value(p, p.B)
			aok, bok = aok && p.A.Present, bok && p.B.Present
			diff := veristatNA
			switch {
			case !aok || !bok:
			case st.text && a == b:
				diff = "MATCH"
			case st.text:
				diff = "MISMATCH"
			default:
				diff = veristatDiff(a, b)
			}
			if !aok {
				a = veristatNA
			}
			if !bok {
				b = veristatNA
			}
			line = append(line, a, b, diff)
		}
		fmt.Fprintln(bw, strings.Join(line, ","))
	}
	return bw.Flush()
}

// veristatDiff is veristat's difference cell of two whole numbers: "+N
// (+P.PP%)", ±100 % from 0, +0 (+0.00%) for 0 to 0.
func veristatDiff(as, bs string) string {
	a, _ := strconv.ParseInt(as, 10, 64)
	b, _ := strconv.ParseInt(bs, 10, 64)
	pct := 0.0
	switch {
	case a != 0:
		pct = float64(b-a) * 100 / float64(a)
	case b < a:
		pct = -100
	case b > a:
		pct = 100
	}
	return fmt.Sprintf("%+d (%+.2f%%)", b-a, pct)
}

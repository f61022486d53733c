package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/wire"
)

// veristatStat is one numeric column of veristat's CSV: its name there
// (veristat's stat name, which its -C and -R read back) and the unit of
// the verifier row it comes from ("" for the duration).
type veristatStat struct {
	name, unit string
}

// veristatStats are veristat's default CSV columns after file_name,
// prog_name and verdict, in its order.
var veristatStats = []veristatStat{
	{"duration", ""},
	{"total_insns", wire.UnitInsnsProcessed},
	{"total_states", wire.UnitStatesTotal},
	{"peak_states", wire.UnitStatesPeak},
	{"max_states_per_insn", wire.UnitStatesPerInsnMax},
	{"mark_read_max_len", wire.UnitMarkReadMax},
}

// value is the side's value of the column, as veristat prints it: a
// whole number.
func (c veristatStat) value(s view.VerifierSide) int64 {
	if c.unit == "" {
		return int64(math.Round(s.DurationUs))
	}
	return int64(math.Round(s.Stats[c.unit]))
}

// WriteVeristat writes the verifier rows of one kernel (side A) as
// veristat's CSV (veristat -o csv): file_name, prog_name, verdict,
// duration (µs; thousands of instructions under icount), total_insns,
// total_states, peak_states, max_states_per_insn, mark_read_max_len.
func WriteVeristat(w io.Writer, progs []view.VerifierProgram) error {
	cw := csv.NewWriter(w)
	head := []string{"file_name", "prog_name", "verdict"}
	for _, c := range veristatStats {
		head = append(head, c.name)
	}
	cw.Write(head)
	for _, p := range progs {
		if !p.A.Present {
			continue
		}
		rec := []string{p.File, p.Program, p.A.Verdict()}
		for _, c := range veristatStats {
			rec = append(rec, strconv.FormatInt(c.value(p.A), 10))
		}
		cw.Write(rec)
	}
	cw.Flush()
	return cw.Error()
}

// WriteVeristatCompare writes the verifier rows of a comparison as
// veristat -C -o csv does: file_name, prog_name, then for each stat its
// base (A), comparison (B) and difference columns (_base, _comp, _diff;
// the difference "+N (+P.PP%)", or MATCH/MISMATCH for the verdict, N/A
// for a side without the program).
func WriteVeristatCompare(w io.Writer, progs []view.VerifierProgram) error {
	cw := csv.NewWriter(w)
	head := []string{"file_name", "prog_name", "verdict_base", "verdict_comp", "verdict_diff"}
	for _, c := range veristatStats {
		head = append(head, c.name+"_base", c.name+"_comp", c.name+"_diff")
	}
	cw.Write(head)
	na := func(s view.VerifierSide, v string) string {
		if !s.Present {
			return "N/A"
		}
		return v
	}
	for _, p := range progs {
		diff := "MISMATCH"
		switch {
		case !p.A.Present || !p.B.Present:
			diff = "N/A"
		case p.A.Verdict() == p.B.Verdict():
			diff = "MATCH"
		}
		rec := []string{p.File, p.Program, na(p.A, p.A.Verdict()), na(p.B, p.B.Verdict()), diff}
		for _, c := range veristatStats {
			a, b := c.value(p.A), c.value(p.B)
			d := "N/A"
			if p.A.Present && p.B.Present {
				d = veristatDiff(a, b)
			}
			rec = append(rec, na(p.A, strconv.FormatInt(a, 10)), na(p.B, strconv.FormatInt(b, 10)), d)
		}
		cw.Write(rec)
	}
	cw.Flush()
	return cw.Error()
}

// veristatDiff is veristat's difference cell: "+N (+P.PP%)", ±100 % from
// 0, +0 (+0.00%) for 0 to 0.
func veristatDiff(a, b int64) string {
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

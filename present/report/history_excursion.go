package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// This file holds what every history format says of excursions: nights
// that lay far from the nights on both sides of them and that the
// change-point pass leaves out of its statistics (package changepoint).
// They are listed apart from the change points and never drawn as one.

func sortedExcursions(excs []history.Excursion) []history.Excursion {
	out := slices.Clone(excs)
	slices.SortStableFunc(out, func(a, b history.Excursion) int {
		return cmp.Or(cmp.Compare(a.Night, b.Night), cmp.Compare(a.Benchmark, b.Benchmark),
			cmp.Compare(a.Unit, b.Unit), cmp.Compare(a.Line, b.Line))
	})
	return out
}

// excursionsOn returns the excursions of the night of date.
func (v *seriesView) excursionsOn(date string) []history.Excursion {
	var out []history.Excursion
	for _, e := range v.excursions {
		if e.Night == date {
			out = append(out, e)
		}
	}
	return out
}

// accelOf is the accelerator that measured the night of date, else the
// series'.
func (v *seriesView) accelOf(date string) string {
	if n, ok := v.night(date); ok && n.Accel != "" {
		return n.Accel
	}
	return v.series.Accel
}

// excursionMeaning is view.ExcursionMeaning for an excursion of v.
func (v *seriesView) excursionMeaning(e history.Excursion) string {
	return view.ExcursionMeaning(e.Line, v.accelOf(e.Night))
}

// excursionNote is a night's note of one of its excursions: "excursion:
// LPMTrie/op=lookup insn/op, kernel line, -17.0% from its neighbouring
// nights".
func excursionNote(e history.Excursion) string {
	return fmt.Sprintf("excursion: %s %s, %s line, %s from its neighbouring nights", e.Benchmark, unitName(e.Unit), e.Line, view.FormatDelta(e.DeltaPct))
}

// excursionsSummary says "; 1 excursion", or "" for none.
func (v *seriesView) excursionsSummary() string {
	if len(v.excursions) == 0 {
		return ""
	}
	return "; " + countOf(len(v.excursions), "excursion")
}

// excursionsHeading introduces the list of a series' excursions.
const excursionsHeading = "nights far from the nights on both sides of them, left out of the change points"

// writeExcursionsText lists the excursions of v, one a line: night,
// benchmark, line, departure and what it means.
func (v *seriesView) writeExcursionsText(w io.Writer) {
	if len(v.excursions) == 0 {
		return
	}
	fmt.Fprintf(w, "\nexcursions of %s (%s):\n", v.series.Name, excursionsHeading)
	var cells [][]string
	for _, e := range v.excursions {
		cells = append(cells, []string{e.Night, e.Benchmark + " " + unitName(e.Unit), string(e.Line) + " line",
			view.FormatDelta(e.DeltaPct), v.excursionMeaning(e)})
	}
	for _, line := range padCells(cells) {
		fmt.Fprintln(w, "  "+line)
	}
}

// writeExcursionsMarkdown is writeExcursionsText as a table.
func (v *seriesView) writeExcursionsMarkdown(w io.Writer) {
	if len(v.excursions) == 0 {
		return
	}
	fmt.Fprintf(w, "\nExcursions (%s):\n\n| night | benchmark | line | from its neighbours | meaning |\n|---|---|---|--:|---|\n", excursionsHeading)
	for _, e := range v.excursions {
		fmt.Fprintf(w, "| %s | `%s` %s | %s | %s | %s |\n", e.Night, mdCellCode(e.Benchmark), mdEscape(unitName(e.Unit)), e.Line,
			view.FormatDelta(e.DeltaPct), mdEscape(v.excursionMeaning(e)))
	}
}

// ExcursionDoc is one excursion of a series in a HistoryDocument.
type ExcursionDoc struct {
	Night     string `json:"night"` // YYYY-MM-DD
	Benchmark string `json:"benchmark"`
	Unit      string `json:"unit"`
	Control   bool   `json:"control"`
	// Line is "kernel" or "host", as a change point's.
	Line string `json:"line"`
	// Level is the level the night departed from, in the line's terms
	// (the tip/reference ratio on the kernel line, the reference's value
	// on the host line); DeltaPct the departure in percent.
	Level    *float64 `json:"level"`
	DeltaPct *float64 `json:"delta_pct"`
	// Meaning says what it is: under instruction counts a kernel that was
	// different that night, under wall time a bad night.
	Meaning string `json:"meaning"`
}

func (v *seriesView) excursionDocs() []ExcursionDoc {
	var out []ExcursionDoc
	for _, e := range v.excursions {
		out = append(out, ExcursionDoc{Night: e.Night, Benchmark: e.Benchmark, Unit: e.Unit, Control: compare.IsControl(e.Benchmark, nil),
			Line: string(e.Line), Level: finite(e.Level), DeltaPct: finite(e.DeltaPct), Meaning: v.excursionMeaning(e)})
	}
	return out
}

// writeMailExcursions lists the excursions of a change-point mail: a night
// inside a change point's range that the pass left out, or one found the
// same night.
func writeMailExcursions(w io.Writer, m view.Mail) {
	if len(m.Excursions) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### Excursions\n\n%s\n\n", wrap("Nights far from the nights on both sides of them: the change points leave them out, "+
		"and a range that has one inside may hide which kernel moved.", 78, ""))
	accel := cmp.Or(m.After.Accel, m.Series.Accel)
	for _, e := range sortedExcursions(m.Excursions) {
		item := wrap(fmt.Sprintf("%s: `%s` %s, %s line, %s from its neighbouring nights: %s.", e.Night, mdCode(e.Benchmark),
			mdEscape(unitName(e.Unit)), e.Line, view.FormatDelta(e.DeltaPct), mdEscape(view.ExcursionMeaning(e.Line, accel))), 78, "  ")
		fmt.Fprintln(w, "- "+strings.TrimPrefix(item, "  "))
	}
}

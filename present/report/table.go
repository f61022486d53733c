package report

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/perf/benchunit"

	"github.com/lpmbisect/lpmbisect/internal/words"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// WriteTable writes the comparison as a terminal table in the spirit of
// benchstat: one table per unit, one line per benchmark, with each side's
// centre ± the confidence interval (in % of the centre), the within-boot
// spread, the change from A to B, the p-value of the test, the number of
// boots and the verdict. Unlike benchstat, the change is printed even when it
// is not significant: the verdict column says what it is worth. Notes are
// printed as numbered footnotes under each table. writeText prints it below
// the headlines.
//
// Values are scaled with SI prefixes as benchstat does; note that benchfmt
// reads "ns/op" as "sec/op", so 630 ns/op prints as "630.0n" sec/op.
//
// A paired report says so first (pairedExplanation); its change column is
// the median change of the pairs and its n column counts complete pairs.
func WriteTable(w io.Writer, rep *compare.Report) error {
	bw := bufio.NewWriter(w)
	if rep.Paired {
		fmt.Fprintf(bw, "%s\n", pairedExplanation)
		fmt.Fprintf(bw, "pairs are the unit: each boot counts as the median of its samples; vs A = median over pairs of B/A − 1; n = complete pairs\n")
		fmt.Fprintf(bw, "centre = median over a side's boots ± %s confidence interval (moves with host state, which the pairs cancel); in-boot = median over boots of (max-min)/median; α=%v\n",
			pct(rep.Confidence), rep.Alpha)
	} else {
		fmt.Fprintf(bw, "boots are the unit: each boot counts once, as the median of its samples\n")
		fmt.Fprintf(bw, "centre = median over boots ± %s confidence interval; in-boot = median over boots of (max-min)/median; α=%v\n",
			pct(rep.Confidence), rep.Alpha)
	}
	fmt.Fprintf(bw, "%s\n", verdictRule(rep))
	var tables []string // the units, in the order of the rows
	for _, row := range rep.Rows {
		if !slices.Contains(tables, row.Unit) {
			tables = append(tables, row.Unit)
		}
	}
	for _, unit := range tables {
		bw.WriteString("\n")
		writeUnit(bw, rep, unit)
	}
	return bw.Flush()
}

// Columns of a unit's table. Each side has its centre, the ± interval and the
// in-boot spread; B also has the delta, p and n.
const (
	colName = iota
	colACenter
	colACI
	colASpread
	colBCenter
	colBCI
	colBSpread
	colDelta
	colP
	colN
	colVerdict
	numCols
)

// layout describes the columns: alignment, the spaces before each column and
// the header groups.
var layout = struct {
	right [numCols]bool
	gap   [numCols]int
	// groups are runs of columns under one header label, each preceded by
	// "│ " in headers (and two spaces in rows).
	groups [][2]int // [first, last] column
	// stretch is the column of each group that widens when the group's
	// label is wider than its columns.
	stretch []int
}{
	right:   [numCols]bool{colACenter: true, colASpread: true, colBCenter: true, colBSpread: true, colDelta: true},
	gap:     [numCols]int{colACI: 1, colASpread: 3, colBCI: 1, colBSpread: 3, colDelta: 3, colP: 2, colN: 1, colVerdict: 1},
	groups:  [][2]int{{colName, colName}, {colACenter, colASpread}, {colBCenter, colVerdict}},
	stretch: []int{colName, colACI, colVerdict},
}

func writeUnit(w io.Writer, rep *compare.Report, unit string) {
	var footnotes []string
	var lines [][numCols]string
	var marks []string
	for _, row := range rep.Rows {
		if row.Unit != unit {
			continue
		}
		lines = append(lines, formatRow(row))
		var mark string
		for _, note := range rowNotes(rep, row) {
			i := slices.Index(footnotes, note)
			if i < 0 {
				footnotes = append(footnotes, note)
				i = len(footnotes) - 1
			}
			mark += superscript(i + 1)
		}
		marks = append(marks, mark)
	}

	var head [numCols]string
	head[colACenter], head[colBCenter] = unit, unit
	head[colASpread], head[colBSpread] = "in-boot", "in-boot"
	head[colDelta] = "vs A"
	head[colVerdict] = "verdict"

	var width [numCols]int
	for _, row := range append(lines, head) {
		for c, s := range row {
			width[c] = max(width[c], runeLen(s))
		}
	}
	// Widen groups whose label does not fit.
	labels := []string{"", rep.A.Label(), rep.B.Label()}
	for g, span := range layout.groups {
		if extra := runeLen(labels[g]) - groupWidth(width, span); extra > 0 {
			width[layout.stretch[g]] += extra
		}
	}

	// Header: group labels, then column headings.
	var b strings.Builder
	for g, span := range layout.groups {
		if g > 0 {
			b.WriteString("│ ")
		}
		b.WriteString(pad(labels[g], groupWidth(width, span), false))
		b.WriteString(" ")
	}
	b.WriteString("│")
	fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	fmt.Fprintln(w, formatLine(head, width, "│ ")+"│")
	for i, row := range lines {
		line := formatLine(row, width, "  ") + marks[i] // the line ends in a space
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	for i, note := range footnotes {
		fmt.Fprintf(w, "%s %s\n", superscript(i+1), note)
	}
}

// formatLine lays out one line of cells; groupSep precedes every group but the
// first.
func formatLine(row [numCols]string, width [numCols]int, groupSep string) string {
	var b strings.Builder
	for g, span := range layout.groups {
		if g > 0 {
			b.WriteString(groupSep)
		}
		for c := span[0]; c <= span[1]; c++ {
			b.WriteString(strings.Repeat(" ", layout.gap[c]))
			b.WriteString(pad(row[c], width[c], layout.right[c]))
		}
		b.WriteString(" ")
	}
	return b.String()
}

func groupWidth(width [numCols]int, span [2]int) int {
	n := 0
	for c := span[0]; c <= span[1]; c++ {
		n += layout.gap[c] + width[c]
	}
	return n
}

// formatRow returns the cells of one row.
func formatRow(row compare.Row) [numCols]string {
	var c [numCols]string
	c[colName] = row.Benchmark
	var centers []float64
	for _, s := range []compare.Summary{row.A, row.B} {
		if s.Boots > 0 {
			centers = append(centers, s.Center)
		}
	}
	scale := benchunit.CommonScale(centers, benchunit.ClassOf(row.Unit))
	fillSide := func(s compare.Summary, center, ci, spread int) {
		if s.Boots == 0 {
			c[center] = "-"
			return
		}
		c[center] = scale.Format(s.Center)
		c[ci] = "± " + formatPct(s.CIPct())
		c[spread] = "-"
		if s.Samples > s.Boots {
			c[spread] = formatPct(100 * s.WithinBoot)
		}
	}
	fillSide(row.A, colACenter, colACI, colASpread)
	fillSide(row.B, colBCenter, colBCI, colBSpread)
	c[colN] = fmt.Sprintf("n=%d+%d", row.A.Boots, row.B.Boots)
	if row.Paired {
		c[colN] = "n=" + words.Plural(row.Pairs, "pair")
	}
	c[colVerdict] = row.Verdict.String()
	if !row.Compared() {
		return c
	}
	switch {
	case row.Paired && row.DeltaPct == 0:
		c[colDelta] = "0.00%"
	case row.Paired:
		c[colDelta] = fmt.Sprintf("%+.2f%%", row.DeltaPct)
	case row.A.Center == row.B.Center:
		c[colDelta] = "0.00%"
	case row.A.Center == 0:
		c[colDelta] = "?"
	default:
		c[colDelta] = fmt.Sprintf("%+.2f%%", row.DeltaPct)
	}
	c[colP] = fmt.Sprintf("p=%.3f", row.P)
	if row.Exact { // one count per side: no test
		c[colP] = "-"
	}
	return c
}

func superscript(n int) string {
	digits := []rune("⁰¹²³⁴⁵⁶⁷⁸⁹")
	var b strings.Builder
	for _, d := range strconv.Itoa(n) {
		b.WriteRune(digits[d-'0'])
	}
	return b.String()
}

func runeLen(s string) int { return utf8.RuneCountInString(s) }

func pad(s string, width int, right bool) string {
	fill := strings.Repeat(" ", max(0, width-runeLen(s)))
	if right {
		return fill + s
	}
	return s + fill
}

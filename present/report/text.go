package report

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"

	"golang.org/x/perf/benchunit"

	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// writeText writes the report for a terminal: the outcome, the headlines,
// the warnings, the benchstat-like table (WriteTable) and the run's
// parameters.
func writeText(w io.Writer, rep *compare.Report, meta view.Meta) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "lpmbisect compare %s vs %s\n", rep.A.Label(), rep.B.Label())
	if d := sidesDiffer(rep, meta); d != "" {
		fmt.Fprintln(bw, wrap(d, 100, ""))
	}
	fmt.Fprintln(bw, outcomeLine(rep, meta.FailOn))
	if hs := headlines(rep, meta.Insight); len(hs) > 0 {
		fmt.Fprintln(bw)
		for _, h := range hs {
			fmt.Fprintln(bw, "  "+h)
		}
	}
	if us := undecided(rep); len(us) > 0 {
		fmt.Fprintln(bw)
		for _, u := range us {
			fmt.Fprintln(bw, "  "+u)
		}
	}
	for _, para := range allWarnings(rep, meta) {
		fmt.Fprintln(bw)
		fmt.Fprintln(bw, wrap(para, 100, ""))
	}
	fmt.Fprintln(bw)
	if err := WriteTable(bw, rep); err != nil {
		return err
	}
	if meta.Insight != nil {
		fmt.Fprintln(bw)
		if err := writeInsightText(bw, meta.Insight); err != nil {
			return err
		}
	}
	fmt.Fprintln(bw)
	for _, kv := range runLines(rep, meta) {
		label := kv[0] + ":"
		if kv[0] == "" { // continues the line above
			label = ""
		}
		fmt.Fprintf(bw, "%-12s %s\n", label, kv[1])
	}
	return bw.Flush()
}

// wrap breaks s into lines of at most width runes at spaces, each prefixed.
func wrap(s string, width int, prefix string) string {
	var b strings.Builder
	line := 0
	for i, word := range strings.Fields(s) {
		n := len([]rune(word))
		if i > 0 && line+1+n > width {
			b.WriteString("\n")
			line = 0
		}
		if line == 0 {
			b.WriteString(prefix)
			line = len([]rune(prefix))
		} else {
			b.WriteString(" ")
			line++
		}
		b.WriteString(word)
		line += n
	}
	return b.String()
}

// writeMarkdown writes the report as GitHub-flavoured Markdown, for an
// issue, a pull request or a mail: the outcome, the headlines, warnings as
// quotes, one table for all rows and the run's parameters. A paired report
// counts complete pairs in the table and states pairedExplanation under
// it.
func writeMarkdown(w io.Writer, rep *compare.Report, meta view.Meta) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "### lpmbisect compare: %s vs %s\n\n", mdEscape(rep.A.Label()), mdEscape(rep.B.Label()))
	if d := sidesDiffer(rep, meta); d != "" {
		fmt.Fprintf(bw, "**%s**\n\n", mdEscape(d))
	}
	fmt.Fprintf(bw, "**%s**\n", mdEscape(outcomeLine(rep, meta.FailOn)))
	if hs := headlines(rep, meta.Insight); len(hs) > 0 {
		fmt.Fprintln(bw)
		for _, h := range hs {
			fmt.Fprintf(bw, "- **%s**\n", mdEscape(h))
		}
	}
	if us := undecided(rep); len(us) > 0 {
		fmt.Fprintln(bw)
		for _, u := range us {
			fmt.Fprintf(bw, "- %s\n", mdEscape(u))
		}
	}
	for _, para := range allWarnings(rep, meta) {
		fmt.Fprintf(bw, "\n> %s\n", mdEscape(para))
	}

	fmt.Fprintf(bw, "\n| benchmark | unit | %s | %s | vs A | p | %s | verdict |\n", mdCell(rep.A.Label()), mdCell(rep.B.Label()), bootsHeading(rep))
	fmt.Fprintf(bw, "|---|---|--:|--:|--:|--:|--:|---|\n")
	var notes []string
	for _, r := range rep.Rows {
		c := cells(r)
		var marks []string
		for _, n := range rowNotes(rep, r) {
			i := slices.Index(notes, n)
			if i < 0 {
				notes = append(notes, n)
				i = len(notes) - 1
			}
			marks = append(marks, fmt.Sprint(i+1))
		}
		verdict := "**" + r.Verdict.String() + "**"
		if r.Verdict == compare.Unknown {
			verdict = r.Verdict.String()
		}
		if len(marks) > 0 {
			verdict += " <sup>" + strings.Join(marks, ",") + "</sup>"
		}
		fmt.Fprintf(bw, "| `%s` | %s | %s | %s | %s | %s | %s | %s |\n",
			mdCellCode(r.Benchmark), mdCell(r.Unit), mdCell(c.a), mdCell(c.b), mdCell(c.delta), mdCell(c.p), c.boots, verdict)
	}
	if len(notes) > 0 {
		fmt.Fprintln(bw)
		for i, n := range notes {
			fmt.Fprintf(bw, "<sup>%d</sup> %s  \n", i+1, mdEscape(n))
		}
	}
	if rep.Paired {
		fmt.Fprintf(bw, "\n%s.  \nvs A: median over pairs of B/A − 1; pairs: complete pairs. Centre: median of a side's per-boot medians ± %s confidence interval (moves with host state, which the pairs cancel); in-boot: median over boots of (max−min)/median.  \n%s\n",
			mdEscape(pairedExplanation), pct(rep.Confidence), mdEscape(capitalize(verdictRule(rep))))
	} else {
		fmt.Fprintf(bw, "\nCentre: median of per-boot medians ± %s confidence interval; in-boot: median over boots of (max−min)/median.  \n%s\n",
			pct(rep.Confidence), mdEscape(capitalize(verdictRule(rep))))
	}

	if meta.Insight != nil {
		fmt.Fprintln(bw)
		if err := writeInsightMarkdown(bw, meta.Insight); err != nil {
			return err
		}
	}

	fmt.Fprintf(bw, "\n<details><summary>Run</summary>\n\n")
	for _, kv := range runLines(rep, meta) {
		v := mdEscape(kv[1])
		if kv[0] == "command" {
			v = "`" + mdCode(kv[1]) + "`"
		}
		if kv[0] == "" { // continues the line above
			fmt.Fprintf(bw, "  - %s\n", v)
			continue
		}
		fmt.Fprintf(bw, "- %s: %s\n", kv[0], v)
	}
	fmt.Fprintf(bw, "\n</details>\n")
	return bw.Flush()
}

// bootsHeading heads the column of rowCells.boots: "boots", or "pairs" in
// a paired report.
func bootsHeading(rep *compare.Report) string {
	if rep.Paired {
		return "pairs"
	}
	return "boots"
}

// rowCells are a row's formatted values, shared by Markdown and HTML.
type rowCells struct {
	// boots counts the units: "6+6" boots per side, or in a paired row the
	// complete pairs, "8" (bootsHeading says which).
	a, b, delta, p, boots string
	// aCentre, aSpread, bCentre and bSpread split a and b for HTML.
	aCentre, aSpread, bCentre, bSpread string
}

// cells formats a row: centres with SI prefixes as benchstat does, the
// interval in % of the centre and the in-boot spread.
func cells(r compare.Row) rowCells {
	var centers []float64
	for _, s := range []compare.Summary{r.A, r.B} {
		if s.Boots > 0 {
			centers = append(centers, s.Center)
		}
	}
	scale := benchunit.CommonScale(centers, benchunit.ClassOf(r.Unit))
	side := func(s compare.Summary) (all, centre, spread string) {
		if s.Boots == 0 {
			return "–", "–", ""
		}
		centre = scale.Format(s.Center) + " ±" + formatPct(s.CIPct())
		if s.Samples > s.Boots {
			spread = "in-boot " + formatPct(100*s.WithinBoot)
			return centre + " (" + spread + ")", centre, spread
		}
		return centre, centre, ""
	}
	c := rowCells{delta: "–", p: "–", boots: fmt.Sprintf("%d+%d", r.A.Boots, r.B.Boots)}
	if r.Paired {
		c.boots = fmt.Sprint(r.Pairs)
	}
	c.a, c.aCentre, c.aSpread = side(r.A)
	c.b, c.bCentre, c.bSpread = side(r.B)
	if r.Compared() {
		c.delta = view.FormatDelta(r.DeltaPct)
		c.p = view.FormatP(r.P)
	}
	if r.Exact { // one count per side: no test
		c.p = "–"
	}
	return c
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// mdEscape escapes the characters Markdown would take for formatting in
// running text.
func mdEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "`", "\\`", "<", "&lt;", ">", "&gt;", "|", `\|`, "~", `\~`).Replace(s)
}

// mdCell escapes a table cell.
func mdCell(s string) string { return mdEscape(s) }

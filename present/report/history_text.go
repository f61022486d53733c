package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/present/view"
)

// writeHistoryText writes the history for a terminal. Per series: where its
// kernels come from, a summary of its nights and change points, then every
// night (date, status, tip and release, the verdicts against the previous
// tip; failed nights with their reason) with one line per benchmark (the
// tip's centre, the reference's, the tip against the reference and against
// the previous tip), then every change point with its headline, line,
// p-value, commit range, status and culprit or why it was not bisected,
// and last its excursions (nights far from both neighbours), what each means.
func writeHistoryText(w io.Writer, h view.History) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "lpmbisect history: %s\n", countOf(len(h.Series), "series"))
	for _, hs := range h.Series {
		v := newSeriesView(hs)
		fmt.Fprintf(bw, "\n%s: %s\n%s; %s\n", v.series.Name, seriesSource(v.series), v.nightsSummary(), v.changesSummary())
		v.writeNightsText(bw)
		v.writeChangesText(bw)
		v.writeExcursionsText(bw)
	}
	return bw.Flush()
}

func (v *seriesView) writeNightsText(w io.Writer) {
	if len(v.nights) == 0 {
		return
	}
	// Night lines and benchmark lines are laid out as two sets of columns,
	// each over the whole series, so that the nights line up.
	var heads, benches [][]string
	for _, n := range v.nights {
		heads = append(heads, v.nightCells(n))
		for _, r := range v.rows[n.Date] {
			benches = append(benches, []string{r.Benchmark, view.FormatValue(r.Tip.Center, r.Unit),
				"ref " + strings.TrimSuffix(formatEstimate(r.Reference, r.Unit), " "+unitName(r.Unit)), "vs ref " + vsReference(r),
				"vs previous " + formatVerdict(r.VsPrevious, r.Benchmark, r.Unit)})
		}
	}
	headLines, benchLines := padCells(heads), padCells(benches)
	fmt.Fprintln(w)
	b := 0
	for i, n := range v.nights {
		fmt.Fprintln(w, headLines[i])
		for range v.rows[n.Date] {
			fmt.Fprintln(w, "    "+benchLines[b])
			b++
		}
		for _, line := range v.nightNotes(n) {
			fmt.Fprintln(w, wrap(line, 100, "    "))
		}
	}
}

func (v *seriesView) writeChangesText(w io.Writer) {
	if len(v.changes) == 0 {
		return
	}
	fmt.Fprintf(w, "\nchange points of %s:\n", v.series.Name)
	for _, cp := range v.changes {
		id := fmt.Sprintf("#%d", cp.ID)
		fmt.Fprintf(w, "  %-4s %s [%s]\n", id, changePointHeadline("", cp), cp.Status)
		fmt.Fprintf(w, "       %s line, p%s, %s\n", lineName(cp.Line), view.FormatPRelation(cp.P), v.changeRange(cp))
		fmt.Fprintf(w, "       %s\n", bisectLine(cp))
	}
}

// writeHistoryMarkdown writes the history as GitHub-flavoured Markdown, for
// an issue or a mail: per series a table of its nights, one row per night
// and benchmark, then a table of its change points and one of its
// excursions.
func writeHistoryMarkdown(w io.Writer, h view.History) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "### lpmbisect history: %s\n", countOf(len(h.Series), "series"))
	for _, hs := range h.Series {
		v := newSeriesView(hs)
		fmt.Fprintf(bw, "\n#### %s\n\n%s  \n%s; %s\n", mdEscape(v.series.Name), mdEscape(seriesSource(v.series)),
			mdEscape(v.nightsSummary()), mdEscape(v.changesSummary()))
		if len(v.nights) > 0 {
			fmt.Fprintf(bw, "\n| night | status | tip | release | benchmark | tip | reference | vs reference | vs previous |\n")
			fmt.Fprintf(bw, "|---|---|---|---|---|--:|--:|---|---|\n")
			for _, n := range v.nights {
				c := v.nightCells(n)
				tip := "`" + mdCellCode(tipName(n.Tip)) + "`"
				if n.Tip.Subject != "" {
					tip += " " + mdEscape(truncate(n.Tip.Subject, 48))
				}
				notes := v.nightNotes(n)
				if rows := v.rows[n.Date]; c[4] != "" && len(rows) == 0 { // rows say their verdicts themselves
					notes = append([]string{c[4]}, notes...)
				}
				status := mdEscape(string(n.Status))
				if failedNight(n.Status) {
					status = "**" + status + "**"
				}
				first := fmt.Sprintf("| %s | %s | %s | %s |", n.Date, status, tip, mdEscape(c[3]))
				rows := v.rows[n.Date]
				if len(rows) == 0 {
					fmt.Fprintf(bw, "%s %s | | | | |\n", first, mdEscape(strings.Join(notes, "; ")))
					continue
				}
				for i, r := range rows {
					if i > 0 {
						first = "| | | | |"
					}
					fmt.Fprintf(bw, "%s `%s` | %s | %s | %s | %s |\n", first, mdCellCode(r.Benchmark),
						mdEscape(view.FormatValue(r.Tip.Center, r.Unit)), mdEscape(formatEstimate(r.Reference, r.Unit)),
						mdEscape(vsReference(r)), mdEscape(formatVerdict(r.VsPrevious, r.Benchmark, r.Unit)))
				}
				if len(notes) > 0 {
					fmt.Fprintf(bw, "| | | | | %s | | | | |\n", mdEscape(strings.Join(notes, "; ")))
				}
			}
		}
		if len(v.changes) > 0 {
			fmt.Fprintf(bw, "\n| # | night | benchmark | line | change | p | range | status | bisection |\n")
			fmt.Fprintf(bw, "|--:|---|---|---|--:|--:|---|---|---|\n")
			for _, cp := range v.changes {
				status := string(cp.Status)
				if cp.Provisional && cp.Status != history.ChangeWithdrawn {
					status += ", provisional"
				}
				fmt.Fprintf(bw, "| %d | %s | `%s` %s | %s | %s %s | %s | %s | %s | %s |\n",
					cp.ID, cp.Night, mdCellCode(cp.Benchmark), mdEscape(unitName(cp.Unit)), cp.Line,
					view.FormatDelta(cp.DeltaPct), "("+changeDirection(cp)+")", mdEscape(view.FormatP(cp.P)),
					mdEscape(v.changeRange(cp)), mdEscape(status), mdEscape(bisectLine(cp)))
			}
		}
		v.writeExcursionsMarkdown(bw)
	}
	return bw.Flush()
}

// mdCode makes s safe inside a Markdown code span: a backtick would end
// the span (it becomes a quote). Backslash escapes do not work in code
// spans, so a pipe is left as it is: in a table cell use mdCellCode.
func mdCode(s string) string { return strings.ReplaceAll(s, "`", "'") }

// mdCellCode is mdCode inside a table cell, where a pipe would end the
// cell: GFM reads \| there as a pipe, even in a code span.
func mdCellCode(s string) string { return strings.ReplaceAll(mdCode(s), "|", `\|`) }

package report

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/lpmbisect/lpmbisect/compare"
	"github.com/lpmbisect/lpmbisect/history"
)

// History is what the history renderers show (WriteHistoryText, …): every
// series with its nights, its metrics' trends and its change points, as
// package history stores them. The renderers read no database; the caller
// fills the view with package history's queries, one call per field:
//
//	for _, s := range series { // db.AllSeries
//		hs := report.HistorySeries{Series: s}
//		hs.Nights, err = db.Nights(ctx, s.ID)
//		metrics, err := db.Metrics(ctx, s.ID)
//		for _, m := range metrics {
//			points, err := db.Trend(ctx, s.ID, m)
//			hs.Trends = append(hs.Trends, report.MetricTrend{Metric: m, Points: points})
//		}
//		hs.ChangePoints, err = db.ChangePoints(ctx, s.ID)
//		h.Series = append(h.Series, hs)
//	}
//
// Order does not matter: the renderers sort nights and points by date and
// change points by night, benchmark and line. A night's rows are taken from
// the trends, so a night needs no rows of its own.
type History struct {
	Series []HistorySeries
}

// HistorySeries is one series of a History.
type HistorySeries struct {
	Series history.Series
	// Nights are every night of the series, failed ones included: they
	// are the gaps of the trend plots.
	Nights []history.Night
	// Trends are the series' metrics, one per benchmark and unit.
	Trends []MetricTrend
	// ChangePoints are the series' change points, withdrawn ones included
	// (the text formats list them as withdrawn; plots leave them out).
	ChangePoints []history.ChangePoint
}

// MetricTrend is one metric's nights, as history.DB.Trend returns them.
// Each point carries both lines of the metric: the kernel line is the
// point's Row.Ratio (the tip over the reference), the host line its
// Row.Reference (the reference kernel alone).
type MetricTrend struct {
	history.Metric
	Points []history.TrendPoint
}

// WriteHistory renders h in format f.
func WriteHistory(w io.Writer, f Format, h History) error {
	switch f {
	case FormatText:
		return WriteHistoryText(w, h)
	case FormatMarkdown:
		return WriteHistoryMarkdown(w, h)
	case FormatJSON:
		return WriteHistoryJSON(w, h)
	case FormatHTML:
		return WriteHistoryHTML(w, h)
	}
	return fmt.Errorf("report: unknown format %q (want text, markdown, json or html)", f)
}

// seriesView is a HistorySeries sorted and indexed for rendering.
type seriesView struct {
	series  history.Series
	nights  []history.Night // by date
	trends  []MetricTrend   // by metric, points by date
	changes []history.ChangePoint
	// rows are each night's rows, by date, in the order of trends.
	rows map[string][]history.NightRow
}

func newSeriesView(hs HistorySeries) *seriesView {
	v := &seriesView{series: hs.Series, rows: map[string][]history.NightRow{}}
	seen := map[string]bool{}
	for _, n := range hs.Nights {
		if !seen[n.Date] {
			seen[n.Date] = true
			v.nights = append(v.nights, n)
		}
	}
	v.trends = slices.Clone(hs.Trends)
	slices.SortStableFunc(v.trends, func(a, b MetricTrend) int {
		return cmp.Or(cmp.Compare(a.Benchmark, b.Benchmark), cmp.Compare(a.Unit, b.Unit))
	})
	for i, t := range v.trends {
		points := slices.Clone(t.Points)
		slices.SortStableFunc(points, func(a, b history.TrendPoint) int { return cmp.Compare(a.Night.Date, b.Night.Date) })
		v.trends[i].Points = points
		for _, p := range points {
			row := p.Row
			row.Metric = t.Metric
			v.rows[p.Night.Date] = append(v.rows[p.Night.Date], row)
			if !seen[p.Night.Date] { // a night the caller left out of Nights
				seen[p.Night.Date] = true
				v.nights = append(v.nights, p.Night)
			}
		}
	}
	slices.SortStableFunc(v.nights, func(a, b history.Night) int { return cmp.Compare(a.Date, b.Date) })
	v.changes = sortedChanges(hs.ChangePoints)
	return v
}

func sortedChanges(cps []history.ChangePoint) []history.ChangePoint {
	out := slices.Clone(cps)
	slices.SortStableFunc(out, func(a, b history.ChangePoint) int {
		return cmp.Or(cmp.Compare(a.Night, b.Night), cmp.Compare(a.Benchmark, b.Benchmark),
			cmp.Compare(a.Unit, b.Unit), cmp.Compare(a.Line, b.Line), cmp.Compare(a.ID, b.ID))
	})
	return out
}

func (v *seriesView) night(date string) (history.Night, bool) {
	i, ok := slices.BinarySearchFunc(v.nights, date, func(n history.Night, d string) int { return cmp.Compare(n.Date, d) })
	if !ok {
		return history.Night{}, false
	}
	return v.nights[i], true
}

// row returns the row of metric m on the night of date.
func (v *seriesView) row(date string, m history.Metric) (history.NightRow, bool) {
	for _, r := range v.rows[date] {
		if r.Metric == m {
			return r, true
		}
	}
	return history.NightRow{}, false
}

// measuredBefore returns the date of the last night before n that measured
// the same tip, for a no-change night.
func (v *seriesView) measuredBefore(n history.Night) string {
	for i := len(v.nights) - 1; i >= 0; i-- {
		m := v.nights[i]
		if m.Date >= n.Date || m.Status != history.StatusMeasured {
			continue
		}
		if (n.Tip.Commit != "" && m.Tip.Commit == n.Tip.Commit) || (n.Tip.ImageSHA256 != "" && m.Tip.ImageSHA256 == n.Tip.ImageSHA256) {
			return m.Date
		}
	}
	return ""
}

// failedNight reports whether a night's status means it has no result:
// the gaps of the trend.
func failedNight(s history.NightStatus) bool {
	switch s {
	case history.StatusMeasured, history.StatusNoChange:
		return false
	}
	return true
}

// statusOrder orders night statuses in summaries.
var statusOrder = []history.NightStatus{history.StatusMeasured, history.StatusNoChange, history.StatusInconclusive,
	history.StatusBuildFailed, history.StatusBootFailed, history.StatusInfraFailed, history.StatusRunning}

// nightsSummary says "14 nights, 2026-11-01 to 2026-11-14: 12 measured, 1
// no-change, 1 build-failed".
func (v *seriesView) nightsSummary() string {
	if len(v.nights) == 0 {
		return "no nights yet"
	}
	counts := map[history.NightStatus]int{}
	for _, n := range v.nights {
		counts[n.Status]++
	}
	var parts []string
	for _, s := range statusOrder {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
			delete(counts, s)
		}
	}
	var other []string
	for s := range counts {
		other = append(other, fmt.Sprintf("%d %s", counts[s], s))
	}
	slices.Sort(other)
	parts = append(parts, other...)
	return fmt.Sprintf("%s, %s to %s: %s", countOf(len(v.nights), "night"), v.nights[0].Date, v.nights[len(v.nights)-1].Date, strings.Join(parts, ", "))
}

// changesSummary says "3 change points: 2 open, 1 muted; 1 provisional".
func (v *seriesView) changesSummary() string {
	if len(v.changes) == 0 {
		return "no change points"
	}
	counts := map[history.ChangeStatus]int{}
	provisional := 0
	for _, cp := range v.changes {
		counts[cp.Status]++
		if cp.Provisional && cp.Status != history.ChangeWithdrawn {
			provisional++
		}
	}
	var parts []string
	for _, s := range []history.ChangeStatus{history.ChangeOpen, history.ChangeAcknowledged, history.ChangeMuted, history.ChangeWithdrawn} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	s := countOf(len(v.changes), "change point") + ": " + strings.Join(parts, ", ")
	if provisional > 0 {
		s += fmt.Sprintf("; %d provisional", provisional)
	}
	return s
}

// countOf counts what: "1 night", "14 nights".
func countOf(n int, what string) string {
	if n == 1 || strings.HasSuffix(what, "s") { // "series" is its own plural
		return fmt.Sprintf("%d %s", n, what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// seriesSource describes where a series' kernels come from and how they
// are measured: "git /src/bpf-next, branch master; reference …; bench
// lookup; accel icount".
func seriesSource(s history.Series) string {
	var parts []string
	switch {
	case s.Kind == history.GitSeries && s.Branch != "":
		parts = append(parts, fmt.Sprintf("git %s, branch %s", s.Source, s.Branch))
	case s.Kind != "":
		parts = append(parts, fmt.Sprintf("%s %s", s.Kind, s.Source))
	case s.Source != "":
		parts = append(parts, s.Source)
	}
	for _, kv := range [][2]string{{"reference", s.Reference}, {"bench", s.Bench}, {"accel", s.Accel}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+" "+kv[1])
		}
	}
	return strings.Join(parts, "; ")
}

// isHex reports whether s is a hex string, as commit hashes and image
// digests are.
func isHex(s string) bool {
	return s != "" && strings.Trim(s, "0123456789abcdefABCDEF") == ""
}

// shortHash shortens a commit hash or image digest to 12 digits; anything
// else (a tag, a path) is kept.
func shortHash(s string) string {
	if isHex(s) {
		return short(s)
	}
	return s
}

// tipName names a night's tip in a few characters: the short commit, else
// "image " and the short image digest, else the release.
func tipName(k history.Kernel) string {
	switch {
	case k.Commit != "":
		return shortHash(k.Commit)
	case k.ImageSHA256 != "":
		return "image " + short(k.ImageSHA256)
	case k.Release != "":
		return k.Release
	}
	return "–"
}

// truncate cuts s to at most n runes, ending in "…" when cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}

// unitName is a unit as reports show it: benchfmt's sec/op as ns/op, as
// FormatValue prints the values.
func unitName(unit string) string {
	if unit == "sec/op" {
		return "ns/op"
	}
	return unit
}

// direction says which way a change of deltaPct in unit goes: "worse",
// "better", or "changed" when the unit has no known direction. A move of
// the kernel line (the tip over the reference) goes the tip's way.
func direction(unit string, deltaPct float64) string {
	switch b := compare.BetterOf(unit); {
	case b == 0 || deltaPct == 0 || math.IsNaN(deltaPct):
		return "changed"
	case (b < 0) == (deltaPct > 0):
		return "worse"
	}
	return "better"
}

// changeDirection is a change point's direction in its headline: "(worse)",
// "(better)" or "(control moved)".
func changeDirection(cp history.ChangePoint) string {
	if compare.IsControl(cp.Benchmark, nil) {
		return "control moved"
	}
	return direction(cp.Unit, cp.DeltaPct)
}

// ChangePointHeadline returns an LKP-style one-line summary of a change
// point, in the style of Headline:
//
//	LPMTrie/op=lookup/keys=random/entries=10000: +7.23% insn/op (worse), night 2026-11-08, bpf-next
//
// A host-line change point says that the reference moved ("on the
// reference: host or harness changed"), a provisional or withdrawn one says
// so at the end. series may be empty (a report of one series).
func ChangePointHeadline(series string, cp history.ChangePoint) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s %s (%s)", cp.Benchmark, FormatDelta(cp.DeltaPct), unitName(cp.Unit), changeDirection(cp))
	if cp.Line == history.LineHost {
		b.WriteString(" on the reference: host or harness changed")
	}
	fmt.Fprintf(&b, ", night %s", cp.Night)
	if series != "" {
		b.WriteString(", " + series)
	}
	switch {
	case cp.Status == history.ChangeWithdrawn:
		b.WriteString(", withdrawn")
	case cp.Provisional:
		b.WriteString(", provisional")
	}
	return b.String()
}

// changeRange describes the range of a change point: the tips of the
// nights either side, "0a1b2c3d4e5f..9d8c7b6a5f4e (nights 2026-11-07 →
// 2026-11-08)"; for an image series the images and releases.
func (v *seriesView) changeRange(cp history.ChangePoint) string {
	nights := fmt.Sprintf("nights %s → %s", cmp.Or(cp.BeforeNight, "?"), cp.Night)
	if cp.BeforeCommit != "" || cp.AfterCommit != "" {
		return fmt.Sprintf("%s..%s (%s)", cmp.Or(shortHash(cp.BeforeCommit), "?"), cmp.Or(shortHash(cp.AfterCommit), "?"), nights)
	}
	before, okB := v.night(cp.BeforeNight)
	after, okA := v.night(cp.Night)
	if !okB && !okA {
		return nights
	}
	name := func(n history.Night, ok bool) string {
		if !ok {
			return "?"
		}
		s := tipName(n.Tip)
		if n.Tip.Commit == "" && n.Tip.Release != "" && s != n.Tip.Release {
			s += " " + n.Tip.Release
		}
		return s
	}
	return fmt.Sprintf("%s → %s (%s)", name(before, okB), name(after, okA), nights)
}

// bisectLine says what the bisection of a change point found or why there
// was none: "culprit 9d8c7b6a5f4e bpf: …", "bisect failed: …", "not
// bisected: …".
func bisectLine(cp history.ChangePoint) string {
	b := cp.Bisect
	switch b.State {
	case history.BisectFound:
		s := "culprit " + cmp.Or(shortHash(b.Culprit), "?")
		if b.Subject != "" {
			s += " " + b.Subject
		}
		return s
	case history.BisectRunning:
		return "bisecting (resumes if interrupted)"
	case history.BisectFailed:
		return "bisect failed: " + cmp.Or(b.Reason, "no reason recorded")
	case history.BisectSkipped:
		return "not bisected: " + cmp.Or(b.Reason, "no reason recorded")
	}
	if cp.Line == history.LineHost {
		return "not bisected: the reference kernel moved, so the host or harness changed, not a commit"
	}
	if b.Reason != "" {
		return "not bisected: " + b.Reason
	}
	return "not bisected"
}

// plotLabel is bisectLine for a plot's change-point mark: short, with the
// change first.
func plotLabel(cp history.ChangePoint) string {
	s := FormatDelta(cp.DeltaPct) + ": "
	switch {
	case cp.Line == history.LineHost:
		s += "host or harness changed"
	case cp.Bisect.State == history.BisectFound && cp.Bisect.Subject != "":
		s += cp.Bisect.Subject
	default:
		s += bisectLine(cp)
	}
	if cp.Provisional {
		s += " (provisional)"
	}
	return truncate(s, 64)
}

// formatVerdict formats a night's comparison: "+7.21% DIFFERENT (worse)",
// "+0.01% SAME", or "–" when not compared.
func formatVerdict(c *history.Comparison, bench, unit string) string {
	if c == nil {
		return "–"
	}
	s := FormatDelta(c.DeltaPct) + " " + c.Verdict.String()
	if c.Verdict == compare.Different {
		if compare.IsControl(bench, nil) {
			s += " (control moved)"
		} else {
			s += " (" + direction(unit, c.DeltaPct) + ")"
		}
	}
	return s
}

// formatEstimate formats a centre in its unit, "–" if there is none.
func formatEstimate(e history.Estimate, unit string) string {
	if math.IsNaN(e.Center) || e.Boots == 0 && e.Center == 0 {
		return "–"
	}
	return FormatValue(e.Center, unit)
}

// vsReference formats the tip against the reference: the night's verdict
// if it has one, else the ratio as a change.
func vsReference(r history.NightRow) string {
	if r.VsReference != nil {
		return formatVerdict(r.VsReference, r.Benchmark, r.Unit)
	}
	if r.Ratio > 0 && !math.IsInf(r.Ratio, 0) {
		return FormatDelta(100 * (r.Ratio - 1))
	}
	return "–"
}

// verdictsSummary sums up a night's verdicts against the previous tip:
// "1 DIFFERENT (worse), 2 SAME", "" if nothing was compared.
func verdictsSummary(rows []history.NightRow) string {
	var worse, better, moved, same, unknown int
	for _, r := range rows {
		c := r.VsPrevious
		switch {
		case c == nil:
		case c.Verdict == compare.Same:
			same++
		case c.Verdict == compare.Unknown:
			unknown++
		case compare.IsControl(r.Benchmark, nil):
			moved++
		case direction(r.Unit, c.DeltaPct) == "better":
			better++
		default:
			worse++
		}
	}
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{{worse, "DIFFERENT (worse)"}, {better, "DIFFERENT (better)"}, {moved, "control moved"}, {unknown, "UNKNOWN"}, {same, "SAME"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	return strings.Join(parts, ", ")
}

// padCells lays out lines of cells in columns two spaces apart, each as
// wide as its widest cell; trailing spaces are dropped.
func padCells(lines [][]string) []string {
	var width []int
	for _, l := range lines {
		for i, c := range l {
			if i == len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	out := make([]string, len(lines))
	for j, l := range lines {
		var b strings.Builder
		for i, c := range l {
			if i > 0 {
				b.WriteString("  ")
			}
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", width[i]-utf8.RuneCountInString(c)))
		}
		out[j] = strings.TrimRight(b.String(), " ")
	}
	return out
}

// WriteHistoryText writes the history for a terminal. Per series: where its
// kernels come from, a summary of its nights and change points, then every
// night (date, status, tip and release, the verdicts against the previous
// tip; failed nights with their reason) with one line per benchmark (the
// tip's centre, the reference's, the tip against the reference and against
// the previous tip), then every change point with its headline, line,
// p-value, commit range, status and culprit or why it was not bisected.
func WriteHistoryText(w io.Writer, h History) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "lpmbisect history: %s\n", countOf(len(h.Series), "series"))
	for _, hs := range h.Series {
		v := newSeriesView(hs)
		fmt.Fprintf(bw, "\n%s: %s\n%s; %s\n", v.series.Name, seriesSource(v.series), v.nightsSummary(), v.changesSummary())
		v.writeNightsText(bw)
		v.writeChangesText(bw)
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
			benches = append(benches, []string{r.Benchmark, FormatValue(r.Tip.Center, r.Unit),
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

// nightCells are a night's date, status, tip (and subject), release and
// summary of its verdicts against the previous tip.
func (v *seriesView) nightCells(n history.Night) []string {
	tip := tipName(n.Tip)
	if n.Tip.Subject != "" {
		tip += " " + truncate(n.Tip.Subject, 48)
	}
	summary := ""
	switch {
	case n.Status == history.StatusNoChange:
		if d := v.measuredBefore(n); d != "" {
			summary = "tip measured on " + d
		}
	default:
		if s := verdictsSummary(v.rows[n.Date]); s != "" {
			summary = "vs previous: " + s
		}
	}
	return []string{n.Date, string(n.Status), tip, cmp.Or(n.Tip.Release, "–"), summary}
}

// nightNotes are a night's reason and note, labelled.
func (v *seriesView) nightNotes(n history.Night) []string {
	var out []string
	if n.Reason != "" {
		out = append(out, "reason: "+n.Reason)
	}
	if n.Note != "" {
		out = append(out, "note: "+n.Note)
	}
	return out
}

func (v *seriesView) writeChangesText(w io.Writer) {
	if len(v.changes) == 0 {
		return
	}
	fmt.Fprintf(w, "\nchange points of %s:\n", v.series.Name)
	for _, cp := range v.changes {
		id := fmt.Sprintf("#%d", cp.ID)
		fmt.Fprintf(w, "  %-4s %s [%s]\n", id, ChangePointHeadline("", cp), cp.Status)
		fmt.Fprintf(w, "       %s line, p%s, %s\n", lineName(cp.Line), FormatPRelation(cp.P), v.changeRange(cp))
		fmt.Fprintf(w, "       %s\n", bisectLine(cp))
	}
}

// lineName describes a change point's line: "kernel (tip/reference)" or
// "host (reference alone)".
func lineName(l history.Line) string {
	switch l {
	case history.LineKernel:
		return "kernel (tip/reference)"
	case history.LineHost:
		return "host (reference alone)"
	}
	return string(l)
}

// WriteHistoryMarkdown writes the history as GitHub-flavoured Markdown, for
// an issue or a mail: per series a table of its nights, one row per night
// and benchmark, then a table of its change points.
func WriteHistoryMarkdown(w io.Writer, h History) error {
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
				tip := "`" + mdCode(tipName(n.Tip)) + "`"
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
					fmt.Fprintf(bw, "%s `%s` | %s | %s | %s | %s |\n", first, mdCode(r.Benchmark),
						mdEscape(FormatValue(r.Tip.Center, r.Unit)), mdEscape(formatEstimate(r.Reference, r.Unit)),
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
					cp.ID, cp.Night, mdCode(cp.Benchmark), mdEscape(unitName(cp.Unit)), cp.Line,
					FormatDelta(cp.DeltaPct), "("+changeDirection(cp)+")", mdEscape(FormatP(cp.P)),
					mdEscape(v.changeRange(cp)), mdEscape(status), mdEscape(bisectLine(cp)))
			}
		}
	}
	return bw.Flush()
}

// mdCode makes s safe inside a code span.
func mdCode(s string) string { return strings.ReplaceAll(s, "`", "'") }

// HistoryDocumentVersion is the version of HistoryDocument's layout. It
// changes only when a field changes meaning or goes away; new fields keep
// it.
const HistoryDocumentVersion = 1

// HistoryDocument is the JSON form of a History (WriteHistoryJSON), stable
// for tools: a dashboard or a bot reads it without importing package
// history. Series are in the caller's order; nights and their rows by date
// and metric; change points by night, benchmark and line. Numbers that can
// be undefined (an interval with too few boots, a ratio without a
// reference) are pointers and encode as null: JSON has no NaN or Inf.
// Verdicts are "SAME", "DIFFERENT" or "UNKNOWN"; night statuses, change
// statuses, lines and bisection states are package history's names.
type HistoryDocument struct {
	Version int         `json:"version"` // HistoryDocumentVersion
	Series  []SeriesDoc `json:"series"`
}

// SeriesDoc is one series of a HistoryDocument.
type SeriesDoc struct {
	Name string `json:"name"`
	// Kind is "git" (Source is a tree, Branch its branch) or "images"
	// (Source is a directory or list file of prebuilt kernels).
	Kind      string `json:"kind"`
	Source    string `json:"source"`
	Branch    string `json:"branch,omitempty"`
	Reference string `json:"reference"` // the reference kernel input
	Bench     string `json:"bench,omitempty"`
	Accel     string `json:"accel,omitempty"`
	// Nights are every night, failed ones included, by date.
	Nights []NightDoc `json:"nights"`
	// ChangePoints are every change point, withdrawn ones included.
	ChangePoints []ChangePointDoc `json:"change_points"`
}

// NightDoc is one night of a series.
type NightDoc struct {
	Date string `json:"date"` // YYYY-MM-DD
	// Status is measured, no-change, build-failed, boot-failed,
	// inconclusive, infrastructure-failed or running (not finished).
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"` // why the night failed
	Note   string `json:"note,omitempty"`
	// Tip is the kernel measured (or that failed); Reference the reference
	// as measured that night.
	Tip       KernelDoc `json:"tip"`
	Reference KernelDoc `json:"reference"`
	// The measuring environment.
	Accel       string    `json:"accel,omitempty"`
	QEMUVersion string    `json:"qemu_version,omitempty"`
	CPUModel    string    `json:"cpu_model,omitempty"`
	Host        string    `json:"host,omitempty"`
	ToolVersion string    `json:"lpmbisect_version,omitempty"`
	Started     time.Time `json:"started,omitzero"`
	Finished    time.Time `json:"finished,omitzero"`
	// Rows are the night's benchmarks, by benchmark and unit; none for a
	// night without results.
	Rows []NightRowDoc `json:"rows"`
}

// KernelDoc identifies a kernel; a prebuilt image has no commit.
type KernelDoc struct {
	Commit      string `json:"commit,omitempty"`
	Subject     string `json:"subject,omitempty"`
	ImageSHA256 string `json:"image_sha256,omitempty"`
	Release     string `json:"release,omitempty"`
	Compiler    string `json:"compiler,omitempty"`
	ConfigHash  string `json:"config_hash,omitempty"`
}

// NightRowDoc is one benchmark on one night.
type NightRowDoc struct {
	Benchmark string `json:"benchmark"`
	Unit      string `json:"unit"` // benchfmt's: ns/op is "sec/op"
	// Control is set for a control benchmark (compare.DefaultControls).
	Control   bool        `json:"control"`
	Tip       EstimateDoc `json:"tip"`
	Reference EstimateDoc `json:"reference"`
	// Ratio is tip.center / reference.center: the kernel line.
	Ratio *float64 `json:"ratio"`
	// VsPrevious compares the tip with the last measured tip, VsReference
	// with the reference; null when not compared.
	VsPrevious  *ComparisonDoc `json:"vs_previous"`
	VsReference *ComparisonDoc `json:"vs_reference"`
}

// EstimateDoc is one side's centre and confidence interval on one night.
type EstimateDoc struct {
	Center *float64 `json:"center"`
	Lo     *float64 `json:"lo"`
	Hi     *float64 `json:"hi"`
	Boots  int      `json:"boots"`
}

// ComparisonDoc is one verdict of a night.
type ComparisonDoc struct {
	Verdict  compare.Verdict `json:"verdict"`
	DeltaPct *float64        `json:"delta_pct"`
	P        *float64        `json:"p"`
	// Direction is set for a DIFFERENT verdict: "worse", "better" or
	// "changed" (a unit without a known direction), by the unit and the
	// sign of the change.
	Direction string `json:"direction,omitempty"`
}

// ChangePointDoc is one change point.
type ChangePointDoc struct {
	ID        int64  `json:"id"` // what history ack takes
	Benchmark string `json:"benchmark"`
	Unit      string `json:"unit"`
	Control   bool   `json:"control"`
	// Line is "kernel" (the tip over the reference) or "host" (the
	// reference alone: the host or harness moved).
	Line string `json:"line"`
	// Night is the first night after the step, BeforeNight the last one
	// before it; BeforeCommit and AfterCommit their tips (git series).
	Night        string   `json:"night"`
	BeforeNight  string   `json:"before_night"`
	BeforeCommit string   `json:"before_commit,omitempty"`
	AfterCommit  string   `json:"after_commit,omitempty"`
	DeltaPct     *float64 `json:"delta_pct"`
	P            *float64 `json:"p"`
	// Direction is "worse", "better" or "changed" (a unit without a known
	// direction), by the unit and the sign of the change.
	Direction string `json:"direction"`
	// Provisional: the next nights may still withdraw it.
	Provisional bool `json:"provisional"`
	// Status is open, acknowledged, muted or withdrawn.
	Status        string       `json:"status"`
	FirstReported time.Time    `json:"first_reported,omitzero"`
	Updated       time.Time    `json:"updated,omitzero"`
	Mailed        time.Time    `json:"mailed,omitzero"`
	Bisect        BisectionDoc `json:"bisect"`
	// Headline is ChangePointHeadline's line, Range the commit or image
	// range and Outcome the bisection in words, as the text report says
	// them.
	Headline string `json:"headline"`
	Range    string `json:"range"`
	Outcome  string `json:"outcome"`
}

// BisectionDoc is the automatic bisection of a change point.
type BisectionDoc struct {
	// State is "none" (not started), "running", "found" (Culprit and
	// Subject name the commit), "failed" or "skipped" (Reason says why).
	State   string `json:"state"`
	Culprit string `json:"culprit,omitempty"`
	Subject string `json:"subject,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

func kernelDoc(k history.Kernel) KernelDoc {
	return KernelDoc{Commit: k.Commit, Subject: k.Subject, ImageSHA256: k.ImageSHA256, Release: k.Release, Compiler: k.Compiler, ConfigHash: k.ConfigHash}
}

func estimateDoc(e history.Estimate) EstimateDoc {
	return EstimateDoc{Center: finite(e.Center), Lo: finite(e.Lo), Hi: finite(e.Hi), Boots: e.Boots}
}

func comparisonDoc(c *history.Comparison, unit string) *ComparisonDoc {
	if c == nil {
		return nil
	}
	d := &ComparisonDoc{Verdict: c.Verdict, DeltaPct: finite(c.DeltaPct), P: finite(c.P)}
	if c.Verdict == compare.Different {
		d.Direction = direction(unit, c.DeltaPct)
	}
	return d
}

// NewHistoryDocument converts a history to its JSON form.
func NewHistoryDocument(h History) HistoryDocument {
	d := HistoryDocument{Version: HistoryDocumentVersion, Series: []SeriesDoc{}}
	for _, hs := range h.Series {
		v := newSeriesView(hs)
		s := v.series
		sd := SeriesDoc{Name: s.Name, Kind: string(s.Kind), Source: s.Source, Branch: s.Branch, Reference: s.Reference,
			Bench: s.Bench, Accel: s.Accel, Nights: []NightDoc{}, ChangePoints: []ChangePointDoc{}}
		for _, n := range v.nights {
			nd := NightDoc{Date: n.Date, Status: string(n.Status), Reason: n.Reason, Note: n.Note,
				Tip: kernelDoc(n.Tip), Reference: kernelDoc(n.Reference),
				Accel: n.Accel, QEMUVersion: n.QEMUVersion, CPUModel: n.CPUModel, Host: n.Host, ToolVersion: n.ToolVersion,
				Started: n.Started, Finished: n.Finished, Rows: []NightRowDoc{}}
			for _, r := range v.rows[n.Date] {
				nd.Rows = append(nd.Rows, NightRowDoc{Benchmark: r.Benchmark, Unit: r.Unit, Control: compare.IsControl(r.Benchmark, nil),
					Tip: estimateDoc(r.Tip), Reference: estimateDoc(r.Reference), Ratio: finite(r.Ratio),
					VsPrevious: comparisonDoc(r.VsPrevious, r.Unit), VsReference: comparisonDoc(r.VsReference, r.Unit)})
			}
			sd.Nights = append(sd.Nights, nd)
		}
		for _, cp := range v.changes {
			sd.ChangePoints = append(sd.ChangePoints, ChangePointDoc{
				ID: cp.ID, Benchmark: cp.Benchmark, Unit: cp.Unit, Control: compare.IsControl(cp.Benchmark, nil), Line: string(cp.Line),
				Night: cp.Night, BeforeNight: cp.BeforeNight, BeforeCommit: cp.BeforeCommit, AfterCommit: cp.AfterCommit,
				DeltaPct: finite(cp.DeltaPct), P: finite(cp.P), Direction: direction(cp.Unit, cp.DeltaPct),
				Provisional: cp.Provisional, Status: string(cp.Status),
				FirstReported: cp.FirstReported, Updated: cp.Updated, Mailed: cp.Mailed,
				Bisect: BisectionDoc{State: cmp.Or(string(cp.Bisect.State), "none"), Culprit: cp.Bisect.Culprit,
					Subject: cp.Bisect.Subject, Reason: cp.Bisect.Reason},
				Headline: ChangePointHeadline(s.Name, cp), Range: v.changeRange(cp), Outcome: bisectLine(cp),
			})
		}
		d.Series = append(d.Series, sd)
	}
	return d
}

// WriteHistoryJSON writes the history as one indented JSON document
// (HistoryDocument).
func WriteHistoryJSON(w io.Writer, h History) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(NewHistoryDocument(h)); err != nil {
		return fmt.Errorf("report: encode history JSON: %w", err)
	}
	return nil
}

// WriteHistoryHTML writes the history as one self-contained HTML page (no
// scripts, styles or fonts from elsewhere, plots inlined as SVG): per
// series its change points with their culprits, one trend plot per
// benchmark (trendSVG) and the table of its nights.
func WriteHistoryHTML(w io.Writer, h History) error {
	page := historyPage{Title: "lpmbisect history"}
	for _, hs := range h.Series {
		v := newSeriesView(hs)
		sp := historySeriesPage{Name: v.series.Name, Source: seriesSource(v.series), Summary: v.nightsSummary() + "; " + v.changesSummary()}
		for _, cp := range v.changes {
			class := "change"
			switch {
			case cp.Status == history.ChangeWithdrawn:
				class += " withdrawn"
			case cp.Line == history.LineHost:
				class += " host"
			case changeDirection(cp) == "worse":
				class += " worse"
			}
			sp.Changes = append(sp.Changes, historyChange{ID: cp.ID, Class: class, Headline: ChangePointHeadline("", cp),
				Status: string(cp.Status), Detail: fmt.Sprintf("%s line, p%s, %s", lineName(cp.Line), FormatPRelation(cp.P), v.changeRange(cp)),
				Bisect: bisectLine(cp)})
		}
		for _, t := range v.trends {
			svg, err := v.trendSVG(t, trendWidth, trendHeight)
			if err != nil {
				return err
			}
			sp.Plots = append(sp.Plots, historyPlot{Benchmark: t.Benchmark, Unit: unitName(t.Unit), Caption: v.trendCaption(t),
				SVG: template.HTML(inlineSVG(svg))}) // generated by gonum/plot from numbers and escaped labels
		}
		for _, n := range v.nights {
			c := v.nightCells(n)
			row := historyNight{Date: n.Date, Status: string(n.Status), Failed: failedNight(n.Status), Tip: tipName(n.Tip),
				Subject: n.Tip.Subject, Release: n.Tip.Release, Notes: v.nightNotes(n)}
			if len(v.rows[n.Date]) == 0 { // else the rows say their verdicts themselves
				row.Summary = c[4]
			}
			for _, r := range v.rows[n.Date] {
				row.Rows = append(row.Rows, historyNightRow{Benchmark: r.Benchmark, Unit: unitName(r.Unit),
					Tip: bareValue(r.Tip, r.Unit), Reference: bareValue(r.Reference, r.Unit), VsReference: vsReference(r),
					VsPrevious: formatVerdict(r.VsPrevious, r.Benchmark, r.Unit), Class: verdictClass(r)})
			}
			sp.Nights = append(sp.Nights, row)
		}
		page.Series = append(page.Series, sp)
	}
	var buf bytes.Buffer
	if err := historyTemplate.Execute(&buf, page); err != nil {
		return fmt.Errorf("report: render history HTML: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// verdictClass is the CSS class of a night row's verdict against the
// previous tip.
func verdictClass(r history.NightRow) string {
	c := r.VsPrevious
	switch {
	case c == nil:
		return ""
	case c.Verdict == compare.Different && compare.IsControl(r.Benchmark, nil):
		return "unknown"
	case c.Verdict == compare.Different && direction(r.Unit, c.DeltaPct) == "better":
		return "same"
	case c.Verdict == compare.Different:
		return "different"
	case c.Verdict == compare.Unknown:
		return "unknown"
	}
	return ""
}

// trendCaption says what the last measured night of a trend was, in the
// metric's unit: "last measured 2026-11-14: tip 1142 insn/op, reference
// 1065 insn/op (+7.23%)".
func (v *seriesView) trendCaption(t MetricTrend) string {
	s := t.Benchmark + " " + unitName(t.Unit)
	for i := len(t.Points) - 1; i >= 0; i-- {
		p := t.Points[i]
		if math.IsNaN(p.Row.Tip.Center) {
			continue
		}
		return fmt.Sprintf("%s; last measured %s: tip %s, reference %s: %s", s, p.Night.Date,
			FormatValue(p.Row.Tip.Center, t.Unit), formatEstimate(p.Row.Reference, t.Unit), vsReference(p.Row))
	}
	return s
}

type historyPage struct {
	Title  string
	Series []historySeriesPage
}

type historySeriesPage struct {
	Name, Source, Summary string
	Changes               []historyChange
	Plots                 []historyPlot
	Nights                []historyNight
}

type historyChange struct {
	ID                                      int64
	Class, Headline, Status, Detail, Bisect string
}

type historyPlot struct {
	Benchmark, Unit, Caption string
	SVG                      template.HTML
}

type historyNight struct {
	Date, Status, Tip, Subject, Release, Summary string
	Failed                                       bool
	Notes                                        []string
	Rows                                         []historyNightRow
}

type historyNightRow struct {
	Benchmark, Unit, Tip, Reference, VsReference, VsPrevious, Class string
}

// bareValue is formatEstimate without the unit, for a table that says it
// once per row.
func bareValue(e history.Estimate, unit string) string {
	return strings.TrimSuffix(formatEstimate(e, unit), " "+unitName(unit))
}

var historyTemplate = template.Must(template.New("history").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", "Liberation Sans", sans-serif; margin: 2em auto; max-width: 84em; padding: 0 1em; color: #222; }
h1 { font-size: 1.4em; }
h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ddd; }
h3 { font-size: 1.05em; margin-top: 1.5em; }
.source { color: #555; overflow-wrap: anywhere; }
ul.changes { list-style: none; padding: 0; }
li.change { margin: .5em 0; padding: .4em .8em; border-left: 6px solid #999; background: #f6f6f6; }
li.change.worse { border-color: #d93025; background: #fce8e6; }
li.change.host { border-color: #d65f0e; background: #fef7e0; }
li.change.withdrawn { color: #777; text-decoration: line-through; }
li.change .headline { font-family: ui-monospace, "Liberation Mono", monospace; font-weight: 600; }
li.change .detail { font-size: .9em; color: #444; }
table { border-collapse: collapse; font-size: .85em; }
th, td { padding: .25em .6em; border-bottom: 1px solid #ddd; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.bench { font-family: ui-monospace, "Liberation Mono", monospace; white-space: nowrap; }
td.tip { font-family: ui-monospace, "Liberation Mono", monospace; }
td.tip small { font-family: system-ui, -apple-system, "Segoe UI", "Liberation Sans", sans-serif; }
td.date, td.status, td.num { white-space: nowrap; }
td.verdict { min-width: 8em; }
tr.night td { border-top: 2px solid #bbb; }
tr.failed td.status { color: #d93025; font-weight: 700; }
td.note { color: #555; font-style: italic; }
.scroll { overflow-x: auto; }
.different { color: #d93025; font-weight: 700; }
.same { color: #1e8e3e; font-weight: 700; }
.unknown { color: #b06000; }
figure { margin: 1.5em 0; }
figcaption { font-family: ui-monospace, "Liberation Mono", monospace; font-size: .85em; }
svg.plot { width: 100%; max-width: 56em; height: auto; border: 1px solid #eee; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{range .Series}}<h2>{{.Name}}</h2>
<p class="source">{{.Source}}<br>{{.Summary}}</p>
{{with .Changes}}<h3>Change points</h3>
<ul class="changes">{{range .}}
<li class="{{.Class}}"><span class="headline">#{{.ID}} {{.Headline}}</span> [{{.Status}}]<br><span class="detail">{{.Detail}}<br>{{.Bisect}}</span></li>{{end}}
</ul>{{end}}
{{with .Plots}}<h3>Trends</h3>
<p>Each point is one night's tip relative to the reference kernel booted beside it that night, in percent (the tip's centre over the reference's: the host divided out); its bar is the tip's confidence interval over the reference's centre. The shaded band is the reference against its own first night: a step in it is the host or the harness, not the kernel. A vertical line is a change point, labelled with the culprit's subject or why it has none; × marks a night without results.</p>
{{range .}}<figure>
<figcaption>{{.Caption}}</figcaption>
{{.SVG}}
</figure>
{{end}}{{end}}
{{with .Nights}}<h3>Nights</h3>
<div class="scroll"><table>
<thead><tr><th>night</th><th>status</th><th>tip, release</th><th>benchmark</th><th>tip</th><th>reference</th><th>vs reference</th><th>vs previous</th></tr></thead>
<tbody>{{range .}}
<tr class="night{{if .Failed}} failed{{end}}"><td class="date">{{.Date}}</td><td class="status">{{.Status}}</td><td class="tip">{{.Tip}}{{with .Subject}}<br><small>{{.}}</small>{{end}}{{with .Release}}<br><small>{{.}}</small>{{end}}</td>{{if .Rows}}{{with index .Rows 0}}<td class="bench">{{.Benchmark}} <small>{{.Unit}}</small></td><td class="num">{{.Tip}}</td><td class="num">{{.Reference}}</td><td class="verdict">{{.VsReference}}</td><td class="verdict {{.Class}}">{{.VsPrevious}}</td>{{end}}{{else}}<td colspan="5" class="note">{{.Summary}}{{range .Notes}} {{.}}{{end}}</td>{{end}}</tr>{{if .Rows}}{{range $i, $r := .Rows}}{{if $i}}
<tr><td></td><td></td><td></td><td class="bench">{{$r.Benchmark}} <small>{{$r.Unit}}</small></td><td class="num">{{$r.Tip}}</td><td class="num">{{$r.Reference}}</td><td class="verdict">{{$r.VsReference}}</td><td class="verdict {{$r.Class}}">{{$r.VsPrevious}}</td></tr>{{end}}{{end}}{{if .Notes}}
<tr><td></td><td></td><td></td><td colspan="5" class="note">{{.Summary}}{{range .Notes}} {{.}}{{end}}</td></tr>{{end}}{{end}}{{end}}
</tbody>
</table></div>{{end}}
{{end}}</body>
</html>
`))

// Sizes of the trend plots of WriteHistoryHTML.
const (
	trendWidth  = 7 * vg.Inch
	trendHeight = 4 * vg.Inch
)

// Colours of the trend plots: the tip is blue and the reference orange, as
// A and B are in PlotRow; change points of the kernel line are red, those
// of the host line brown.
var (
	colorRefBand      = color.NRGBA{R: 0xd6, G: 0x5f, B: 0x0e, A: 0x40}
	colorKernelChange = color.RGBA{R: 0xd9, G: 0x30, B: 0x25, A: 0xff}
	colorHostChange   = color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}
	colorFailedNight  = color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}
)

func (v *seriesView) trendSVG(t MetricTrend, w, h vg.Length) ([]byte, error) {
	tp, err := v.trendPlot(t, w, h)
	if err != nil {
		return nil, err
	}
	canvas := vgsvg.New(w, h)
	dc := draw.New(canvas)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	tp.plot.Draw(draw.Crop(dc, 0, 0, legendHeight, 0))
	strip := draw.Crop(dc, 0, 0, 0, -(h - legendHeight))
	tp.legends[0].legend.Draw(draw.Crop(strip, vg.Points(36), -w/2, 0, -vg.Points(2)))
	tp.legends[1].legend.Draw(draw.Crop(strip, w/2, 0, 0, -vg.Points(2)))
	var buf bytes.Buffer
	if _, err := canvas.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("report: plot the trend of %s as SVG: %w", t.Metric, err)
	}
	return buf.Bytes(), nil
}

// legendHeight is the height of the strip below a trend plot that holds
// its legends, of up to three entries each.
const legendHeight = 3*13 + 8

// trendLegend is a legend drawn below the plot.
type trendLegend struct{ legend plot.Legend }

func newTrendLegend() trendLegend {
	l := plot.NewLegend()
	l.TextStyle.Font.Variant = "Sans"
	l.TextStyle.Font.Size = vg.Points(8)
	l.Top, l.Left = true, true
	l.ThumbnailWidth = vg.Points(18)
	l.Padding = vg.Points(2)
	return trendLegend{legend: l}
}

func (l *trendLegend) add(name string, thumbs ...plot.Thumbnailer) {
	l.legend.Add(name, thumbs...)
}

type trendPlot struct {
	plot    *plot.Plot
	legends [2]trendLegend // left: the lines; right: the marks
}

// trendPoints are the points of one line with their error bars.
type trendPoints struct {
	plotter.XYs
	plotter.YErrors
}

// trendPlot draws the trend of t for a canvas of width w and height h,
// which the labels' placement depends on.
func (v *seriesView) trendPlot(t MetricTrend, w, h vg.Length) (*trendPlot, error) {
	fail := func(what string, err error) (*trendPlot, error) {
		return nil, fmt.Errorf("report: plot the trend of %s: %s: %w", t.Metric, what, err)
	}
	xOf := v.nightPositions()
	p := plot.New()
	sans(p)
	p.Title.Text = fmt.Sprintf("%s (%s)", t.Benchmark, unitName(t.Unit))
	p.Y.Label.Text = "tip vs reference, %"
	p.Y.Label.TextStyle.Font.Size = vg.Points(9)
	p.X.Label.TextStyle.Font.Size = vg.Points(9)
	p.X.Tick.Label.Font.Size = vg.Points(8)
	p.Y.Tick.Label.Font.Size = vg.Points(8)
	if len(v.nights) > 0 {
		p.X.Label.Text = fmt.Sprintf("night, %s to %s", v.nights[0].Date, v.nights[len(v.nights)-1].Date)
	}
	p.X.Tick.Marker = nightTicker{nights: v.nights, x: xOf}
	p.Add(plotter.NewGrid())
	tp := &trendPlot{plot: p, legends: [2]trendLegend{newTrendLegend(), newTrendLegend()}}

	// The nights without a result for this metric: the gaps.
	var gaps []history.Night
	for _, n := range v.nights {
		if _, ok := v.row(n.Date, t.Metric); !ok && failedNight(n.Status) {
			gaps = append(gaps, n)
		}
	}
	gapBetween := func(a, b string) bool {
		return slices.ContainsFunc(gaps, func(n history.Night) bool { return n.Date > a && n.Date < b })
	}

	ref0 := math.NaN()
	for _, pt := range t.Points {
		if c := pt.Row.Reference.Center; c > 0 && !math.IsInf(c, 0) {
			ref0 = c
			break
		}
	}
	finiteOr := func(v, or float64) float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return or
		}
		return v
	}
	var kernel, host trendPoints
	var hostLo, hostHi []float64
	var kernelDates, hostDates []string
	lo, hi := math.Inf(1), math.Inf(-1)
	grow := func(vs ...float64) {
		for _, v := range vs {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	for _, pt := range t.Points {
		r, x := pt.Row, xOf[pt.Night.Date]
		if refC := r.Reference.Center; r.Ratio > 0 && !math.IsInf(r.Ratio, 0) {
			y := 100 * (r.Ratio - 1)
			yLo, yHi := y, y
			if refC > 0 && !math.IsInf(refC, 0) {
				yLo = math.Min(y, finiteOr(100*(r.Tip.Lo/refC-1), y))
				yHi = math.Max(y, finiteOr(100*(r.Tip.Hi/refC-1), y))
			}
			kernel.XYs = append(kernel.XYs, plotter.XY{X: x, Y: y})
			kernel.YErrors = append(kernel.YErrors, struct{ Low, High float64 }{y - yLo, yHi - y})
			kernelDates = append(kernelDates, pt.Night.Date)
			grow(yLo, yHi)
		}
		if c := r.Reference.Center; c > 0 && !math.IsInf(c, 0) && ref0 > 0 {
			y := 100 * (c/ref0 - 1)
			yLo := math.Min(y, finiteOr(100*(r.Reference.Lo/ref0-1), y))
			yHi := math.Max(y, finiteOr(100*(r.Reference.Hi/ref0-1), y))
			host.XYs = append(host.XYs, plotter.XY{X: x, Y: y})
			hostLo, hostHi = append(hostLo, yLo), append(hostHi, yHi)
			hostDates = append(hostDates, pt.Night.Date)
			grow(yLo, yHi)
		}
	}
	if math.IsInf(lo, 0) {
		lo, hi = 0, 0
	}
	// Instruction counts are flat to 0.03 %: a span of at least two
	// percentage points keeps that noise from filling the plot.
	if span := hi - lo; span < 2 {
		lo, hi = lo-(2-span)/2, hi+(2-span)/2
	}
	span := hi - lo

	var changes []history.ChangePoint
	for _, cp := range v.changes {
		if cp.Metric == t.Metric && cp.Status != history.ChangeWithdrawn {
			changes = append(changes, cp)
		}
	}
	xMin, xMax := 0.0, 0.0
	if len(v.nights) > 0 {
		xMin, xMax = xOf[v.nights[0].Date], xOf[v.nights[len(v.nights)-1].Date]
	}
	p.X.Min, p.X.Max = xMin-0.6, xMax+0.6

	// The change points' labels go above the data, one under the other;
	// their room sets the top of the Y range.
	labels := v.placeLabels(changes, xOf, p.X.Min, p.X.Max, w)
	bottom := lo - 0.06*span
	if len(gaps) > 0 {
		bottom = lo - 0.22*span
	}
	lines := 0
	for _, l := range labels {
		lines += l.lines
	}
	// The data area is the canvas less the legend, the title and the X
	// axis (about 60 points); the labels need a line of 10 points each.
	dataHeight := (h - legendHeight - vg.Points(60)).Points()
	zone := math.Min(0.6, (10*float64(lines)+8)/dataHeight)
	if lines == 0 {
		zone = 0.05
	}
	top := hi + (hi-bottom)*zone/(1-zone)
	p.Y.Min, p.Y.Max = bottom, top
	perPoint := (top - bottom) / dataHeight // Y units per point

	// The reference's band, under everything else.
	bandRuns := runsOf(hostDates, gapBetween)
	var refBand *plotter.Polygon
	for _, run := range bandRuns {
		var edge plotter.XYs
		for _, i := range run {
			edge = append(edge, plotter.XY{X: host.XYs[i].X, Y: hostHi[i]})
		}
		for _, i := range slices.Backward(run) {
			edge = append(edge, plotter.XY{X: host.XYs[i].X, Y: hostLo[i]})
		}
		if len(run) == 1 { // a lone night: a narrow box
			x := host.XYs[run[0]].X
			edge = plotter.XYs{{X: x - 0.25, Y: hostHi[run[0]]}, {X: x + 0.25, Y: hostHi[run[0]]}, {X: x + 0.25, Y: hostLo[run[0]]}, {X: x - 0.25, Y: hostLo[run[0]]}}
		}
		band, err := plotter.NewPolygon(edge)
		if err != nil {
			return fail("reference band", err)
		}
		band.Color = colorRefBand
		band.LineStyle.Width = 0
		p.Add(band)
		refBand = band
	}
	var refLine *plotter.Line
	for _, run := range bandRuns {
		var xys plotter.XYs
		for _, i := range run {
			xys = append(xys, host.XYs[i])
		}
		if len(xys) == 1 {
			xys = plotter.XYs{{X: xys[0].X - 0.25, Y: xys[0].Y}, {X: xys[0].X + 0.25, Y: xys[0].Y}}
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return fail("reference centre", err)
		}
		l.LineStyle = draw.LineStyle{Color: colorB, Width: vg.Points(1)}
		p.Add(l)
		refLine = l
	}

	// The change points, under the tip's points.
	type mark struct {
		cp   history.ChangePoint
		line *plotter.Line
	}
	var marks []mark
	for i, cp := range changes {
		x := labels[i].x
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: bottom}, {X: x, Y: top}})
		if err != nil {
			return fail("change point", err)
		}
		l.LineStyle = draw.LineStyle{Color: colorKernelChange, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(4), vg.Points(2)}}
		if cp.Line == history.LineHost {
			l.LineStyle = draw.LineStyle{Color: colorHostChange, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(1.5), vg.Points(1.5)}}
		}
		p.Add(l)
		marks = append(marks, mark{cp: cp, line: l})
	}
	line := 0
	for i, m := range marks {
		lb := labels[i]
		y := top - perPoint*(4+10*float64(line))
		line += lb.lines
		mark, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: lb.x, Y: y}}, Labels: []string{lb.text}})
		if err != nil {
			return fail("change point label", err)
		}
		style := &mark.TextStyle[0]
		*style = labelStyle()
		style.Color = m.line.LineStyle.Color
		style.XAlign = draw.XLeft
		mark.Offset = vg.Point{X: vg.Points(3)}
		if lb.left {
			style.XAlign = draw.XRight
			mark.Offset = vg.Point{X: -vg.Points(3)}
		}
		p.Add(mark)
	}

	// The tip, by runs of nights without a gap.
	var tipLine *plotter.Line
	for _, run := range runsOf(kernelDates, gapBetween) {
		if len(run) < 2 {
			continue
		}
		var xys plotter.XYs
		for _, i := range run {
			xys = append(xys, kernel.XYs[i])
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return fail("tip line", err)
		}
		l.LineStyle = draw.LineStyle{Color: colorA, Width: vg.Points(0.8)}
		p.Add(l)
		tipLine = l
	}
	var tipDots *plotter.Scatter
	if len(kernel.XYs) > 0 {
		bars, err := plotter.NewYErrorBars(kernel)
		if err != nil {
			return fail("tip intervals", err)
		}
		bars.LineStyle.Color = colorA
		bars.CapWidth = vg.Points(4)
		dots, err := plotter.NewScatter(kernel.XYs)
		if err != nil {
			return fail("tip centres", err)
		}
		dots.GlyphStyle = draw.GlyphStyle{Color: colorA, Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}
		p.Add(bars, dots)
		tipDots = dots
	}

	// The gaps.
	var gapDots *plotter.Scatter
	if len(gaps) > 0 {
		var xys plotter.XYs
		var names []string
		y := lo - 0.1*span
		for _, n := range gaps {
			xys = append(xys, plotter.XY{X: xOf[n.Date], Y: y})
			names = append(names, gapName(n.Status))
		}
		dots, err := plotter.NewScatter(xys)
		if err != nil {
			return fail("failed nights", err)
		}
		dots.GlyphStyle = draw.GlyphStyle{Color: colorFailedNight, Radius: vg.Points(3.5), Shape: draw.CrossGlyph{}}
		labels, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: names})
		if err != nil {
			return fail("failed nights", err)
		}
		for i := range labels.TextStyle {
			s := &labels.TextStyle[i]
			s.Font.Variant = "Sans"
			s.Font.Size = vg.Points(7)
			s.Color = colorFailedNight
			s.XAlign, s.YAlign = draw.XCenter, draw.YTop
		}
		labels.Offset = vg.Point{Y: -vg.Points(5)}
		p.Add(dots, labels)
		gapDots = dots
	}

	if tipDots != nil {
		thumbs := []plot.Thumbnailer{tipDots}
		if tipLine != nil {
			thumbs = append([]plot.Thumbnailer{tipLine}, thumbs...)
		}
		tp.legends[0].add("tip ÷ reference: centre, bar: interval", thumbs...)
	}
	if refLine != nil {
		tp.legends[0].add("reference ÷ its first night: centre, band: interval", refBand, refLine)
	}
	kernelDone, hostDone := false, false
	for _, m := range marks {
		switch {
		case m.cp.Line == history.LineHost && !hostDone:
			tp.legends[1].add("change point of the reference (host or harness)", m.line)
			hostDone = true
		case m.cp.Line != history.LineHost && !kernelDone:
			tp.legends[1].add("change point of the kernel, with its culprit", m.line)
			kernelDone = true
		}
	}
	if gapDots != nil {
		tp.legends[1].add("night without results", gapDots)
	}
	return tp, nil
}

// labelStyle is the text style of a change point's label.
func labelStyle() text.Style {
	s := text.Style{Font: font.From(plot.DefaultFont, vg.Points(7.5)), Handler: plot.DefaultTextHandler, YAlign: draw.YTop}
	s.Font.Variant = "Sans"
	return s
}

// trendLabel is a change point's mark: where its line goes and how its
// label reads and sits.
type trendLabel struct {
	x     float64 // between the nights either side of the step
	text  string
	lines int
	left  bool // the label ends at the line instead of starting there
}

// placeLabels places the labels of changes on a plot whose X axis spans
// [xLo, xHi] over about w less the Y axis: each label goes to the right of
// its line if it fits there without crossing another change point's line,
// else to its left; a label that fits on neither side is broken into two
// lines and goes where there is more room.
func (v *seriesView) placeLabels(changes []history.ChangePoint, xOf map[string]float64, xLo, xHi float64, w vg.Length) []trendLabel {
	style := labelStyle()
	perPoint := (xHi - xLo) / (w - vg.Points(55)).Points() // X units per point
	out := make([]trendLabel, len(changes))
	for i, cp := range changes {
		x := xOf[cp.Night] - 0.5
		if bx, ok := xOf[cp.BeforeNight]; ok {
			x = (bx + xOf[cp.Night]) / 2
		}
		out[i] = trendLabel{x: x, text: plotLabel(cp), lines: 1}
	}
	crosses := func(lo, hi float64, self int) bool {
		for j, l := range out {
			if j != self && l.x > lo && l.x < hi {
				return true
			}
		}
		return false
	}
	for i := range out {
		l := &out[i]
		fits := func(text string) (left, ok bool) {
			width := (style.Width(text).Points() + 6) * perPoint
			switch {
			case l.x+width <= xHi && !crosses(l.x, l.x+width, i):
				return false, true
			case l.x-width >= xLo && !crosses(l.x-width, l.x, i):
				return true, true
			}
			return false, false
		}
		if left, ok := fits(l.text); ok {
			l.left = left
			continue
		}
		l.text, l.lines = breakLabel(l.text), 2
		if left, ok := fits(l.text); ok {
			l.left = left
			continue
		}
		l.left = l.x-xLo > xHi-l.x
	}
	return out
}

// breakLabel breaks a label in two lines at the space nearest its middle.
func breakLabel(s string) string {
	r := []rune(s)
	best := -1
	for i, c := range r {
		if c == ' ' && (best < 0 || abs(i-len(r)/2) < abs(best-len(r)/2)) {
			best = i
		}
	}
	if best < 0 {
		return s
	}
	return string(r[:best]) + "\n" + string(r[best+1:])
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// gapName is how a plot labels a night without results.
func gapName(s history.NightStatus) string {
	switch s {
	case history.StatusBuildFailed:
		return "build failed"
	case history.StatusBootFailed:
		return "boot failed"
	case history.StatusInfraFailed:
		return "infra failed"
	case history.StatusRunning:
		return "unfinished"
	}
	return string(s)
}

// runsOf splits the indices of dates (in order) into runs that no gap
// separates.
func runsOf(dates []string, gapBetween func(a, b string) bool) [][]int {
	var runs [][]int
	for i, d := range dates {
		if i == 0 || gapBetween(dates[i-1], d) {
			runs = append(runs, nil)
		}
		runs[len(runs)-1] = append(runs[len(runs)-1], i)
	}
	return runs
}

// nightPositions places the nights on the X axis: days since the first
// night, or the nights' order if a date does not parse.
func (v *seriesView) nightPositions() map[string]float64 {
	xOf := make(map[string]float64, len(v.nights))
	if len(v.nights) == 0 {
		return xOf
	}
	day0, err := time.Parse(time.DateOnly, v.nights[0].Date)
	for _, n := range v.nights {
		d, errN := time.Parse(time.DateOnly, n.Date)
		if err != nil || errN != nil {
			clear(xOf)
			for j, n := range v.nights {
				xOf[n.Date] = float64(j)
			}
			return xOf
		}
		xOf[n.Date] = math.Round(d.Sub(day0).Hours() / 24)
	}
	return xOf
}

// nightTicker marks every night on the X axis and labels about 14 of them
// with their month and day.
type nightTicker struct {
	nights []history.Night
	x      map[string]float64
}

func (t nightTicker) Ticks(lo, hi float64) []plot.Tick {
	stride := max(1, (len(t.nights)+13)/14)
	var ticks []plot.Tick
	for i, n := range t.nights {
		tick := plot.Tick{Value: t.x[n.Date]}
		if i%stride == 0 {
			tick.Label = n.Date
			if len(n.Date) == len(time.DateOnly) {
				tick.Label = n.Date[5:] // MM-DD; the axis label has the years
			}
		}
		ticks = append(ticks, tick)
	}
	return ticks
}

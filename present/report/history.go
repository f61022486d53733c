package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/internal/words"
	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// WriteHistory renders h in format f. Each format has its file, as the
// comparison report's do: history_text.go (text and Markdown),
// history_json.go (HistoryDocument), history_html.go (the page) and
// history_plot.go (its trend plots); this one holds what they share: the
// series sorted and indexed (seriesView) and the words for nights, change
// points and verdicts.
func WriteHistory(w io.Writer, f Format, h view.History) error {
	switch f {
	case FormatText:
		return writePrintable(w, func(w io.Writer) error { return writeHistoryText(w, h) })
	case FormatMarkdown:
		return writePrintable(w, func(w io.Writer) error { return writeHistoryMarkdown(w, h) })
	case FormatJSON:
		return writeHistoryJSON(w, h)
	case FormatHTML:
		return WriteHistoryHTML(w, h)
	}
	return fmt.Errorf("report: unknown format %q (want text, markdown, json or html)", f)
}

// seriesView is a HistorySeries sorted and indexed for rendering.
type seriesView struct {
	series  history.Series
	nights  []history.Night    // by date
	trends  []view.MetricTrend // by metric, points by date
	changes []history.ChangePoint
	// excursions are by night, metric and line.
	excursions []history.Excursion
	// rows are each night's rows, by date, in the order of trends.
	rows map[string][]history.NightRow
}

func newSeriesView(hs view.HistorySeries) *seriesView {
	v := &seriesView{series: hs.Series, rows: map[string][]history.NightRow{}}
	seen := map[string]bool{}
	for _, n := range hs.Nights {
		if !seen[n.Date] {
			seen[n.Date] = true
			v.nights = append(v.nights, n)
		}
	}
	v.trends = slices.Clone(hs.Trends)
	slices.SortStableFunc(v.trends, func(a, b view.MetricTrend) int {
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
	v.excursions = sortedExcursions(hs.Excursions)
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

// changesSummary says "3 change points: 2 open, 1 muted; 1 provisional",
// and how many excursions there are, if any: "; 1 excursion".
func (v *seriesView) changesSummary() string {
	if len(v.changes) == 0 {
		return "no change points" + v.excursionsSummary()
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
	for _, s := range append(history.LiveStatuses(), history.ChangeWithdrawn) {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	s := countOf(len(v.changes), "change point") + ": " + strings.Join(parts, ", ")
	if provisional > 0 {
		s += fmt.Sprintf("; %d provisional", provisional)
	}
	return s + v.excursionsSummary()
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

// tipName names a night's tip in a few characters: the short commit, else
// "image " and the short image digest, else the release.
func tipName(k history.Kernel) string {
	switch {
	case k.Commit != "":
		return words.ShortHash(k.Commit)
	case k.ImageSHA256 != "":
		return "image " + words.ShortHash(k.ImageSHA256)
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

// direction says which way a change of deltaPct in unit goes, in the words
// of compare.DirectionOf: "worse", "better", or "changed" when the unit has
// no known direction. A move of the kernel line (the tip over the
// reference) goes the tip's way.
func direction(unit string, deltaPct float64) string {
	return compare.DirectionOf(unit, deltaPct).String()
}

// changeDirection is a change point's direction in its headline: "(worse)",
// "(better)" or "(control moved)".
func changeDirection(cp history.ChangePoint) string {
	if compare.IsControl(cp.Benchmark, nil) {
		return "control moved"
	}
	return direction(cp.Unit, cp.DeltaPct)
}

// changePointHeadline returns an LKP-style one-line summary of a change
// point, in the style of Headline:
//
//	LPMTrie/op=lookup/keys=random/entries=10000: +7.23% insn/op (worse), night 2026-11-08, bpf-next
//
// A host-line change point says that the reference moved ("on the
// reference: host or harness changed"), a provisional or withdrawn one says
// so at the end. series may be empty (a report of one series).
func changePointHeadline(series string, cp history.ChangePoint) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s %s (%s)", cp.Benchmark, view.FormatDelta(cp.DeltaPct), unitName(cp.Unit), changeDirection(cp))
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
	before, after, commits, ok := v.rangeEnds(cp)
	switch {
	case commits:
		return fmt.Sprintf("%s..%s (%s)", before, after, nights)
	case !ok:
		return nights
	}
	return fmt.Sprintf("%s → %s (%s)", before, after, nights)
}

// rangeEnds names the tips either side of a change point's step, "?" for
// one unknown: the commits when it has them (commits set), else the
// nights' tips, with their releases for an image; ok is false when
// neither night is known.
func (v *seriesView) rangeEnds(cp history.ChangePoint) (before, after string, commits, ok bool) {
	if cp.BeforeCommit != "" || cp.AfterCommit != "" {
		return cmp.Or(words.ShortHash(cp.BeforeCommit), "?"), cmp.Or(words.ShortHash(cp.AfterCommit), "?"), true, true
	}
	b, okB := v.night(cp.BeforeNight)
	a, okA := v.night(cp.Night)
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
	return name(b, okB), name(a, okA), false, okB || okA
}

// bisectLine says what the bisection of a change point found or why there
// was none: "culprit 9d8c7b6a5f4e bpf: …", "bisect failed: …", "not
// bisected: …".
func bisectLine(cp history.ChangePoint) string {
	b := cp.Bisect
	switch b.State {
	case history.BisectFound:
		s := "culprit " + cmp.Or(words.ShortHash(b.Culprit), "?")
		if b.Subject != "" {
			s += " " + b.Subject
		}
		return s
	case history.BisectRequested:
		return "bisection requested: the next nightly run bisects it"
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
// change and which way it goes first ("-12.0% better: …").
func plotLabel(cp history.ChangePoint) string {
	s := view.FormatDelta(cp.DeltaPct)
	if cp.Line != history.LineHost {
		s += " " + changeDirection(cp)
	}
	if cp.Status != history.ChangeOpen && cp.Status != history.ChangeWithdrawn {
		s += " [" + string(cp.Status) + "]" // triaged: acknowledged, invalid, muted
	}
	s += ": "
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
	return truncate(s, 72)
}

// formatVerdict formats a night's comparison: "+7.21% DIFFERENT (worse)",
// "+0.01% SAME", or "–" when not compared.
func formatVerdict(c *history.Comparison, bench, unit string) string {
	if c == nil {
		return "–"
	}
	s := view.FormatDelta(c.DeltaPct) + " " + c.Verdict.String()
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
	return view.FormatValue(e.Center, unit)
}

// vsReference formats the tip against the reference: the night's verdict
// if it has one, else the ratio as a change; "–" without a reference (the
// ratio is then the tip's own value).
func vsReference(r history.NightRow) string {
	if r.VsReference != nil {
		return formatVerdict(r.VsReference, r.Benchmark, r.Unit)
	}
	if r.HasReference() && r.Ratio > 0 && !math.IsInf(r.Ratio, 0) {
		return view.FormatDelta(100 * (r.Ratio - 1))
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

// nightNotes are a night's reason and note, labelled, and its
// excursions.
func (v *seriesView) nightNotes(n history.Night) []string {
	var out []string
	if n.Reason != "" {
		out = append(out, "reason: "+n.Reason)
	}
	if n.Note != "" {
		out = append(out, "note: "+n.Note)
	}
	for _, e := range v.excursionsOn(n.Date) {
		out = append(out, excursionNote(e))
	}
	return out
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

// bareValue is formatEstimate without the unit, for a table that says it
// once per row.
func bareValue(e history.Estimate, unit string) string {
	return strings.TrimSuffix(formatEstimate(e, unit), " "+unitName(unit))
}

package report

import (
	"bytes"
	"encoding/json"
	"html"
	"slices"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/present/view"
)

// excursionSeries is the test history with two excursions: the lookup's
// tip on 2026-11-10, measured under icount (a kernel that was different
// that night), and the noop's reference on 2026-11-03, measured under wall
// time (a bad night).
func excursionSeries() view.HistorySeries {
	hs := testHistorySeries()
	for i := range hs.Nights {
		switch hs.Nights[i].Date {
		case "2026-11-10":
			hs.Nights[i].Accel = "icount"
		case "2026-11-03":
			hs.Nights[i].Accel = "tcg"
		}
	}
	hs.Excursions = []history.Excursion{ // out of order: the renderers sort
		{NightID: 110, Night: "2026-11-10", Metric: metricLookup, Line: history.LineKernel, Level: 1.0723, DeltaPct: -17.04},
		{NightID: 103, Night: "2026-11-03", Metric: metricNoop, Line: history.LineHost, Level: 15.01, DeltaPct: 41.2},
	}
	return hs
}

func TestHistoryExcursionsText(t *testing.T) {
	h := view.History{Series: []view.HistorySeries{excursionSeries()}}
	text := render(t, FormatText, h)
	for _, want := range []string{
		"4 change points: 3 open, 1 withdrawn; 2 provisional; 2 excursions",
		"    excursion: " + benchNoop + " insn/op, host line, +41.2% from its neighbouring nights",
		"excursions of bpf-next (nights far from the nights on both sides of them, left out of the change points):",
		"  2026-11-03  " + benchNoop + " insn/op                host line    +41.2%  a bad night, left out of the change-point statistics; its boots are kept",
		"  2026-11-10  " + benchLookup + " insn/op  kernel line  -17.0%  under instruction counts a kernel that was different that night, not noise",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("WriteHistoryText lacks %q:\n%s", want, text)
		}
	}
	// The note goes under its night, not another.
	night := text[strings.Index(text, "\n2026-11-10"):]
	night = night[:strings.Index(night[1:], "\n2026-11-11")]
	if !strings.Contains(night, "excursion: "+benchLookup) {
		t.Errorf("the night of 2026-11-10 has no note of its excursion:\n%s", night)
	}
	// Without excursions nothing is said of them.
	if plain := render(t, FormatText, testHistory()); strings.Contains(plain, "excursion") {
		t.Errorf("WriteHistoryText of a history without excursions mentions them:\n%s", plain)
	}

	md := render(t, FormatMarkdown, h)
	for _, want := range []string{
		"| night | benchmark | line | from its neighbours | meaning |",
		"| 2026-11-10 | `" + benchLookup + "` insn/op | kernel | -17.0% | under instruction counts a kernel that was different that night",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("WriteHistoryMarkdown lacks %q:\n%s", want, md)
		}
	}
}

func TestHistoryExcursionsJSON(t *testing.T) {
	var doc HistoryDocument
	out := render(t, FormatJSON, view.History{Series: []view.HistorySeries{excursionSeries()}})
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	got := doc.Series[0].Excursions
	if len(got) != 2 || got[0].Night != "2026-11-03" || got[0].Line != "host" || got[1].Benchmark != benchLookup ||
		got[1].DeltaPct == nil || *got[1].DeltaPct != -17.04 || got[1].Level == nil || *got[1].Level != 1.0723 ||
		!strings.HasPrefix(got[1].Meaning, "under instruction counts a kernel") {
		t.Errorf("excursions = %+v; want the noop's host night on 2026-11-03, then the lookup's kernel night on 2026-11-10", got)
	}
	if plain := render(t, FormatJSON, testHistory()); strings.Contains(plain, `"excursions"`) {
		t.Errorf("the JSON of a history without excursions has the field")
	}
}

// An excursion is ringed on its line's plot, in its own legend entry, and
// is no change point's mark.
func TestHistoryExcursionsPlot(t *testing.T) {
	hs := excursionSeries()
	v := newSeriesView(hs)
	for _, m := range []history.Metric{metricLookup, metricNoop} {
		i := slices.IndexFunc(v.trends, func(t view.MetricTrend) bool { return t.Metric == m })
		svg, err := v.trendSVG(v.trends[i], trendWidth, trendHeight, testNightURL)
		if err != nil {
			t.Fatal(err)
		}
		if texts := svgTexts(svg); !slices.Contains(texts, "excursion: left out of the change points") {
			t.Errorf("the plot of %s has no legend entry for its excursion: %q", m.Benchmark, texts)
		}
		// The ring and its legend's thumbnail.
		if n := bytes.Count(svg, []byte(excursionStroke)); n != 2 {
			t.Errorf("the plot of %s strokes %d shapes in the excursions' colour; want 2 (the ring, the legend's)", m.Benchmark, n)
		}
	}
	plain := excursionSeries()
	plain.Excursions = nil
	svg, err := newSeriesView(plain).trendSVG(v.trends[0], trendWidth, trendHeight, testNightURL)
	if err != nil || bytes.Contains(svg, []byte(excursionStroke)) || bytes.Contains(svg, []byte("excursion")) {
		t.Errorf("the plot of a series without excursions rings a night or names them (err %v)", err)
	}
	// The HTML page lists them and says what the ring is.
	page := html.UnescapeString(render(t, FormatHTML, view.History{Series: []view.HistorySeries{hs}}))
	for _, want := range []string{"<h3>Excursions</h3>", "2026-11-10 " + benchLookup, "A ring marks an excursion"} {
		if !strings.Contains(page, want) {
			t.Errorf("WriteHistoryHTML lacks %q", want)
		}
	}
	if plain := render(t, FormatHTML, testHistory()); strings.Contains(plain, "xcursion") {
		t.Errorf("the HTML of a history without excursions mentions them")
	}
}

// excursionStroke is how the SVG strokes colorExcursion.
const excursionStroke = "stroke:#9467BD"

func TestChangePointMailExcursions(t *testing.T) {
	m := testMail(t, 7)
	m.After.Accel = "icount"
	m.Excursions = []history.Excursion{{NightID: 106, Night: "2026-11-06", Metric: metricLookup, Line: history.LineKernel, Level: 1.0004, DeltaPct: -35}}
	var b bytes.Buffer
	if err := WriteChangePointMail(&b, m); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"### Excursions", "- 2026-11-06: `" + benchLookup + "` insn/op, kernel\n  line, -35.0% from its", "under instruction counts a kernel"} {
		if !strings.Contains(out, want) {
			t.Errorf("WriteChangePointMail lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	if err := WriteChangePointMail(&b, testMail(t, 7)); err != nil || strings.Contains(b.String(), "Excursions") {
		t.Errorf("a mail without excursions has the section (err %v)", err)
	}
}

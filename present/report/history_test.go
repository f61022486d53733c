package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/vg"

	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/internal/words"
	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// The synthetic fortnight of the history tests: bpf-next measured under
// icount beside a fixed 6.12.117 reference, one commit a night. Night 5
// fails to build; night 8's commit makes lookups 7.2 % longer (a change
// point, bisected to that commit); on night 12 the reference moves by 3 %
// with the tip, because the host's QEMU changed (a host-line change point,
// provisional: only three nights follow it); night 13 has the same tip as
// night 12 and costs no boot. A noop change point on night 4 was withdrawn.
const (
	benchLookup = "LPMTrie/op=lookup/keys=random/entries=10000"
	benchNoop   = "LPMTrie/op=noop/entries=10000"
)

var (
	metricLookup = history.Metric{Benchmark: benchLookup, Unit: "insn/op"}
	metricNoop   = history.Metric{Benchmark: benchNoop, Unit: "insn/op"}
)

// fakeCommit makes a 40-digit commit hash for night i.
func fakeCommit(i int) string {
	return fmt.Sprintf("%02x%s", i*17, strings.Repeat(fmt.Sprintf("%x", (i*7)%16), 38))
}

var nightSubjects = []string{"",
	"bpf: selftests: cover LPM trie batch lookups",
	"bpf: document BPF_F_NO_PREALLOC for LPM tries",
	"libbpf: fix a typo in an error message",
	"bpf: lpm_trie: reuse the node allocator cache",
	"bpf: verifier: track precision of spilled scalars",
	"bpf: lpm_trie: annotate lockless reads",
	"selftests/bpf: add lpm_trie_map_batch_ops",
	"bpf: lpm_trie: compare the whole prefix in one loop",
	"bpf: arena: fix a use-after-free on unmap",
	"bpf: lpm_trie: drop a stale comment",
	"bpf: sockmap: avoid a race on close",
	"bpf: lpm_trie: move trie_check_add_elem",
	"",
	"bpf: lpm_trie: switch the lock to raw spinlock",
}

// estimate is a centre with the ±0.03 % interval of instruction counts.
func estimate(c float64) history.Estimate {
	return history.Estimate{Center: c, Lo: c * 0.9997, Hi: c * 1.0003, Boots: 5}
}

func testHistorySeries() view.HistorySeries {
	s := history.Series{ID: 1, Name: "bpf-next", Kind: history.GitSeries, Source: "/src/bpf-next", Branch: "master",
		Reference: "/boot/vmlinuz-6.12.117+deb12-cloud-amd64", Bench: "lookup", Accel: "icount"}
	ref := history.Kernel{ImageSHA256: "391d229a7c64aa0176f1c0a0a5f1e6a2c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4", Release: "6.12.117+deb12-cloud-amd64"}
	hs := view.HistorySeries{Series: s}
	trends := map[history.Metric][]history.TrendPoint{}
	prev := map[history.Metric]float64{}
	for i := 1; i <= 14; i++ {
		date := fmt.Sprintf("2026-11-%02d", i)
		n := history.Night{ID: int64(100 + i), SeriesID: 1, Date: date, Status: history.StatusMeasured,
			Tip: history.Kernel{Commit: fakeCommit(i), Subject: nightSubjects[i], Release: "6.18.0-rc4-bpf-next",
				Compiler: "gcc (Debian 12.2.0-14) 12.2.0", ConfigHash: "5be2d1f07c3a9e11"},
			Reference: ref, Accel: "tcg-icount", QEMUVersion: "7.2.22", CPUModel: "Westmere-v1", Host: "bench-1",
			ToolVersion: "v0.9.0", Started: time.Date(2026, 11, i, 2, 0, 0, 0, time.UTC), Finished: time.Date(2026, 11, i, 2, 14, 30, 0, time.UTC)}
		switch i {
		case 5:
			n.Status = history.StatusBuildFailed
			n.Reason = "make: *** [Makefile:1250: vmlinux] Error 2 (the build log is in the run directory)"
			n.Tip.Release = ""
		case 12, 14:
			n.QEMUVersion = "8.0.5"
			if i == 12 {
				n.Note = "QEMU 7.2.22 → 8.0.5 on this host"
			}
		case 13:
			n = history.Night{ID: 113, SeriesID: 1, Date: date, Status: history.StatusNoChange, Tip: hs.Nights[11].Tip, Reference: ref,
				Accel: "tcg-icount", QEMUVersion: "8.0.5", CPUModel: "Westmere-v1", Host: "bench-1", ToolVersion: "v0.9.0"}
		}
		hs.Nights = append(hs.Nights, n)
		if n.Status != history.StatusMeasured {
			continue
		}
		// icount's few instructions of noise; the conversion keeps the
		// compiler from fusing the multiply and add (as it may on arm64),
		// so the golden files hold the same digits everywhere.
		wobble := 1 + float64(0.0002*float64(i%3-1))
		host := 1.0
		if i >= 12 {
			host = 1.03
		}
		for _, m := range []history.Metric{metricLookup, metricNoop} {
			refC, tipC := 838.0*host, 838.3*host*wobble
			if m == metricNoop {
				refC, tipC = 15.01*host, 15.01*host
			}
			if m == metricLookup && i >= 8 {
				tipC *= 1.072
			}
			row := history.NightRow{NightID: n.ID, Metric: m, Tip: estimate(tipC), Reference: estimate(refC), Ratio: tipC / refC}
			vsRef := history.Comparison{Verdict: compare.Same, DeltaPct: 100 * (tipC/refC - 1), P: 0.31}
			if math.Abs(vsRef.DeltaPct) >= 1 {
				vsRef.Verdict, vsRef.P = compare.Different, 0.008
			}
			row.VsReference = &vsRef
			if p, ok := prev[m]; ok {
				c := history.Comparison{Verdict: compare.Same, DeltaPct: 100 * (tipC/p - 1), P: 0.55}
				if math.Abs(c.DeltaPct) >= 1 {
					c.Verdict, c.P = compare.Different, 0.008
				}
				row.VsPrevious = &c
			}
			prev[m] = tipC
			trends[m] = append(trends[m], history.TrendPoint{Night: n, Row: row})
		}
	}
	for _, m := range []history.Metric{metricNoop, metricLookup} { // out of order: the renderers sort
		hs.Trends = append(hs.Trends, view.MetricTrend{Metric: m, Points: trends[m]})
	}
	reported := time.Date(2026, 11, 8, 2, 15, 0, 0, time.UTC)
	hs.ChangePoints = []history.ChangePoint{
		{ID: 9, SeriesID: 1, Metric: metricLookup, Line: history.LineHost, Night: "2026-11-12", NightIndex: 10,
			BeforeNight: "2026-11-11", BeforeCommit: fakeCommit(11), AfterCommit: fakeCommit(12),
			DeltaPct: 3.0, P: 2e-6, Provisional: true, Status: history.ChangeOpen,
			FirstReported: reported.AddDate(0, 0, 4), Updated: reported.AddDate(0, 0, 6)},
		{ID: 7, SeriesID: 1, Metric: metricLookup, Line: history.LineKernel, Night: "2026-11-08", NightIndex: 6,
			BeforeNight: "2026-11-07", BeforeCommit: fakeCommit(7), AfterCommit: fakeCommit(8),
			DeltaPct: 7.2, P: 3e-9, Status: history.ChangeOpen,
			FirstReported: reported, Updated: reported.AddDate(0, 0, 2), Mailed: reported.Add(time.Minute),
			Bisect: history.Bisection{State: history.BisectFound, Culprit: fakeCommit(8), Subject: nightSubjects[8]}},
		{ID: 10, SeriesID: 1, Metric: metricNoop, Line: history.LineHost, Night: "2026-11-12", NightIndex: 10,
			BeforeNight: "2026-11-11", BeforeCommit: fakeCommit(11), AfterCommit: fakeCommit(12),
			DeltaPct: 3.0, P: 4e-6, Provisional: true, Status: history.ChangeOpen,
			FirstReported: reported.AddDate(0, 0, 4), Updated: reported.AddDate(0, 0, 6)},
		{ID: 5, SeriesID: 1, Metric: metricNoop, Line: history.LineKernel, Night: "2026-11-04", NightIndex: 3,
			BeforeNight: "2026-11-03", BeforeCommit: fakeCommit(3), AfterCommit: fakeCommit(4),
			DeltaPct: 1.1, P: 8e-4, Status: history.ChangeWithdrawn,
			FirstReported: time.Date(2026, 11, 4, 2, 15, 0, 0, time.UTC), Updated: time.Date(2026, 11, 6, 2, 15, 0, 0, time.UTC),
			Bisect: history.Bisection{State: history.BisectFailed, Reason: "the endpoints do not differ"}},
	}
	return hs
}

func testHistory() view.History {
	return view.History{Series: []view.HistorySeries{testHistorySeries()}}
}

// historyGolden compares got with testdata/name, or rewrites the file when
// LPMBISECT_UPDATE_GOLDEN is set.
func historyGolden(t *testing.T, name, got string) {
	t.Helper()
	path := "testdata/" + name
	if os.Getenv("LPMBISECT_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file: %v (LPMBISECT_UPDATE_GOLDEN=1 writes it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (LPMBISECT_UPDATE_GOLDEN=1 rewrites it):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

func render(t *testing.T, f Format, h view.History) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHistory(&b, f, h); err != nil {
		t.Fatalf("WriteHistory(%s) = %v", f, err)
	}
	return b.String()
}

func TestWriteHistoryTextGolden(t *testing.T) {
	historyGolden(t, "history-text.txt", render(t, FormatText, testHistory()))
}

func TestWriteHistoryMarkdownGolden(t *testing.T) {
	historyGolden(t, "history-markdown.md", render(t, FormatMarkdown, testHistory()))
}

func TestWriteHistoryJSONGolden(t *testing.T) {
	historyGolden(t, "history-json.json", render(t, FormatJSON, testHistory()))
}

func TestTrendSVGGolden(t *testing.T) {
	svg, err := TrendSVG(testHistorySeries(), metricLookup, trendWidth, trendHeight)
	if err != nil {
		t.Fatalf("TrendSVG(lookup) = %v", err)
	}
	historyGolden(t, "history-trend-lookup.svg", string(svg))
}

// TestHistoryTextContent checks what the golden text must say, so that a
// careless golden update cannot drop it.
func TestHistoryTextContent(t *testing.T) {
	out := render(t, FormatText, testHistory())
	for _, want := range []string{
		"bpf-next: git /src/bpf-next, branch master; reference /boot/vmlinuz-6.12.117+deb12-cloud-amd64; bench lookup; accel icount\n",
		"14 nights, 2026-11-01 to 2026-11-14: 12 measured, 1 no-change, 1 build-failed; 4 change points: 3 open, 1 withdrawn; 2 provisional\n",
		// A failed night, with its reason.
		"2026-11-05  build-failed  55" + strings.Repeat("3", 10) + " bpf: verifier: track precision of spilled scala…  –\n",
		"    reason: make: *** [Makefile:1250: vmlinux] Error 2",
		// A no-change night says which night measured its tip.
		"2026-11-13  no-change     cc" + strings.Repeat("4", 10) + " bpf: lpm_trie: move trie_check_add_elem",
		"tip measured on 2026-11-12",
		// The step's night: the tip against the previous one.
		"vs previous: 1 DIFFERENT (worse), 1 SAME",
		"vs previous +7.22% DIFFERENT (worse)\n",
		// Change points, with culprit, provisional and withdrawn.
		"#7   " + benchLookup + ": +7.20% insn/op (worse), night 2026-11-08 [open]\n",
		"       kernel (tip/reference) line, p<0.001, 77" + strings.Repeat("1", 10) + "..88" + strings.Repeat("8", 10) + " (nights 2026-11-07 → 2026-11-08)\n",
		"       culprit 88" + strings.Repeat("8", 10) + " bpf: lpm_trie: compare the whole prefix in one loop\n",
		"#9   " + benchLookup + ": +3.00% insn/op (worse) on the reference: host or harness changed, night 2026-11-12, provisional [open]\n",
		"not bisected: the reference kernel moved, so the host or harness changed, not a commit",
		"#5   " + benchNoop + ": +1.10% insn/op (control moved), night 2026-11-04, withdrawn [withdrawn]\n",
		"bisect failed: the endpoints do not differ\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("WriteHistoryText() lacks %q; got:\n%s", want, out)
		}
	}
	if i, j := strings.Index(out, "2026-11-14  measured"), strings.Index(out, "change points of bpf-next"); i < 0 || j < i {
		t.Errorf("WriteHistoryText() puts the change points (at %d) before the last night (at %d)", j, i)
	}
}

func TestHistoryMarkdownContent(t *testing.T) {
	out := render(t, FormatMarkdown, testHistory())
	for _, want := range []string{
		"| 2026-11-05 | **build-failed** | `55" + strings.Repeat("3", 10) + "` bpf: verifier: track precision of spilled scala… | – | reason: make: \\*\\*\\* [Makefile:1250: vmlinux] Error 2",
		"| 7 | 2026-11-08 | `" + benchLookup + "` insn/op | kernel | +7.20% (worse) | &lt;0.001 |",
		"culprit 88" + strings.Repeat("8", 10) + " bpf: lpm\\_trie: compare the whole prefix in one loop |",
		"| open, provisional |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("WriteHistoryMarkdown() lacks %q; got:\n%s", want, out)
		}
	}
}

// TestHistoryJSONDocument decodes the JSON as a tool would.
func TestHistoryJSONDocument(t *testing.T) {
	h := testHistory()
	// A night whose reference has no interval: its bounds must be null.
	h.Series[0].Trends[1].Points[0].Row.Reference.Lo = math.Inf(-1)
	var doc struct {
		Version int `json:"version"`
		Series  []struct {
			Name   string `json:"name"`
			Nights []struct {
				Date   string `json:"date"`
				Status string `json:"status"`
				Rows   []struct {
					Benchmark  string                `json:"benchmark"`
					Control    bool                  `json:"control"`
					Reference  struct{ Lo *float64 } `json:"reference"`
					VsPrevious *struct {
						Verdict   string  `json:"verdict"`
						DeltaPct  float64 `json:"delta_pct"`
						Direction string  `json:"direction"`
					} `json:"vs_previous"`
				} `json:"rows"`
			} `json:"nights"`
			ChangePoints []struct {
				ID     int64  `json:"id"`
				Line   string `json:"line"`
				Bisect struct {
					State   string `json:"state"`
					Culprit string `json:"culprit"`
				} `json:"bisect"`
				Headline string `json:"headline"`
			} `json:"change_points"`
		} `json:"series"`
	}
	if err := json.Unmarshal([]byte(render(t, FormatJSON, h)), &doc); err != nil {
		t.Fatalf("decode WriteHistoryJSON() = %v", err)
	}
	if doc.Version != historyDocumentVersion || len(doc.Series) != 1 || len(doc.Series[0].Nights) != 14 {
		t.Fatalf("WriteHistoryJSON() = version %d, %d series; want version %d, 1 series of 14 nights", doc.Version, len(doc.Series), historyDocumentVersion)
	}
	s := doc.Series[0]
	if n := s.Nights[4]; n.Status != "build-failed" || len(n.Rows) != 0 {
		t.Errorf("night %s = %s with %d rows; want build-failed with 0", n.Date, n.Status, len(n.Rows))
	}
	first := s.Nights[0].Rows
	if len(first) != 2 || first[0].Benchmark != benchLookup || first[0].Reference.Lo != nil || first[0].VsPrevious != nil || !first[1].Control {
		t.Errorf("night 1 rows = %+v; want lookup (reference lo null, no previous) then the noop control", first)
	}
	if r := s.Nights[7].Rows[0]; r.VsPrevious == nil || r.VsPrevious.Verdict != "DIFFERENT" || r.VsPrevious.Direction != "worse" {
		t.Errorf("night 8 lookup vs previous = %+v; want DIFFERENT, worse", r.VsPrevious)
	}
	var ids []int64
	for _, cp := range s.ChangePoints {
		ids = append(ids, cp.ID)
	}
	if fmt.Sprint(ids) != "[5 7 9 10]" {
		t.Errorf("change point IDs = %v; want [5 7 9 10] (by night, then benchmark)", ids)
	}
	if cp := s.ChangePoints[1]; cp.Bisect.State != "found" || cp.Bisect.Culprit != fakeCommit(8) || cp.Line != "kernel" ||
		cp.Headline != benchLookup+": +7.20% insn/op (worse), night 2026-11-08, bpf-next" {
		t.Errorf("change point 7 = %+v; want found culprit %s, kernel line", cp, fakeCommit(8))
	}
	if cp := s.ChangePoints[2]; cp.Bisect.State != "none" || cp.Line != "host" {
		t.Errorf("change point 9 = %+v; want bisect none, host line", cp)
	}
}

// TestTrendSVGMarks checks what the trend plot must show.
func TestTrendSVGMarks(t *testing.T) {
	hs := testHistorySeries()
	svg, err := TrendSVG(hs, metricLookup, trendWidth, trendHeight)
	if err != nil {
		t.Fatalf("TrendSVG(lookup) = %v", err)
	}
	texts := svgTexts(svg)
	for _, want := range []string{
		benchLookup + " (insn/op)",
		// The kernel's label, in two lines: on one it would cross the
		// host's line.
		"+7.20% worse: bpf: lpm_trie:", "compare the whole prefix in one loop",
		// The host's label would cross the kernel's line on the left and
		// leave the plot on the right: it is broken in two lines.
		"+3.00%: host or harness", "changed (provisional)",
		"build failed",
		"night, 2026-11-01 to 2026-11-14",
		"tip vs reference, %",
		"tip ÷ reference: centre, bar: interval",
		"reference ÷ its first night: centre, band: interval",
		"change point of the kernel, worse, with its culprit",
		"change point of the reference (host or harness)",
		"night without results",
	} {
		if !slices.Contains(texts, want) {
			t.Errorf("TrendSVG(lookup) texts = %q; want %q among them", texts, want)
		}
	}
	if n := len(slices.DeleteFunc(slices.Clone(texts), func(s string) bool { return !strings.HasPrefix(s, "11-") })); n != 14 {
		t.Errorf("TrendSVG(lookup) has %d tick labels of November; want a tick label per night, 14", n)
	}
	svg, err = TrendSVG(hs, metricNoop, trendWidth, trendHeight)
	if err != nil {
		t.Fatalf("TrendSVG(noop) = %v", err)
	}
	// The noop's kernel change point was withdrawn: no mark, no legend
	// entry; its host change point is marked.
	noop := strings.Join(svgTexts(svg), "\n")
	if strings.Contains(noop, "change point of the kernel") || strings.Contains(noop, "the endpoints do not differ") {
		t.Errorf("TrendSVG(noop) marks the withdrawn change point:\n%s", noop)
	}
	if !strings.Contains(noop, "change point of the reference") {
		t.Errorf("TrendSVG(noop) does not mark the host change point:\n%s", noop)
	}
	if _, err := TrendSVG(hs, history.Metric{Benchmark: "LPMTrie/op=update", Unit: "insn/op"}, trendWidth, trendHeight); err == nil {
		t.Errorf("TrendSVG(a metric the series lacks) = nil; want an error")
	}
}

// svgTexts returns the texts of an SVG document's text elements.
func svgTexts(svg []byte) []string {
	var out []string
	for _, m := range regexp.MustCompile(`>([^<]*)</text>`).FindAllSubmatch(svg, -1) {
		out = append(out, html.UnescapeString(string(m[1])))
	}
	return out
}

// TestTrendGaps checks that a failed night breaks the lines and that the
// tip's points sit where the ratio says.
func TestTrendGaps(t *testing.T) {
	v := newSeriesView(testHistorySeries())
	tp, err := v.trendPlot(v.trends[0], trendWidth, trendHeight)
	if err != nil {
		t.Fatalf("trendPlot(lookup) = %v", err)
	}
	if tp.plot.X.Min != -0.6 || tp.plot.X.Max != 13.6 {
		t.Errorf("trendPlot(lookup) X range = [%v, %v]; want [-0.6, 13.6] (14 nights at their dates)", tp.plot.X.Min, tp.plot.X.Max)
	}
	var dates []string
	for _, p := range v.trends[0].Points {
		dates = append(dates, p.Night.Date)
	}
	gapBetween := func(a, b string) bool { return a < "2026-11-05" && b > "2026-11-05" }
	if got := fmt.Sprint(runsOf(dates, gapBetween)); got != "[[0 1 2 3] [4 5 6 7 8 9 10 11]]" {
		t.Errorf("runsOf(lookup's dates) = %s; want [[0 1 2 3] [4 5 6 7 8 9 10 11]] (night 5 failed, night 13 had no boot)", got)
	}
	// Dates that do not parse fall back to the nights' order.
	v2 := &seriesView{nights: []history.Night{{Date: "first"}, {Date: "second"}}}
	if got := v2.nightPositions(); got["first"] != 0 || got["second"] != 1 {
		t.Errorf("nightPositions(unparsable dates) = %v; want first 0, second 1", got)
	}
}

func TestWriteHistoryHTML(t *testing.T) {
	page := render(t, FormatHTML, testHistory())
	out := html.UnescapeString(page)
	for _, want := range []string{
		"<h2>bpf-next</h2>",
		`<svg class="plot" role="img" `,
		"#7 " + benchLookup + ": +7.20% insn/op (worse), night 2026-11-08",
		"culprit 88" + strings.Repeat("8", 10) + " bpf: lpm_trie: compare the whole prefix in one loop",
		`<tr class="night failed" id="s1-night-2026-11-05"><td class="date"><a href="#s1-night-2026-11-05">2026-11-05</a></td><td class="status">build-failed</td>`,
		// The change point's night is marked in the table and linked to
		// it; the change point links its nights' rows and its plot.
		`<tr class="night changed" id="s1-night-2026-11-08"><td class="date"><a href="#s1-night-2026-11-08">2026-11-08</a><br><a class="mark change worse" href="#cp7" title="`,
		`<li class="change worse" id="cp7">`,
		`(nights <a href="#s1-night-2026-11-07">2026-11-07</a> → <a href="#s1-night-2026-11-08">2026-11-08</a>) · <a href="#s1-trend-LPMTrie-op-lookup-keys-random-entries-10000-insn-op">plot</a>`,
		`<figure id="s1-trend-LPMTrie-op-lookup-keys-random-entries-10000-insn-op">`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("WriteHistoryHTML() lacks %q", want)
		}
	}
	if n := strings.Count(out, "<svg "); n != 2 {
		t.Errorf("WriteHistoryHTML() has %d plots; want 2 (lookup and noop)", n)
	}
	if strings.Contains(out, "<?xml") || strings.Contains(out, "<script") {
		t.Errorf("WriteHistoryHTML() holds an XML declaration or a script")
	}
	if path := os.Getenv("LPMBISECT_HISTORY_HTML"); path != "" { // for a look in a browser
		if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestChangePointHeadline(t *testing.T) {
	base := history.ChangePoint{Metric: metricLookup, Line: history.LineKernel, Night: "2026-11-08", DeltaPct: 7.2, Status: history.ChangeOpen}
	for _, tc := range []struct {
		name string
		cp   func(history.ChangePoint) history.ChangePoint
		want string
	}{
		{"worse", func(c history.ChangePoint) history.ChangePoint { return c },
			benchLookup + ": +7.20% insn/op (worse), night 2026-11-08, bpf-next"},
		{"better", func(c history.ChangePoint) history.ChangePoint { c.DeltaPct = -21.3; return c },
			benchLookup + ": -21.3% insn/op (better), night 2026-11-08, bpf-next"},
		{"wall time", func(c history.ChangePoint) history.ChangePoint { c.Unit = "sec/op"; return c },
			benchLookup + ": +7.20% ns/op (worse), night 2026-11-08, bpf-next"},
		{"rate", func(c history.ChangePoint) history.ChangePoint { c.Unit = "ops/s"; return c },
			benchLookup + ": +7.20% ops/s (better), night 2026-11-08, bpf-next"},
		{"control", func(c history.ChangePoint) history.ChangePoint { c.Metric = metricNoop; c.DeltaPct = 13.3; return c },
			benchNoop + ": +13.3% insn/op (control moved), night 2026-11-08, bpf-next"},
		{"host", func(c history.ChangePoint) history.ChangePoint {
			c.Line = history.LineHost
			c.Provisional = true
			return c
		},
			benchLookup + ": +7.20% insn/op (worse) on the reference: host or harness changed, night 2026-11-08, bpf-next, provisional"},
	} {
		if got := changePointHeadline("bpf-next", tc.cp(base)); got != tc.want {
			t.Errorf("ChangePointHeadline(%s) = %q; want %q", tc.name, got, tc.want)
		}
	}
}

func TestBisectLine(t *testing.T) {
	for _, tc := range []struct {
		b    history.Bisection
		line history.Line
		want string
	}{
		{history.Bisection{State: history.BisectFound, Culprit: fakeCommit(8), Subject: "bpf: x"}, history.LineKernel, "culprit 88" + strings.Repeat("8", 10) + " bpf: x"},
		{history.Bisection{State: history.BisectFailed, Reason: "every commit failed to build"}, history.LineKernel, "bisect failed: every commit failed to build"},
		{history.Bisection{State: history.BisectSkipped, Reason: "below what this host resolves"}, history.LineKernel, "not bisected: below what this host resolves"},
		{history.Bisection{State: history.BisectRunning}, history.LineKernel, "bisecting (resumes if interrupted)"},
		{history.Bisection{}, history.LineKernel, "not bisected"},
		{history.Bisection{}, history.LineHost, "not bisected: the reference kernel moved, so the host or harness changed, not a commit"},
	} {
		if got := bisectLine(history.ChangePoint{Line: tc.line, Bisect: tc.b}); got != tc.want {
			t.Errorf("bisectLine(%+v, %s) = %q; want %q", tc.b, tc.line, got, tc.want)
		}
	}
}

// TestHistoryImageSeries checks how a series of prebuilt kernels names its
// tips and ranges: by image and release, as it has no commits.
func TestHistoryImageSeries(t *testing.T) {
	hs := imageSeries()
	out := render(t, FormatText, view.History{Series: []view.HistorySeries{hs}})
	for _, want := range []string{
		"ci-images: images /srv/ci/kernels; reference ref.deb\n",
		"2026-11-01  measured     image aaaaaaaaaaaa  6.1.0-47-cloud-amd64",
		"2026-11-03  boot-failed  image cccccccccccc  –\n    reason: boot-timeout\n",
		"image aaaaaaaaaaaa 6.1.0-47-cloud-amd64 → image bbbbbbbbbbbb 6.1.0-50-cloud-amd64 (nights 2026-11-01 → 2026-11-02)",
		"-16.7% insn/op (better)",
		"not bisected: no images between the nights",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("WriteHistoryText(image series) lacks %q; got:\n%s", want, out)
		}
	}
}

func TestWriteHistoryEmpty(t *testing.T) {
	for _, f := range []Format{FormatText, FormatMarkdown, FormatJSON, FormatHTML} {
		out := render(t, f, view.History{Series: []view.HistorySeries{{Series: history.Series{Name: "new"}}}})
		if !strings.Contains(out, "new") {
			t.Errorf("WriteHistory(%s, a series without nights) = %q; want the series named", f, out)
		}
	}
	if got := render(t, FormatJSON, view.History{}); got != "{\n  \"version\": 1,\n  \"series\": []\n}\n" {
		t.Errorf("WriteHistoryJSON(no series) = %q; want an empty series list", got)
	}
	if err := WriteHistory(&bytes.Buffer{}, Format("pdf"), view.History{}); err == nil {
		t.Errorf("WriteHistory(pdf) = nil; want an error")
	}
}

func TestFormatHelpers(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{truncate("abcdef", 4), "abc…"},
		{truncate("abc", 4), "abc"},
		{words.ShortHash(fakeCommit(8)), "88" + strings.Repeat("8", 10)},
		{words.ShortHash("v6.12"), "v6.12"},
		{direction("insn/op", 1), "worse"},
		{direction("sec/op", -1), "better"},
		{direction("ops/s", -1), "worse"},
		{direction("widgets", 1), "changed"},
		{formatVerdict(nil, benchLookup, "insn/op"), "–"},
		{formatVerdict(&history.Comparison{Verdict: compare.Different, DeltaPct: -3}, benchLookup, "sec/op"), "-3.00% DIFFERENT (better)"},
		{formatEstimate(history.Estimate{Center: math.NaN()}, "insn/op"), "–"},
		{formatEstimate(history.Estimate{Center: 630e-9, Boots: 3}, "sec/op"), "630 ns/op"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q; want %q", tc.got, tc.want)
		}
	}
}

func Example_changePointHeadline() {
	cp := history.ChangePoint{Metric: history.Metric{Benchmark: "LPMTrie/op=lookup/keys=random/entries=10000", Unit: "insn/op"},
		Line: history.LineKernel, Night: "2026-11-08", DeltaPct: 7.2}
	fmt.Println(changePointHeadline("bpf-next", cp))
	cp.Line, cp.Provisional = history.LineHost, true
	fmt.Println(changePointHeadline("bpf-next", cp))
	// Output:
	// LPMTrie/op=lookup/keys=random/entries=10000: +7.20% insn/op (worse), night 2026-11-08, bpf-next
	// LPMTrie/op=lookup/keys=random/entries=10000: +7.20% insn/op (worse) on the reference: host or harness changed, night 2026-11-08, bpf-next, provisional
}

// TrendSVG renders the trend of metric m of a series as an SVG document of
// the given size: one point per night, the tip relative to that night's
// reference in percent (Ratio − 1) with a bar over the tip's confidence
// interval divided by the reference's centre; a shaded band, the reference
// against its own first measured night (its centre and interval), which
// moves when the host or the harness does; a vertical line between the two
// nights of every live change point of the metric, labelled with its change
// and the culprit's subject, or why it has none; and a × under every night
// without results (build or boot failed, inconclusive, not finished), where
// the lines break. Nights sit at their dates, so a night that did not run
// is a wider gap. The legend is below the plot.
//
// The output is deterministic: the same history gives the same bytes, as
// the golden test checks (the fonts are named, not embedded).
func TrendSVG(hs view.HistorySeries, m history.Metric, w, h vg.Length) ([]byte, error) {
	v := newSeriesView(hs)
	for _, t := range v.trends {
		if t.Metric == m {
			return v.trendSVG(t, w, h, testNightURL)
		}
	}
	return nil, fmt.Errorf("report: plot the trend of %s: series %s has no such metric", m, hs.Series.Name)
}

// importedSeries is a series imported from results files without a
// reference: the kernel line's value is the tip's own centre (in seconds,
// as benchfmt keeps ns/op), −12 % from night 6 on.
func importedSeries() view.HistorySeries {
	m := history.Metric{Benchmark: "Public/lookup", Unit: "sec/op"}
	hs := view.HistorySeries{Series: history.Series{ID: 2, Name: "public", Kind: history.ImageSeries, Source: "/k", Reference: "/r", Accel: "tcg"}}
	none := history.Estimate{Center: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	var points []history.TrendPoint
	for i := 1; i <= 10; i++ {
		n := history.Night{ID: int64(200 + i), SeriesID: 2, Date: fmt.Sprintf("2026-01-%02d", i), Status: history.StatusMeasured,
			Tip: history.Kernel{Commit: fakeCommit(i)}, Accel: "tcg", Note: "imported"}
		tip := 26.7e-6
		if i >= 6 {
			tip = 23.5e-6
		}
		hs.Nights = append(hs.Nights, n)
		points = append(points, history.TrendPoint{Night: n, Row: history.NightRow{NightID: n.ID, Metric: m,
			Tip: history.Estimate{Center: tip, Lo: tip, Hi: tip, Boots: 1}, Reference: none, Ratio: tip}})
	}
	hs.Trends = []view.MetricTrend{{Metric: m, Points: points}}
	return hs
}

// A night without a reference has no comparison with one: "–", not the
// tip's own value read as a ratio (−100 %), in text, Markdown and HTML; the
// trend plot draws its kernel line against the first night instead.
func TestHistoryWithoutReference(t *testing.T) {
	h := view.History{Series: []view.HistorySeries{importedSeries()}}
	text := render(t, FormatText, h)
	if !strings.Contains(text, "ref –  vs ref –  vs previous –") || strings.Contains(text, "-100") {
		t.Errorf("WriteHistoryText(nights without a reference) does not say \"vs ref –\" or says -100 %%:\n%s", text)
	}
	md := render(t, FormatMarkdown, h)
	if !strings.Contains(md, "| – | – | – |") || strings.Contains(md, "-100") {
		t.Errorf("WriteHistoryMarkdown(nights without a reference) lacks \"| – | – | – |\" or says -100 %%:\n%s", md)
	}
	var page bytes.Buffer
	if err := WriteHistory(&page, FormatHTML, h); err != nil || strings.Contains(page.String(), "-100.0") {
		t.Errorf("WriteHistory(HTML, nights without a reference) = %v, or says -100 %%", err)
	}
	v := newSeriesView(h.Series[0])
	tp, err := v.trendPlot(v.trends[0], trendWidth, trendHeight)
	if err != nil {
		t.Fatalf("trendPlot(public) = %v", err)
	}
	if got := tp.plot.Y.Label.Text; !strings.Contains(got, "first night") {
		t.Errorf("trendPlot(public) Y label %q; want it relative to the first night", got)
	}
	if tp.plot.Y.Min > -12 || tp.plot.Y.Max < 0 || tp.plot.Y.Min < -20 {
		t.Errorf("trendPlot(public) Y range [%.2f, %.2f]; want the 0 %% and −12 %% nights in it, not −100 %%", tp.plot.Y.Min, tp.plot.Y.Max)
	}
}

// testNightURL links a plot's points to nights as the served pages do.
func testNightURL(date string) string { return NightPath("test", date) }

// A trend plot tells better from worse by colour and by word, says "with
// its culprit" only where a bisection named one, and carries under every
// night's point and every change point's line a title and a link.
func TestTrendSVGDirectionsAndLinks(t *testing.T) {
	hs := testHistorySeries()
	for i, cp := range hs.ChangePoints {
		if cp.ID == 7 {
			hs.ChangePoints[i].DeltaPct, hs.ChangePoints[i].Bisect = -7.2, history.Bisection{State: history.BisectSkipped, Reason: "below what this host resolves"}
		}
	}
	svg, err := TrendSVG(hs, metricLookup, trendWidth, trendHeight)
	if err != nil {
		t.Fatal(err)
	}
	texts := svgTexts(svg)
	if !slices.Contains(texts, "change point of the kernel, better") || slices.ContainsFunc(texts, func(s string) bool { return strings.Contains(s, "culprit") }) {
		t.Errorf("the legend of a plot whose better change point was not bisected: %q; want \"change point of the kernel, better\" and no culprit", texts)
	}
	if !slices.ContainsFunc(texts, func(s string) bool { return strings.HasPrefix(s, "-7.20% better:") }) {
		t.Errorf("the better change point's label is not among %q", texts)
	}
	if !strings.Contains(string(svg), "stroke:#1E8E3E;stroke-width:1.2;stroke-dasharray:4,2") {
		t.Error("the better change point's line is not green")
	}
	for _, want := range []string{
		`<a href="#cp7"><title>change point #7: ` + benchLookup + `: -7.20% insn/op (better), night 2026-11-08; not bisected: below what this host resolves</title><rect `,
		`<a href="/series/test/nights/2026-11-08"><title>2026-11-08, tip 888888888888: `,
		`; vs the last tip +`,
	} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("the plot's SVG lacks %q", want)
		}
	}
	if n, want := strings.Count(string(svg), "<circle "), 12; n != want {
		t.Errorf("the plot has %d points with a link; want %d (the measured nights)", n, want)
	}
}

package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/wire"
)

// benchBoots is the per-boot medians of one benchmark on one side; each boot
// gets three samples: the median, and ±0.02 % around it.
type benchBoots struct {
	bench string
	a, b  []float64
}

// icountInput is an instruction-count comparison of six boots per side: a
// lookup 21 % cheaper (DIFFERENT), a lookup unchanged (SAME), the two
// controls unchanged, and an update too noisy to call (UNKNOWN).
var icountInput = []benchBoots{
	{"LPMTrie/op=lookup/keys=random/entries=10000",
		[]float64{1065.1, 1065.3, 1064.9, 1065.0, 1065.2, 1064.8},
		[]float64{838.2, 838.0, 838.1, 837.9, 838.3, 838.4}},
	{"LPMTrie/op=lookup/keys=sequential/entries=10000",
		[]float64{954.8, 954.9, 954.7, 955.0, 954.8, 954.9},
		[]float64{955.1, 955.0, 954.9, 955.2, 954.8, 955.0}},
	{"LPMTrie/op=update/keys=random/entries=10000",
		[]float64{2100, 2180, 2050, 2230, 2120, 2160},
		[]float64{2140, 2210, 2090, 2170, 2250, 2130}},
	{"LPMTrie/op=noop",
		[]float64{41.01, 41.02, 41.00, 41.01, 41.02, 41.01},
		[]float64{41.02, 41.01, 41.01, 41.00, 41.02, 41.01}},
	{"LPMTrie/op=baseline/keys=random/entries=10000",
		[]float64{92.5, 92.6, 92.5, 92.4, 92.5, 92.6},
		[]float64{92.6, 92.5, 92.5, 92.5, 92.4, 92.6}},
}

// resultsText writes benches as the host does: boots interleaved A B A B,
// each with its side, kernel and boot keys.
func resultsText(unit string, benches []benchBoots) string {
	var b strings.Builder
	fmt.Fprintf(&b, "accel: tcg-icount\n")
	for boot := range benches[0].a {
		for _, side := range []string{"A", "B"} {
			kernel := "6.1.0-57-cloud-amd64"
			if side == "B" {
				kernel = "6.12.117+deb12-cloud-amd64"
			}
			fmt.Fprintf(&b, "side: %s\nkernel: %s\nboot: %d\n", side, kernel, boot+1)
			for _, bench := range benches {
				v := bench.a[boot]
				if side == "B" {
					v = bench.b[boot]
				}
				for _, f := range []float64{0.9998, 1, 1.0002} {
					fmt.Fprintf(&b, "Benchmark%s 2000 %.6g %s\n", bench.bench, v*f, unit)
				}
			}
		}
	}
	return b.String()
}

func parse(t *testing.T, text string) []*benchfmt.Result {
	t.Helper()
	r := benchfmt.NewReader(strings.NewReader(text), "results.txt")
	var out []*benchfmt.Result
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.Result:
			out = append(out, rec.Clone())
		case *benchfmt.SyntaxError:
			t.Fatalf("parse: %v", rec)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatalf("parse: %v", err)
	}
	return out
}

func build(t *testing.T, text string, opts compare.Options) *compare.Report {
	t.Helper()
	rep, err := compare.Build(parse(t, text), opts)
	if err != nil {
		t.Fatalf("compare.Build(…) = %v", err)
	}
	return rep
}

var seed = int64(1733)

var testMeta = view.Meta{
	A:       view.KernelInfo{Input: "linux-image-6.1.0-57-cloud-amd64-unsigned_6.1.192-3_amd64.deb", Release: "6.1.0-57-cloud-amd64", SHA256: "fe69a84e207e8d2c"},
	B:       view.KernelInfo{Input: "linux-image-6.12.117+deb12-cloud-amd64-unsigned_6.12.117-1~deb12u1_amd64.deb", Release: "6.12.117+deb12-cloud-amd64", SHA256: "391d229a7c64aa01"},
	Accel:   "tcg-icount",
	Seed:    &seed,
	Samples: 3,
	FailOn:  compare.FailOnRegression,
	Command: "lpmbisect compare --accel icount --bench lookup,controls,update a.deb b.deb",
	Date:    time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC),
}

func icountReport(t *testing.T) *compare.Report {
	return build(t, resultsText("insn/op", icountInput), compare.Options{})
}

// golden compares got with the file testdata/name, or rewrites the file
// when LPMBISECT_UPDATE_GOLDEN is set.
func golden(t *testing.T, name, got string) {
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
		t.Errorf("output differs from %s:\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestWriteTextGolden(t *testing.T) {
	var b bytes.Buffer
	if err := writeText(&b, icountReport(t), testMeta); err != nil {
		t.Fatalf("WriteText() = %v", err)
	}
	golden(t, "icount.txt", b.String())
}

func TestWriteMarkdownGolden(t *testing.T) {
	var b bytes.Buffer
	if err := writeMarkdown(&b, icountReport(t), testMeta); err != nil {
		t.Fatalf("WriteMarkdown() = %v", err)
	}
	golden(t, "icount.md", b.String())
}

// TestReportContent checks what the golden files must say, so that a
// careless golden update cannot drop it.
func TestReportContent(t *testing.T) {
	rep := icountReport(t)
	var verdicts []string
	for _, r := range rep.Rows {
		verdicts = append(verdicts, r.Verdict.String())
	}
	if want := []string{"DIFFERENT", "SAME", "UNKNOWN", "SAME", "SAME"}; !reflect.DeepEqual(verdicts, want) {
		t.Fatalf("compare.Build(icountInput) verdicts = %v; want %v", verdicts, want)
	}
	for _, f := range []Format{FormatText, FormatMarkdown, FormatHTML, FormatJSON} {
		var b bytes.Buffer
		if err := Write(&b, f, rep, testMeta); err != nil {
			t.Fatalf("Write(%s) = %v", f, err)
		}
		out := b.String()
		if f == FormatHTML {
			out = html.UnescapeString(out)
		}
		seedText := "seed 1733"
		if f == FormatJSON {
			seedText = `"seed": 1733`
		}
		for _, want := range []string{
			"LPMTrie/op=lookup/keys=random/entries=10000: -21.3% insn/op (better), DIFFERENT, p=0.002, 6+6 boots",
			"UNKNOWN at the boots taken",
			"not cycles, cache misses",
			seedText,
			"fe69a84e207e",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("Write(%s) lacks %q", f, want)
			}
		}
	}
}

func TestWriteJSONRoundTrip(t *testing.T) {
	rep := icountReport(t)
	var b bytes.Buffer
	if err := writeJSON(&b, rep, testMeta); err != nil {
		t.Fatalf("WriteJSON() = %v", err)
	}
	var got Document
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("json.Unmarshal(WriteJSON()) = %v", err)
	}
	want := newDocument(rep, testMeta)
	want.Meta.FailOn = 0 // not encoded: FailOn says it
	if !reflect.DeepEqual(got, want) {
		t.Errorf("json.Unmarshal(WriteJSON()) =\n%+v\nwant\n%+v", got, want)
	}
	if got.Outcome != "inconclusive" || got.Rows[0].Verdict != compare.Different || *got.Rows[0].DeltaPct > -21 {
		t.Errorf("WriteJSON() outcome, rows[0] = %q, %v %v; want inconclusive, DIFFERENT -21.3", got.Outcome, got.Rows[0].Verdict, *got.Rows[0].DeltaPct)
	}
}

// TestWriteJSONInfinity: an interval with too few boots is infinite, which
// JSON cannot say; it becomes null.
func TestWriteJSONInfinity(t *testing.T) {
	short := []benchBoots{{"LPMTrie/op=lookup", []float64{1, 2, 3}, []float64{1, 2, 3}}}
	rep := build(t, resultsText("insn/op", short), compare.Options{})
	var b bytes.Buffer
	if err := writeJSON(&b, rep, view.Meta{}); err != nil {
		t.Fatalf("WriteJSON(3+3 boots) = %v; want no error", err)
	}
	var doc struct {
		Rows []struct {
			A struct{ Lo, Hi *float64 }
		}
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Rows[0].A.Lo != nil || doc.Rows[0].A.Hi != nil {
		t.Errorf("WriteJSON(3+3 boots) rows[0].a lo, hi = %v, %v; want null, null", doc.Rows[0].A.Lo, doc.Rows[0].A.Hi)
	}
	if !strings.Contains(b.String(), `"lo": null`) {
		t.Errorf("WriteJSON(3+3 boots) lacks \"lo\": null:\n%s", b.String())
	}
}

func TestWriteHTML(t *testing.T) {
	rep := icountReport(t)
	var b bytes.Buffer
	if err := WriteHTML(&b, rep, testMeta); err != nil {
		t.Fatalf("WriteHTML() = %v", err)
	}
	page := b.String()
	if got, want := strings.Count(page, "<svg "), len(rep.Rows); got != want {
		t.Errorf("WriteHTML() has %d <svg> elements; want %d, one per row", got, want)
	}
	if strings.Contains(page, "<?xml") {
		t.Errorf("WriteHTML() contains an XML declaration; inline SVG must not")
	}
	for _, want := range []string{"<!DOCTYPE html>", "A: 6.1.0-57-cloud-amd64", "(control)", `class="different"`, `class="outcome unsure"`, "INCONCLUSIVE"} {
		if !strings.Contains(page, want) {
			t.Errorf("WriteHTML() lacks %q", want)
		}
	}
}

// TestWriteHTMLEscapes: labels come from result files and command lines;
// they must not become markup.
func TestWriteHTMLEscapes(t *testing.T) {
	text := strings.ReplaceAll(resultsText("insn/op", icountInput[:1]), "6.1.0-57-cloud-amd64", "<script>alert(1)</script>")
	rep := build(t, text, compare.Options{})
	var b bytes.Buffer
	if err := WriteHTML(&b, rep, view.Meta{Command: `x "<b>"`}); err != nil {
		t.Fatalf("WriteHTML() = %v", err)
	}
	if strings.Contains(b.String(), "<script>") || strings.Contains(b.String(), "<b>") {
		t.Errorf("WriteHTML(kernel <script>…) has unescaped markup")
	}
}

func TestPlotSVG(t *testing.T) {
	rep := build(t, strings.ReplaceAll(resultsText("ns/op", icountInput[:1]), "accel: tcg-icount\n", ""), compare.Options{})
	svg, err := plotSVG(rep, rep.Rows[0], 400, 300)
	if err != nil {
		t.Fatalf("PlotSVG() = %v", err)
	}
	for _, want := range []string{"<svg", "µs/op", "A: 6.1.0-57-cloud-amd64", "B: 6.12.117+deb12-cloud-amd64", "LPMTrie/op=lookup/keys=random/entries=10000", "DIFFERENT"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("PlotSVG(lookup in sec/op) lacks %q", want)
		}
	}
	// At least one path per boot.
	if got := bytes.Count(svg, []byte("<path d=\"M")); got < 12 {
		t.Errorf("PlotSVG(6+6 boots) has %d paths; want at least one per boot", got)
	}
}

func TestDisplayUnit(t *testing.T) {
	for _, tc := range []struct {
		unit   string
		center float64
		want   string
		factor float64
	}{
		{"sec/op", 630e-9, "ns/op", 1e9},
		{"sec/op", 2.5e-6, "µs/op", 1e6},
		{"sec/op", 0.02, "ms/op", 1e3},
		{"insn/op", 980, "insn/op", 1},
	} {
		row := compare.Row{Unit: tc.unit, A: compare.Summary{Center: tc.center}}
		if got, f := displayUnit(row); got != tc.want || f != tc.factor {
			t.Errorf("displayUnit(%s, %v) = %q, %v; want %q, %v", tc.unit, tc.center, got, f, tc.want, tc.factor)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]Format{"text": FormatText, "markdown": FormatMarkdown, "md": FormatMarkdown, "json": FormatJSON, "html": FormatHTML} {
		if got, err := ParseFormat(in); got != want || err != nil {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q, nil", in, got, err, want)
		}
	}
	if _, err := ParseFormat("csv"); err == nil {
		t.Errorf("ParseFormat(\"csv\") = nil error; want an error")
	}
	if err := Write(&bytes.Buffer{}, "csv", icountReport(t), view.Meta{}); err == nil {
		t.Errorf("Write(csv) = nil error; want an error")
	}
}

// TestOutcomeLine covers the reasons the first line gives.
func TestOutcomeLine(t *testing.T) {
	rep := icountReport(t)
	for _, tc := range []struct {
		failOn compare.FailOn
		drop   string // benchmark to leave out
		want   string
	}{
		{compare.FailOnRegression, "", "INCONCLUSIVE (--fail-on regression): 1 benchmark UNKNOWN at the boots taken"},
		{compare.FailOnChange, "", "REGRESSION (--fail-on change): 1 benchmark DIFFERENT"},
		{compare.FailOnRegression, "update", "NO REGRESSION (--fail-on regression): no benchmark is worse; 1 benchmark better"},
	} {
		var benches []benchBoots
		for _, b := range icountInput {
			if tc.drop == "" || !strings.Contains(b.bench, tc.drop) {
				benches = append(benches, b)
			}
		}
		rep = build(t, resultsText("insn/op", benches), compare.Options{})
		if got := outcomeLine(rep, tc.failOn); got != tc.want {
			t.Errorf("outcomeLine(without %q, %v) = %q; want %q", tc.drop, tc.failOn, got, tc.want)
		}
	}
}

// TestControlWarnings: a control that moved a little is explained; one that
// moved enough to explain a verdict is environment drift, and the outcome
// says so first.
func TestControlWarnings(t *testing.T) {
	for _, tc := range []struct {
		factor float64
		want   []string
	}{
		{1.13, []string{"Controls moved with the kernel: LPMTrie/op=noop +13.0% insn/op (+5.331 insn/op", "too little to explain a verdict", "NO REGRESSION"}},
		{1.6, []string{"ENVIRONMENT DRIFT: control LPMTrie/op=noop +60.0% insn/op", "INCONCLUSIVE (--fail-on regression): a control moved"}},
	} {
		benches := slices.Clone(icountInput[:2])
		noop := icountInput[3]
		noop.b = slices.Clone(noop.a)
		for i := range noop.b {
			noop.b[i] *= tc.factor
		}
		rep := build(t, resultsText("insn/op", append(benches, noop)), compare.Options{})
		var b bytes.Buffer
		if err := writeText(&b, rep, view.Meta{}); err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(b.String()), " ") // undo the wrapping
		for _, want := range tc.want {
			if !strings.Contains(text, want) {
				t.Errorf("WriteText(noop ×%v) lacks %q:\n%s", tc.factor, want, b.String())
			}
		}
		if strings.Contains(text, "LPMTrie/op=noop: ") {
			t.Errorf("WriteText(noop ×%v) has a headline for the control; want it among the warnings only", tc.factor)
		}
	}
}

// TestRawResultsIgnoresPhases checks the benchstat command the report
// suggests for an icount results file: each boot records its own phases,
// and each kernel its own vulnerabilities lines, which benchstat would
// otherwise split the tables by; one kernel on two set-ups is compared by
// side, ignoring what differs.
func TestRawResultsIgnoresPhases(t *testing.T) {
	rep := &compare.Report{A: compare.SideInfo{Kernel: "a"}, B: compare.SideInfo{Kernel: "b"}}
	oneKernel := &compare.Report{A: compare.SideInfo{Kernel: "a"}, B: compare.SideInfo{Kernel: "a"}, OneKernel: true,
		Differences: []compare.Difference{{Key: wire.KeyCPUModel, A: "x", B: "y"}, {Key: wire.KeyAppend, B: "mitigations=off"}}}
	for _, c := range []struct {
		rep         *compare.Report
		accel, want string
	}{
		{rep, "icount", "results.txt (benchstat -col kernel -ignore side,boot,image,phases,vulnerabilities results.txt)"},
		{rep, "tcg", "results.txt (benchstat -col kernel -ignore side,boot,image,vulnerabilities results.txt)"},
		{oneKernel, "icount", "results.txt (benchstat -col side -ignore boot,image,phases,vulnerabilities,cpu-model,append,params results.txt)"},
	} {
		var got string
		for _, l := range runLines(c.rep, view.Meta{Accel: c.accel, ResultsFile: "results.txt"}) {
			if l[0] == "raw results" {
				got = l[1]
			}
		}
		if got != c.want {
			t.Errorf("raw results under %s = %q; want %q", c.accel, got, c.want)
		}
	}
}

// After drift the adaptive loop takes no more boots, so an undecided row
// says that instead of estimating boots the run did not take; the update
// row of icountInput (too noisy at 6+6 boots) shows it.
func TestDriftStopsTheBootsEstimate(t *testing.T) {
	benches := slices.Clone(icountInput[:4])
	noop := &benches[3]
	noop.b = slices.Clone(noop.a)
	for i := range noop.b {
		noop.b[i] *= 1.6
	}
	rep := build(t, resultsText("insn/op", benches), compare.Options{MaxBoots: 10})
	if !rep.EnvironmentDrift || rep.NeedMoreBoots(nil) {
		t.Fatalf("drift %v, NeedMoreBoots %v; want true, false", rep.EnvironmentDrift, rep.NeedMoreBoots(nil))
	}
	var b bytes.Buffer
	if err := writeText(&b, rep, view.Meta{}); err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(b.String()), " ")
	if !strings.Contains(text, "LPMTrie/op=update/keys=random/entries=10000: ") || !strings.Contains(text, driftStop) {
		t.Errorf("WriteText(drift, update undecided) lacks the update's line saying %q:\n%s", driftStop, b.String())
	}
	if strings.Contains(text, "a verdict needs ~") || strings.Contains(text, "would need ~") {
		t.Errorf("WriteText(drift) estimates boots the run will not take:\n%s", b.String())
	}
}

// TestHarnessChangedWithTheCPU: under instruction counts a control that
// moved between two set-ups of one kernel moved with what differs, which
// the paragraph names instead of the kernel.
func TestHarnessChangedWithTheCPU(t *testing.T) {
	rep := build(t, strings.Replace(resultsText("insn/op", harnessInput), "accel: tcg-icount", "accel: icount", 1), compare.Options{Bounds: harnessBounds})
	rep.B.Kernel, rep.OneKernel = rep.A.Kernel, true
	rep.Differences = []compare.Difference{{Key: wire.KeyCPUModel, A: "x", B: "y"}}
	text := strings.Join(warnings(rep, nil), "\n")
	if !strings.Contains(text, "HARNESS CHANGED WITH THE CPU: ") || !strings.Contains(text, "this is the CPU, not drift") || strings.Contains(text, "WITH THE KERNEL") {
		t.Errorf("warnings(one kernel, two CPUs) = %q; want the harness changed with the CPU", text)
	}
}

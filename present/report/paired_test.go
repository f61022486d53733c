package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"

	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// pairedBench is one benchmark of a paired run: its value on A at a quiet
// host, B's change as a factor, and the noise left in each pair's ratio.
type pairedBench struct {
	bench  string
	base   float64
	change float64
	noise  []float64 // per pair: B's median is off by this fraction
}

// pairedHost is the host's state during each of eight pairs: it moves A's
// and B's boot of a pair alike, by ±12 %, far more than the changes tested.
var pairedHost = []float64{1.00, 1.12, 0.93, 1.05, 0.88, 1.09, 0.97, 1.03}

var (
	// quiet leaves 0.1–0.2 % in each pair's ratio, around a median of
	// +0.03 %; tiny 0.01–0.02 %; noisy ±1–3.5 %, too much to tell +0.24 %
	// from ±1 % in eight pairs.
	quiet = []float64{0.002, -0.001, 0.0015, -0.002, 0.0005, 0.0001, 0.001, -0.0015}
	tiny  = []float64{0.0002, -0.0001, 0.0001, -0.0002, 0.0001, 0.0001, -0.0001, 0.0002}
	noisy = []float64{0.03, -0.025, 0.02, -0.03, 0.015, -0.01, 0.035, -0.02}
)

// pairedInput is a wall-time comparison of eight pairs: a lookup 5 %
// faster (DIFFERENT), a lookup unchanged (SAME), an update too noisy to
// call (UNKNOWN) and the two controls unchanged (SAME). Unpaired, the
// host's ±12 % would leave every row UNKNOWN.
var pairedInput = []pairedBench{
	{"LPMTrie/op=lookup/keys=random/entries=10000", 630, 0.95, quiet},
	{"LPMTrie/op=lookup/keys=sequential/entries=10000", 540, 1, quiet},
	{"LPMTrie/op=update/keys=random/entries=10000", 1210, 1, noisy},
	{"LPMTrie/op=noop", 41, 1, tiny},
	{"LPMTrie/op=baseline/keys=random/entries=10000", 92.5, 1, tiny},
}

// pairedText writes the first n pairs of benches as a paired run does:
// each pair's two boots with side, kernel, boot and pair keys, the side
// that goes first alternating from pair to pair. A boot named in skip
// ("B8": side B of pair 8) failed and is left out.
func pairedText(n int, benches []pairedBench, skip ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "accel: tcg\n")
	for pair := range n {
		sides := []string{"A", "B"}
		if pair%2 == 1 {
			sides = []string{"B", "A"}
		}
		for _, side := range sides {
			if slices.Contains(skip, fmt.Sprintf("%s%d", side, pair+1)) {
				continue
			}
			kernel := "6.1.0-57-cloud-amd64"
			if side == "B" {
				kernel = "6.12.117+deb12-cloud-amd64"
			}
			fmt.Fprintf(&b, "side: %s\nkernel: %s\nboot: %d\npair: %d\n", side, kernel, pair+1, pair+1)
			for _, bench := range benches {
				v := bench.base * pairedHost[pair]
				if side == "B" {
					v *= bench.change * (1 + bench.noise[pair])
				}
				for _, f := range []float64{0.9998, 1, 1.0002} {
					fmt.Fprintf(&b, "Benchmark%s 2000 %.6g ns/op\n", bench.bench, v*f)
				}
			}
		}
	}
	return b.String()
}

// pairedReport is an adaptive paired run capped at 10 pairs: a first look
// at 6 pairs, a second at 8.
func pairedReport(t *testing.T) *compare.Report {
	t.Helper()
	opts := compare.Options{MaxBoots: 10}
	first := build(t, pairedText(6, pairedInput), opts)
	opts.Previous = &first.Look
	return build(t, pairedText(8, pairedInput), opts)
}

var pairedMeta = func() view.Meta {
	m := testMeta
	m.Accel = "tcg"
	m.Command = "lpmbisect compare --accel tcg --bench lookup,controls,update a.deb b.deb"
	m.ResultsFile = "ab.txt"
	return m
}()

func TestWriteMarkdownPairedGolden(t *testing.T) {
	var b bytes.Buffer
	if err := writeMarkdown(&b, pairedReport(t), pairedMeta); err != nil {
		t.Fatalf("WriteMarkdown(paired) = %v", err)
	}
	golden(t, "paired.md", b.String())
}

// TestPairedContent checks what every format must say of a paired report,
// so that a careless golden update cannot drop it.
func TestPairedContent(t *testing.T) {
	rep := pairedReport(t)
	if !rep.Paired {
		t.Fatalf("compare.Build(pairedInput).Paired = false; want true")
	}
	var verdicts []string
	for _, r := range rep.Rows {
		verdicts = append(verdicts, r.Verdict.String())
	}
	if want := []string{"DIFFERENT", "SAME", "UNKNOWN", "SAME", "SAME"}; !reflect.DeepEqual(verdicts, want) {
		t.Fatalf("compare.Build(pairedInput) verdicts = %v; want %v", verdicts, want)
	}
	for _, f := range []Format{FormatText, FormatMarkdown, FormatHTML, FormatJSON} {
		var b bytes.Buffer
		if err := Write(&b, f, rep, pairedMeta); err != nil {
			t.Fatalf("Write(%s, paired) = %v", f, err)
		}
		out := b.String()
		if f == FormatHTML {
			out = html.UnescapeString(out)
		}
		for _, want := range []string{
			pairedExplanation,
			"LPMTrie/op=lookup/keys=random/entries=10000: -4.97% sec/op (better), DIFFERENT, p=0.008, 8 pairs",
			"1 benchmark UNKNOWN at the pairs taken",
			"a verdict needs ~", // in pairs, not boots per side
			"8 pairs (A and B side by side, steps in turn), looks at 6, 8 of at most 10 pairs, 3 samples per benchmark per boot",
			"-ignore side,boot,image,pair,vulnerabilities ab.txt",
		} {
			if f == FormatMarkdown {
				want = mdEscape(want)
			}
			if f == FormatJSON && (strings.Contains(want, "steps in turn") || strings.Contains(want, "-ignore")) {
				continue // the run's lines are in "meta", field by field
			}
			if !strings.Contains(out, want) {
				t.Errorf("Write(%s, paired) lacks %q", f, want)
			}
		}
		if n := strings.Count(out, pairedExplanation); n != 1 {
			t.Errorf("Write(%s, paired) states the paired explanation %d times; want once", f, n)
		}
		for _, bad := range []string{"8+8 boots", "boots per side at this spread", "per side,", "boots taken"} {
			if strings.Contains(out, bad) {
				t.Errorf("Write(%s, paired) says %q; want pairs", f, bad)
			}
		}
	}
}

func TestWriteJSONPaired(t *testing.T) {
	rep := pairedReport(t)
	var b bytes.Buffer
	if err := writeJSON(&b, rep, pairedMeta); err != nil {
		t.Fatalf("WriteJSON(paired) = %v", err)
	}
	var got Document
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("json.Unmarshal(WriteJSON(paired)) = %v", err)
	}
	want := newDocument(rep, pairedMeta)
	want.Meta.FailOn = 0
	if !reflect.DeepEqual(got, want) {
		t.Errorf("json.Unmarshal(WriteJSON(paired)) =\n%+v\nwant\n%+v", got, want)
	}

	// The raw fields, as a tool without this package reads them.
	var raw struct {
		Paired      *bool   `json:"paired"`
		Explanation *string `json:"explanation"`
		Look        struct{ Boots, MaxBoots int }
		Rows        []struct {
			Pairs        *int     `json:"pairs"`
			DeltaPct     *float64 `json:"delta_pct"`
			DecidedBoots int      `json:"decided_boots"`
			A, B         struct {
				Boots   int
				PerBoot []struct {
					ID   string  `json:"id"`
					Pair *string `json:"pair"`
				} `json:"per_boot"`
			}
		}
	}
	if err := json.Unmarshal(b.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	if raw.Paired == nil || !*raw.Paired {
		t.Errorf("WriteJSON(paired) paired = %v; want true", raw.Paired)
	}
	if raw.Explanation == nil || *raw.Explanation != pairedExplanation {
		t.Errorf("WriteJSON(paired) explanation = %v; want PairedExplanation", raw.Explanation)
	}
	if raw.Look.Boots != 8 {
		t.Errorf("WriteJSON(paired) look.boots = %d; want 8 pairs", raw.Look.Boots)
	}
	r0 := raw.Rows[0]
	if r0.Pairs == nil || *r0.Pairs != 8 {
		t.Errorf("WriteJSON(paired) rows[0].pairs = %v; want 8", r0.Pairs)
	}
	if r0.DeltaPct == nil || *r0.DeltaPct != rep.Rows[0].DeltaPct {
		t.Errorf("WriteJSON(paired) rows[0].delta_pct = %v; want the median change of the pairs, %v", r0.DeltaPct, rep.Rows[0].DeltaPct)
	}
	if r0.DecidedBoots != 8 {
		t.Errorf("WriteJSON(paired) rows[0].decided_boots = %d; want 8 (pairs)", r0.DecidedBoots)
	}
	for side, per := range map[string][]struct {
		ID   string  `json:"id"`
		Pair *string `json:"pair"`
	}{"a": r0.A.PerBoot, "b": r0.B.PerBoot} {
		if len(per) != 8 {
			t.Fatalf("WriteJSON(paired) rows[0].%s.per_boot has %d boots; want 8", side, len(per))
		}
		for _, bt := range per {
			if bt.Pair == nil || *bt.Pair != bt.ID {
				t.Errorf("WriteJSON(paired) rows[0].%s boot %s has pair %v; want %q", side, bt.ID, bt.Pair, bt.ID)
			}
		}
	}
	if !strings.Contains(b.String(), `"pair": "3"`) {
		t.Errorf("WriteJSON(paired) lacks \"pair\": \"3\"")
	}

	// An unpaired document has none of the new fields.
	b.Reset()
	if err := writeJSON(&b, icountReport(t), testMeta); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"paired"`, `"explanation"`, `"pairs"`, `"pair"`} {
		if strings.Contains(b.String(), field) {
			t.Errorf("WriteJSON(unpaired) has %s; want it left out", field)
		}
	}
}

func TestWriteHTMLPaired(t *testing.T) {
	rep := pairedReport(t)
	var b bytes.Buffer
	if err := WriteHTML(&b, rep, pairedMeta); err != nil {
		t.Fatalf("WriteHTML(paired) = %v", err)
	}
	page := html.UnescapeString(b.String())
	for _, want := range []string{
		pairedExplanation,
		"<th>pairs</th>",
		`<td class="num">8</td>`,
		"LPMTrie/op=lookup/keys=random/entries=10000: DIFFERENT, -4.97%, p=0.008, 8 pairs</figcaption>",
		"a grey line joins the two boots of each pair",
		"line: A's and B's boot of one pair", // in the plots' legends
	} {
		if !strings.Contains(page, want) {
			t.Errorf("WriteHTML(paired) lacks %q", want)
		}
	}
	if strings.Contains(page, "<th>boots</th>") || strings.Contains(page, "8+8") {
		t.Errorf("WriteHTML(paired) counts boots per side; want pairs")
	}
}

func TestPlotSVGPaired(t *testing.T) {
	rep := pairedReport(t)
	svg, err := plotSVG(rep, rep.Rows[0], 400, 300)
	if err != nil {
		t.Fatalf("PlotSVG(paired) = %v", err)
	}
	for _, want := range []string{"ns/op", "DIFFERENT: -4.97%, p=0.008, 8 pairs", "line: A&#39;s and B&#39;s boot of one pair"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("PlotSVG(paired) lacks %q", want)
		}
	}
	// Each complete pair gets a line, from its A boot to its B boot at the
	// same offset on both sides.
	lines, err := addPairLines(plot.New(), rep.Rows[0], 1)
	if err != nil {
		t.Fatalf("addPairLines(paired) = %v", err)
	}
	if len(lines) != 8 {
		t.Errorf("addPairLines(8 pairs) drew %d lines; want 8", len(lines))
	}
	for _, l := range lines {
		if dx := l.XYs[1].X - l.XYs[0].X; math.Abs(dx-1) > 1e-9 {
			t.Errorf("addPairLines(paired) joins x=%v to x=%v; want the same offset on both sides", l.XYs[0].X, l.XYs[1].X)
		}
	}
	if lines, _ := addPairLines(plot.New(), icountReport(t).Rows[0], 1); lines != nil {
		t.Errorf("addPairLines(unpaired) drew %d lines; want none", len(lines))
	}
}

// TestPairedIncomplete: a pair whose B boot failed is left out of the
// rows, and the run line says so.
func TestPairedIncomplete(t *testing.T) {
	rep := build(t, pairedText(8, pairedInput, "B5"), compare.Options{})
	if got, want := boots(rep), "7 pairs and 1 incomplete (A and B side by side, steps in turn)"; got != want {
		t.Errorf("boots(7 pairs + A of pair 5) = %q; want %q", got, want)
	}
	if got, want := plotSubtitle(rep.Rows[0]), "7 pairs"; !strings.HasSuffix(got, want) {
		t.Errorf("plotSubtitle(7 pairs + A of pair 5) = %q; want it to end in %q", got, want)
	}
	if _, err := plotSVG(rep, rep.Rows[0], 400, 300); err != nil {
		t.Errorf("PlotSVG(7 pairs + A of pair 5) = %v", err)
	}
}

// TestAbsChangePaired: the absolute change of a paired row is A's centre
// times the pairs' median change, not the distance between the centres,
// which move with the host.
func TestAbsChangePaired(t *testing.T) {
	row := compare.Row{Unit: "insn/op", A: compare.Summary{Center: 200}, B: compare.Summary{Center: 230}, DeltaPct: -2.5}
	if got, want := absChange(row), "+30.00 insn/op"; got != want {
		t.Errorf("absChange(unpaired 200 → 230) = %q; want %q", got, want)
	}
	row.Paired, row.Pairs = true, 8
	if got, want := absChange(row), "-5.000 insn/op"; got != want {
		t.Errorf("absChange(paired, A 200, median change -2.5%%) = %q; want %q", got, want)
	}

	// A control that moved, in a paired run, is reported with that change.
	benches := slices.Clone(pairedInput)
	benches[3].change = 1.015
	rep := build(t, pairedText(8, benches), compare.Options{})
	noop := rep.Rows[3]
	if !noop.Control || noop.Verdict != compare.Different {
		t.Fatalf("noop ×1.015, paired: control %v, verdict %v; want a DIFFERENT control", noop.Control, noop.Verdict)
	}
	want := fmt.Sprintf("LPMTrie/op=noop %s sec/op (%s, p=", view.FormatDelta(noop.DeltaPct), absChange(noop))
	if ws := strings.Join(warnings(rep, nil), "\n"); !strings.Contains(ws, want) {
		t.Errorf("warnings(paired, noop ×1.015) lack %q:\n%s", want, ws)
	}
}

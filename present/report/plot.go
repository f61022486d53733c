package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// Colours of the sides, told apart by shape too (circles for A, triangles
// for B) for readers who cannot tell them apart by colour.
var (
	colorA = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff} // blue
	colorB = color.RGBA{R: 0xd6, G: 0x5f, B: 0x0e, A: 0xff} // orange
)

// plotRow draws one row: every boot of A and of B as a point at the boot's
// median, with a bar over the boot's samples from min to max, and a line at
// each side's centre (median of the per-boot medians). The boot is the unit
// of the statistics, so each boot is one point; the bar shows the spread the
// per-boot median hides. Points are spread sideways in boot order, so a
// drift over the run shows as a slope.
//
// In a paired report the points are spread in pair order instead, each pair
// at the same place on both sides, and a thin grey line joins A's and B's
// boot of each pair: the host's state moves a pair up or down as a whole,
// and the line's slope is the pair's change, which is what the signed-rank
// test looks at. The subtitle counts pairs.
//
// Time units are shown in ns, µs or ms per op rather than benchfmt's sec/op.
func plotRow(rep *compare.Report, row compare.Row) (*plot.Plot, error) {
	label, factor := displayUnit(row)
	p := plot.New()
	sans(p)
	p.Title.Text = fmt.Sprintf("%s\n%s", row.Benchmark, plotSubtitle(row))
	p.Y.Label.Text = label
	p.X.Min, p.X.Max = -0.5, 1.5
	p.NominalX(rep.A.Label(), rep.B.Label())
	p.Add(plotter.NewGrid())

	pairLines, err := addPairLines(p, row, factor)
	if err != nil {
		return nil, err
	}

	for i, s := range []compare.Summary{row.A, row.B} {
		if s.Boots == 0 {
			continue
		}
		col, shape := colorA, draw.GlyphDrawer(draw.CircleGlyph{})
		if i == 1 {
			col, shape = colorB, draw.TriangleGlyph{}
		}
		x0 := float64(i)
		offsets := bootOffsets(row, s)
		var pts errPoints
		for j, b := range s.PerBoot {
			x := x0 + offsets[j]
			m := b.Median * factor
			pts.XYs = append(pts.XYs, plotter.XY{X: x, Y: m})
			pts.YErrors = append(pts.YErrors, struct{ Low, High float64 }{m - b.Min*factor, b.Max*factor - m})
		}
		bars, err := plotter.NewYErrorBars(pts)
		if err != nil {
			return nil, fmt.Errorf("report: plot %s: within-boot ranges: %w", row.Benchmark, err)
		}
		bars.LineStyle.Color = col
		bars.CapWidth = vg.Points(4)
		dots, err := plotter.NewScatter(pts.XYs)
		if err != nil {
			return nil, fmt.Errorf("report: plot %s: boot medians: %w", row.Benchmark, err)
		}
		dots.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(3.5), Shape: shape}
		centre, err := plotter.NewLine(plotter.XYs{{X: x0 - 0.4, Y: s.Center * factor}, {X: x0 + 0.4, Y: s.Center * factor}})
		if err != nil {
			return nil, fmt.Errorf("report: plot %s: centre: %w", row.Benchmark, err)
		}
		centre.LineStyle = draw.LineStyle{Color: col, Width: vg.Points(1.5), Dashes: []vg.Length{vg.Points(5), vg.Points(3)}}
		p.Add(bars, dots, centre)
		if i == 0 {
			p.Legend.Add("boot median, bar: min–max of its samples", dots)
			p.Legend.Add("side centre: median of boot medians", centre)
		}
	}
	if len(pairLines) > 0 {
		p.Legend.Add("line: A's and B's boot of one pair", pairLines[0])
	}
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	padY(p)
	return p, nil
}

// colorPair is the colour of the lines that join the boots of a pair.
var colorPair = color.RGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff}

// bootOffsets spreads the boots of side s of the row over ±0.3 around the
// side's position: in boot order, or in a paired row in pair order, so that
// the two boots of a pair have the same offset.
func bootOffsets(row compare.Row, s compare.Summary) []float64 {
	spread := func(i, n int) float64 {
		if n < 2 {
			return 0
		}
		return -0.3 + 0.6*float64(i)/float64(n-1)
	}
	out := make([]float64, len(s.PerBoot))
	var at map[string]int
	if row.Paired {
		at = pairOrder(row)
	}
	for j, b := range s.PerBoot {
		if at != nil {
			out[j] = spread(at[b.Pair], len(at))
		} else {
			out[j] = spread(j, len(s.PerBoot))
		}
	}
	return out
}

// pairOrder numbers the pairs of a paired row from 0, numerically where
// the pair values are numbers (numbers first), as strings otherwise.
func pairOrder(row compare.Row) map[string]int {
	var ids []string
	for _, s := range []compare.Summary{row.A, row.B} {
		for _, b := range s.PerBoot {
			if !slices.Contains(ids, b.Pair) {
				ids = append(ids, b.Pair)
			}
		}
	}
	slices.SortStableFunc(ids, compare.ComparePairs)
	at := make(map[string]int, len(ids))
	for i, id := range ids {
		at[id] = i
	}
	return at
}

// addPairLines joins A's and B's boot median of each complete pair of a
// paired row with a thin grey line, added before the points so that it lies
// under them, and returns the lines. It adds nothing to an unpaired row.
func addPairLines(p *plot.Plot, row compare.Row, factor float64) ([]*plotter.Line, error) {
	if !row.Paired {
		return nil, nil
	}
	offA, offB := bootOffsets(row, row.A), bootOffsets(row, row.B)
	var lines []*plotter.Line
	for j, a := range row.A.PerBoot {
		k := slices.IndexFunc(row.B.PerBoot, func(b compare.Boot) bool { return b.Pair == a.Pair })
		if k < 0 {
			continue
		}
		l, err := plotter.NewLine(plotter.XYs{
			{X: offA[j], Y: a.Median * factor},
			{X: 1 + offB[k], Y: row.B.PerBoot[k].Median * factor},
		})
		if err != nil {
			return nil, fmt.Errorf("report: plot %s: pair %s: %w", row.Benchmark, a.Pair, err)
		}
		l.LineStyle = draw.LineStyle{Color: colorPair, Width: vg.Points(0.6)}
		p.Add(l)
		lines = append(lines, l)
	}
	return lines, nil
}

// errPoints are points with Y errors, for plotter.NewYErrorBars.
type errPoints struct {
	plotter.XYs
	plotter.YErrors
}

// padY widens the Y range by a quarter above, where the legend goes, and a
// little below, so that no point sits on the frame.
func padY(p *plot.Plot) {
	lo, hi := p.Y.Min, p.Y.Max
	span := hi - lo
	if span == 0 {
		span = math.Max(math.Abs(hi)*0.01, 1e-9)
	}
	p.Y.Min, p.Y.Max = lo-0.08*span, hi+0.45*span
}

// sans sets every text of p in the sans-serif variant, which reads better
// at small sizes on screen.
func sans(p *plot.Plot) {
	for _, v := range []*font.Variant{
		&p.Title.TextStyle.Font.Variant,
		&p.X.Label.TextStyle.Font.Variant, &p.Y.Label.TextStyle.Font.Variant,
		&p.X.Tick.Label.Font.Variant, &p.Y.Tick.Label.Font.Variant,
		&p.Legend.TextStyle.Font.Variant,
	} {
		*v = "Sans"
	}
	p.Title.TextStyle.Font.Size = vg.Points(10)
}

// plotSubtitle says the row's verdict, change, p and units: "6+6 boots",
// or in a paired row "8 pairs" (with the boots per side when no pair is
// complete).
func plotSubtitle(row compare.Row) string {
	if !row.Compared() {
		s := fmt.Sprintf("%v, %d+%d boots", row.Verdict, row.A.Boots, row.B.Boots)
		if row.Paired && row.A.Boots > 0 && row.B.Boots > 0 {
			s += ", no complete pair"
		}
		return s
	}
	return fmt.Sprintf("%v: %s, p=%s, %s", row.Verdict, view.FormatDelta(row.DeltaPct), view.FormatP(row.P), bootsLabel(row))
}

// displayUnit returns the Y axis label and the factor from the row's values:
// sec/op becomes ns/op, µs/op or ms/op by the size of the centres.
func displayUnit(row compare.Row) (string, float64) {
	if !strings.HasPrefix(row.Unit, "sec/") {
		return row.Unit, 1
	}
	rest := strings.TrimPrefix(row.Unit, "sec")
	c := math.Max(math.Abs(row.A.Center), math.Abs(row.B.Center))
	switch {
	case c < 1e-6:
		return "ns" + rest, 1e9
	case c < 1e-3:
		return "µs" + rest, 1e6
	case c < 1:
		return "ms" + rest, 1e3
	}
	return row.Unit, 1
}

// plotSVG renders plotRow as an SVG document of the given size.
func plotSVG(rep *compare.Report, row compare.Row, w, h vg.Length) ([]byte, error) {
	p, err := plotRow(rep, row)
	if err != nil {
		return nil, err
	}
	return plotToSVG(p, w, h, row.Benchmark)
}

// plotToSVG renders p as an SVG document of the given size; what names
// the plot in errors.
func plotToSVG(p *plot.Plot, w, h vg.Length, what string) ([]byte, error) {
	wt, err := p.WriterTo(w, h, "svg")
	if err != nil {
		return nil, fmt.Errorf("report: plot %s as SVG: %w", what, err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("report: plot %s as SVG: %w", what, err)
	}
	return buf.Bytes(), nil
}

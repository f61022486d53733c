package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/present/view"
)

// Sizes of the trend plots of WriteHistoryHTML.
const (
	trendWidth  = 7 * vg.Inch
	trendHeight = 4 * vg.Inch
)

// Colours of the trend plots: the tip is blue and the reference orange, as
// A and B are in plotRow; change points of the kernel line are red when
// worse, green when better, grey when the unit says neither (or a control
// moved), those of the host line brown; excursions are ringed in purple.
var (
	colorExcursion   = color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}
	colorRefBand     = color.NRGBA{R: 0xd6, G: 0x5f, B: 0x0e, A: 0x40}
	colorWorse       = color.RGBA{R: 0xd9, G: 0x30, B: 0x25, A: 0xff}
	colorBetter      = color.RGBA{R: 0x1e, G: 0x8e, B: 0x3e, A: 0xff}
	colorChanged     = color.RGBA{R: 0x5f, G: 0x63, B: 0x68, A: 0xff}
	colorHostChange  = color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}
	colorFailedNight = color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}
)

// changeColor is the colour of a change point's mark: its direction's.
func changeColor(cp history.ChangePoint) color.Color {
	switch {
	case cp.Line == history.LineHost:
		return colorHostChange
	case changeDirection(cp) == "worse":
		return colorWorse
	case changeDirection(cp) == "better":
		return colorBetter
	}
	return colorChanged
}

// trendSVG draws the trend of t as an SVG of width w and height h, with
// what the eye cannot read off it on top: each night's point has a
// tooltip (an SVG title: the night, its tip, its values and its verdict
// against the last tip) and links to nightURL(date), each change point's
// line a tooltip and a link to its card on the page (#cpID).
func (v *seriesView) trendSVG(t view.MetricTrend, w, h vg.Length, nightURL func(date string) string) ([]byte, error) {
	tp, err := v.trendPlot(t, w, h)
	if err != nil {
		return nil, err
	}
	canvas := vgsvg.New(w, h)
	dc := draw.New(canvas)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	area := draw.Crop(dc, 0, 0, legendHeight, 0)
	tp.plot.Draw(area)
	strip := draw.Crop(dc, 0, 0, 0, -(h - legendHeight))
	tp.legends[0].legend.Draw(draw.Crop(strip, vg.Points(36), -w/2, 0, -vg.Points(2)))
	tp.legends[1].legend.Draw(draw.Crop(strip, w/2, 0, 0, -vg.Points(2)))
	var buf bytes.Buffer
	if _, err := canvas.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("report: plot the trend of %s as SVG: %w", t.Metric, err)
	}
	return tp.withLinks(buf.Bytes(), &area, nightURL), nil
}

// withLinks adds to svg, gonum/plot's drawing on area, an invisible layer
// on top: a strip over every change point's line and a circle over every
// night's point, each in a link with its title. The layer goes last into
// vgsvg's group, whose coordinates are the canvas's, in points, so the
// plot's own transforms place it.
func (tp *trendPlot) withLinks(svg []byte, area *draw.Canvas, nightURL func(string) string) []byte {
	end := bytes.LastIndex(svg, []byte("</g>"))
	if end < 0 || (len(tp.points) == 0 && len(tp.marks) == 0) {
		return svg
	}
	xOf, yOf := tp.plot.Transforms(area)
	var b bytes.Buffer
	b.WriteString(`<g class="links">` + "\n")
	const invisible = `style="fill:#000;fill-opacity:0"`
	yLo, yHi := yOf(tp.plot.Y.Min).Points(), yOf(tp.plot.Y.Max).Points()
	for _, m := range tp.marks {
		fmt.Fprintf(&b, `<a href="#cp%d"><title>%s</title><rect x="%.2f" y="%.2f" width="8" height="%.2f" %s/></a>`+"\n",
			m.cp.ID, template.HTMLEscapeString(m.text), xOf(m.x).Points()-4, yLo, yHi-yLo, invisible)
	}
	for _, p := range tp.points {
		fmt.Fprintf(&b, `<a href="%s"><title>%s</title><circle cx="%.2f" cy="%.2f" r="5" %s/></a>`+"\n",
			template.HTMLEscapeString(nightURL(p.date)), template.HTMLEscapeString(p.text), xOf(p.x).Points(), yOf(p.y).Points(), invisible)
	}
	b.WriteString("</g>\n")
	return slices.Concat(svg[:end], b.Bytes(), svg[end:])
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
	// points are the kernel line's points, marks the change points' lines,
	// with what their titles say (withLinks).
	points []trendNight
	marks  []trendMark
}

// trendNight is a night's point on a plot, in the plot's data coordinates.
type trendNight struct {
	x, y       float64
	date, text string
}

// trendMark is a change point's line on a plot, at x.
type trendMark struct {
	x    float64
	cp   history.ChangePoint
	text string
}

// trendPoints are the points of one line with their error bars.
type trendPoints struct {
	plotter.XYs
	plotter.YErrors
}

// trendPlot draws the trend of t for a canvas of width w and height h,
// which the labels' placement depends on: the axes, the lines' points,
// the Y range that leaves room for the change points' labels, then, from
// the bottom layer up, the reference's band, the change points, the tip,
// the excursions and the nights without results, and the legends.
func (v *seriesView) trendPlot(t view.MetricTrend, w, h vg.Length) (*trendPlot, error) {
	d := &trendDrawing{v: v, t: t, xOf: v.nightPositions()}
	d.tp = &trendPlot{plot: v.trendAxes(t, d.xOf), legends: [2]trendLegend{newTrendLegend(), newTrendLegend()}}
	d.gaps = v.trendGaps(t)
	d.points()
	d.yRange(w, h)
	for _, step := range []func() error{d.drawReference, d.drawChanges, d.drawTip, d.drawExcursions, d.drawGaps} {
		if err := step(); err != nil {
			return nil, fmt.Errorf("report: plot the trend of %s: %w", t.Metric, err)
		}
	}
	d.addLegends()
	return d.tp, nil
}

// trendDrawing is a trend plot being drawn: what its steps share.
type trendDrawing struct {
	v   *seriesView
	t   view.MetricTrend
	tp  *trendPlot
	xOf map[string]float64
	// gaps are the nights without a result for the metric.
	gaps []history.Night
	// kernel and host are the lines' points (the host's intervals in
	// hostLo and hostHi), with their nights' dates.
	kernel, host           trendPoints
	hostLo, hostHi         []float64
	kernelDates, hostDates []string
	// lo and hi bound the data, span is their distance; bottom and top
	// the Y range, perPoint its Y units per point of the canvas.
	lo, hi, span, bottom, top, perPoint float64
	// changes are the metric's change points, labels their labels.
	changes []history.ChangePoint
	labels  []trendLabel
	// What the legends show.
	refBand                 *plotter.Polygon
	refLine, tipLine        *plotter.Line
	tipDots, rings, gapDots *plotter.Scatter
	marks                   []changeMark
}

// changeMark is a change point's line on the plot.
type changeMark struct {
	cp   history.ChangePoint
	line *plotter.Line
}

// trendAxes is the plot of t's trend with its title, axes and grid.
func (v *seriesView) trendAxes(t view.MetricTrend, xOf map[string]float64) *plot.Plot {
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
	return p
}

// trendGaps are the failed nights without a result for t's metric.
func (v *seriesView) trendGaps(t view.MetricTrend) []history.Night {
	var gaps []history.Night
	for _, n := range v.nights {
		if _, ok := v.row(n.Date, t.Metric); !ok && failedNight(n.Status) {
			gaps = append(gaps, n)
		}
	}
	return gaps
}

// gapBetween says whether a gap lies between the nights a and b.
func (d *trendDrawing) gapBetween(a, b string) bool {
	return slices.ContainsFunc(d.gaps, func(n history.Night) bool { return n.Date > a && n.Date < b })
}

func finiteOr(v, or float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return or
	}
	return v
}

// points places the points of both lines. The host line is relative to
// the first reference; the kernel line of nights without a reference
// (imported ones: their ratio is the tip's own value) to the first such
// tip, which the Y label then says.
func (d *trendDrawing) points() {
	t, p := d.t, d.tp.plot
	ref0, tip0 := math.NaN(), math.NaN()
	for _, pt := range t.Points {
		if c := pt.Row.Reference.Center; c > 0 && !math.IsInf(c, 0) && math.IsNaN(ref0) {
			ref0 = c
		}
		if c := pt.Row.Ratio; !pt.Row.HasReference() && c > 0 && !math.IsInf(c, 0) && math.IsNaN(tip0) {
			tip0 = c
		}
	}
	if !math.IsNaN(tip0) {
		p.Y.Label.Text = "tip vs reference, % (without one: vs the first night)"
		if math.IsNaN(ref0) {
			p.Y.Label.Text = "tip vs the first night, % (no reference)"
		}
	}
	d.lo, d.hi = math.Inf(1), math.Inf(-1)
	grow := func(vs ...float64) {
		for _, v := range vs {
			d.lo, d.hi = math.Min(d.lo, v), math.Max(d.hi, v)
		}
	}
	for _, pt := range t.Points {
		r, x := pt.Row, d.xOf[pt.Night.Date]
		if refC := r.Reference.Center; r.Ratio > 0 && !math.IsInf(r.Ratio, 0) {
			y := 100 * (r.Ratio - 1)
			if !r.HasReference() {
				y, refC = 100*(r.Ratio/tip0-1), tip0
			}
			yLo, yHi := y, y
			if refC > 0 && !math.IsInf(refC, 0) {
				yLo = math.Min(y, finiteOr(100*(r.Tip.Lo/refC-1), y))
				yHi = math.Max(y, finiteOr(100*(r.Tip.Hi/refC-1), y))
			}
			d.kernel.XYs = append(d.kernel.XYs, plotter.XY{X: x, Y: y})
			d.kernel.YErrors = append(d.kernel.YErrors, struct{ Low, High float64 }{y - yLo, yHi - y})
			d.kernelDates = append(d.kernelDates, pt.Night.Date)
			d.tp.points = append(d.tp.points, trendNight{x: x, y: y, date: pt.Night.Date, text: d.v.pointTitle(t, pt, y, r.HasReference())})
			grow(yLo, yHi)
		}
		if c := r.Reference.Center; c > 0 && !math.IsInf(c, 0) && ref0 > 0 {
			y := 100 * (c/ref0 - 1)
			yLo := math.Min(y, finiteOr(100*(r.Reference.Lo/ref0-1), y))
			yHi := math.Max(y, finiteOr(100*(r.Reference.Hi/ref0-1), y))
			d.host.XYs = append(d.host.XYs, plotter.XY{X: x, Y: y})
			d.hostLo, d.hostHi = append(d.hostLo, yLo), append(d.hostHi, yHi)
			d.hostDates = append(d.hostDates, pt.Night.Date)
			grow(yLo, yHi)
		}
	}
	if math.IsInf(d.lo, 0) {
		d.lo, d.hi = 0, 0
	}
	// Instruction counts are flat to 0.03 %: a span of at least two
	// percentage points keeps that noise from filling the plot.
	if span := d.hi - d.lo; span < 2 {
		d.lo, d.hi = d.lo-(2-span)/2, d.hi+(2-span)/2
	}
	d.span = d.hi - d.lo
}

// yRange sets the axes' ranges for a canvas of width w and height h: the
// change points' labels go above the data, one under the other, and their
// room sets the top of the Y range; the gaps' crosses go below it.
func (d *trendDrawing) yRange(w, h vg.Length) {
	p := d.tp.plot
	for _, cp := range d.v.changes {
		if cp.Metric == d.t.Metric && cp.Status != history.ChangeWithdrawn {
			d.changes = append(d.changes, cp)
		}
	}
	xMin, xMax := 0.0, 0.0
	if nights := d.v.nights; len(nights) > 0 {
		xMin, xMax = d.xOf[nights[0].Date], d.xOf[nights[len(nights)-1].Date]
	}
	p.X.Min, p.X.Max = xMin-0.6, xMax+0.6

	d.labels = d.v.placeLabels(d.changes, d.xOf, p.X.Min, p.X.Max, w)
	d.bottom = d.lo - 0.06*d.span
	if len(d.gaps) > 0 {
		d.bottom = d.lo - 0.22*d.span
	}
	lines := 0
	for _, l := range d.labels {
		lines += l.lines
	}
	// The data area is the canvas less the legend, the title and the X
	// axis (about 60 points); the labels need a line of 10 points each.
	dataHeight := (h - legendHeight - vg.Points(60)).Points()
	zone := math.Min(0.6, (10*float64(lines)+8)/dataHeight)
	if lines == 0 {
		zone = 0.05
	}
	d.top = d.hi + (d.hi-d.bottom)*zone/(1-zone)
	p.Y.Min, p.Y.Max = d.bottom, d.top
	d.perPoint = (d.top - d.bottom) / dataHeight
}

// drawReference draws the reference's band and centre, under everything
// else.
func (d *trendDrawing) drawReference() error {
	p, host := d.tp.plot, d.host
	bandRuns := runsOf(d.hostDates, d.gapBetween)
	for _, run := range bandRuns {
		var edge plotter.XYs
		for _, i := range run {
			edge = append(edge, plotter.XY{X: host.XYs[i].X, Y: d.hostHi[i]})
		}
		for _, i := range slices.Backward(run) {
			edge = append(edge, plotter.XY{X: host.XYs[i].X, Y: d.hostLo[i]})
		}
		if len(run) == 1 { // a lone night: a narrow box
			x := host.XYs[run[0]].X
			edge = plotter.XYs{{X: x - 0.25, Y: d.hostHi[run[0]]}, {X: x + 0.25, Y: d.hostHi[run[0]]}, {X: x + 0.25, Y: d.hostLo[run[0]]}, {X: x - 0.25, Y: d.hostLo[run[0]]}}
		}
		band, err := plotter.NewPolygon(edge)
		if err != nil {
			return fmt.Errorf("reference band: %w", err)
		}
		band.Color = colorRefBand
		band.LineStyle.Width = 0
		p.Add(band)
		d.refBand = band
	}
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
			return fmt.Errorf("reference centre: %w", err)
		}
		l.LineStyle = draw.LineStyle{Color: colorB, Width: vg.Points(1)}
		p.Add(l)
		d.refLine = l
	}
	return nil
}

// drawChanges draws the change points' lines, under the tip's points, and
// their labels.
func (d *trendDrawing) drawChanges() error {
	p := d.tp.plot
	for i, cp := range d.changes {
		x := d.labels[i].x
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: d.bottom}, {X: x, Y: d.top}})
		if err != nil {
			return fmt.Errorf("change point: %w", err)
		}
		l.LineStyle = draw.LineStyle{Color: changeColor(cp), Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(4), vg.Points(2)}}
		if cp.Line == history.LineHost {
			l.LineStyle.Dashes = []vg.Length{vg.Points(1.5), vg.Points(1.5)}
		}
		p.Add(l)
		d.marks = append(d.marks, changeMark{cp: cp, line: l})
		d.tp.marks = append(d.tp.marks, trendMark{x: x, cp: cp, text: fmt.Sprintf("change point #%d: %s; %s", cp.ID, changePointHeadline("", cp), bisectLine(cp))})
	}
	line := 0
	for i, m := range d.marks {
		lb := d.labels[i]
		y := d.top - d.perPoint*(4+10*float64(line))
		line += lb.lines
		mark, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: lb.x, Y: y}}, Labels: []string{lb.text}})
		if err != nil {
			return fmt.Errorf("change point label: %w", err)
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
	return nil
}

// drawTip draws the tip's line, by runs of nights without a gap, and its
// points with their intervals.
func (d *trendDrawing) drawTip() error {
	p := d.tp.plot
	for _, run := range runsOf(d.kernelDates, d.gapBetween) {
		if len(run) < 2 {
			continue
		}
		var xys plotter.XYs
		for _, i := range run {
			xys = append(xys, d.kernel.XYs[i])
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return fmt.Errorf("tip line: %w", err)
		}
		l.LineStyle = draw.LineStyle{Color: colorA, Width: vg.Points(0.8)}
		p.Add(l)
		d.tipLine = l
	}
	if len(d.kernel.XYs) == 0 {
		return nil
	}
	bars, err := plotter.NewYErrorBars(d.kernel)
	if err != nil {
		return fmt.Errorf("tip intervals: %w", err)
	}
	bars.LineStyle.Color = colorA
	bars.CapWidth = vg.Points(4)
	dots, err := plotter.NewScatter(d.kernel.XYs)
	if err != nil {
		return fmt.Errorf("tip centres: %w", err)
	}
	dots.GlyphStyle = draw.GlyphStyle{Color: colorA, Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}
	p.Add(bars, dots)
	d.tipDots = dots
	return nil
}

// drawExcursions draws a ring around each excursion's point on its line,
// for the eye to tell a night left out of the change points from a step.
func (d *trendDrawing) drawExcursions() error {
	var ringXYs plotter.XYs
	for _, e := range d.v.excursions {
		xys, dates := d.kernel.XYs, d.kernelDates
		if e.Line == history.LineHost {
			xys, dates = d.host.XYs, d.hostDates
		}
		if i := slices.Index(dates, e.Night); e.Metric == d.t.Metric && i >= 0 {
			ringXYs = append(ringXYs, xys[i])
		}
	}
	if len(ringXYs) == 0 {
		return nil
	}
	rings, err := plotter.NewScatter(ringXYs)
	if err != nil {
		return fmt.Errorf("excursions: %w", err)
	}
	rings.GlyphStyle = draw.GlyphStyle{Color: colorExcursion, Radius: vg.Points(6), Shape: draw.RingGlyph{}}
	d.tp.plot.Add(rings)
	d.rings = rings
	return nil
}

// drawGaps draws a cross, named, below the data for each night without
// results.
func (d *trendDrawing) drawGaps() error {
	if len(d.gaps) == 0 {
		return nil
	}
	var xys plotter.XYs
	var names []string
	y := d.lo - 0.1*d.span
	for _, n := range d.gaps {
		xys = append(xys, plotter.XY{X: d.xOf[n.Date], Y: y})
		names = append(names, gapName(n.Status))
	}
	dots, err := plotter.NewScatter(xys)
	if err != nil {
		return fmt.Errorf("failed nights: %w", err)
	}
	dots.GlyphStyle = draw.GlyphStyle{Color: colorFailedNight, Radius: vg.Points(3.5), Shape: draw.CrossGlyph{}}
	labels, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: names})
	if err != nil {
		return fmt.Errorf("failed nights: %w", err)
	}
	for i := range labels.TextStyle {
		s := &labels.TextStyle[i]
		s.Font.Variant = "Sans"
		s.Font.Size = vg.Points(7)
		s.Color = colorFailedNight
		s.XAlign, s.YAlign = draw.XCenter, draw.YTop
	}
	labels.Offset = vg.Point{Y: -vg.Points(5)}
	d.tp.plot.Add(dots, labels)
	d.gapDots = dots
	return nil
}

// addLegends fills the legends: the lines and the excursions on the left;
// on the right one entry per kind of mark (the host line's, and the
// kernel line's by direction; "with its culprit" only where a bisection
// named one) and the nights without results.
func (d *trendDrawing) addLegends() {
	tp := d.tp
	if d.tipDots != nil {
		thumbs := []plot.Thumbnailer{d.tipDots}
		if d.tipLine != nil {
			thumbs = append([]plot.Thumbnailer{d.tipLine}, thumbs...)
		}
		tp.legends[0].add("tip ÷ reference: centre, bar: interval", thumbs...)
	}
	if d.refLine != nil {
		tp.legends[0].add("reference ÷ its first night: centre, band: interval", d.refBand, d.refLine)
	}
	if d.rings != nil {
		tp.legends[0].add("excursion: left out of the change points", d.rings)
	}
	type kind struct {
		host bool
		dir  string
	}
	var kinds []kind
	culprit := map[kind]bool{}
	first := map[kind]*plotter.Line{}
	for _, m := range d.marks {
		k := kind{host: m.cp.Line == history.LineHost}
		if !k.host {
			k.dir = changeDirection(m.cp)
		}
		if first[k] == nil {
			kinds, first[k] = append(kinds, k), m.line
		}
		culprit[k] = culprit[k] || m.cp.Bisect.State == history.BisectFound
	}
	for _, k := range kinds {
		name := "change point of the kernel, " + k.dir
		if k.host {
			name = "change point of the reference (host or harness)"
		}
		if culprit[k] {
			name += ", with its culprit"
		}
		tp.legends[1].add(name, first[k])
	}
	if d.gapDots != nil {
		tp.legends[1].add("night without results", d.gapDots)
	}
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

// pointTitle is what a night's point on a trend plot says when the pointer
// rests on it: "2026-01-21, tip 59b0056cdc4e: 937.2 insn/op, -12.0% vs the
// first night; vs the last tip -12.0% DIFFERENT (better)", and that it is
// an excursion when it is one. y is the point's height, relative to the
// reference when the night has one (withRef), else to the first night.
func (v *seriesView) pointTitle(t view.MetricTrend, pt history.TrendPoint, y float64, withRef bool) string {
	against := "vs the reference"
	if !withRef {
		against = "vs the first night"
	}
	s := fmt.Sprintf("%s, tip %s: %s, %s %s; vs the last tip %s", pt.Night.Date, tipName(pt.Night.Tip), formatEstimate(pt.Row.Tip, t.Unit),
		view.FormatDelta(y), against, formatVerdict(pt.Row.VsPrevious, t.Benchmark, t.Unit))
	for _, e := range v.excursionsOn(pt.Night.Date) {
		if e.Metric == t.Metric && e.Line == history.LineKernel {
			s += "; an excursion, left out of the change points"
		}
	}
	return s
}

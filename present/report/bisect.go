package report

import (
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/lpmbisect/lpmbisect/present/view"
)

func bisectionRowLine(r view.BisectionRow) string {
	return fmt.Sprintf("%s: %s → %s: %s, %d+%d boots", r.Benchmark, view.FormatValue(r.A, r.Unit), view.FormatValue(r.B, r.Unit), r.Comparison, r.BootsA, r.BootsB)
}

// WriteBisectionText writes a bisection report as plain text.
func WriteBisectionText(w io.Writer, r view.Bisection) error {
	return writePrintable(w, func(w io.Writer) error { return writeBisectionText(w, r) })
}

func writeBisectionText(w io.Writer, r view.Bisection) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", r.Culprit)
	fmt.Fprintf(&b, "verdict: %s\n", r.Verdict)
	if len(r.Effect) > 0 || len(r.Drift) > 0 || len(r.Harness) > 0 {
		fmt.Fprintf(&b, "effect, good → bad:\n")
		for _, row := range r.Effect {
			fmt.Fprintf(&b, "  %s\n", bisectionRowLine(row))
		}
		for _, d := range r.Drift {
			fmt.Fprintf(&b, "  warning: control %s moved between the endpoints (harness or host drift)\n", d)
		}
		for _, h := range r.Harness {
			fmt.Fprintf(&b, "  control %s moved with the kernel between the endpoints (its harness cost; instruction counts do not drift)\n", h)
		}
	}
	if len(r.Recheck) > 0 {
		fmt.Fprintf(&b, "re-check, parent → culprit:\n")
		for _, row := range r.Recheck {
			fmt.Fprintf(&b, "  %s\n", bisectionRowLine(row))
		}
	}
	if r.Insight != nil {
		fmt.Fprintf(&b, "parent → culprit: ")
		if err := writeInsightText(&b, r.Insight); err != nil {
			return err
		}
	}
	fmt.Fprintf(&b, "confidence: ≥ %.3f that no step's verdict was wrong (1 − Σ p over %d steps' claims)", r.Confidence, len(r.Steps))
	if r.RecheckP >= 0 {
		fmt.Fprintf(&b, "; culprit against its parent p%s", view.FormatPRelation(r.RecheckP))
	}
	b.WriteString("\n")
	skipped := 0
	fmt.Fprintf(&b, "steps:\n")
	for _, st := range r.Steps {
		if st.Class == "skip" {
			skipped++
		}
		fmt.Fprintf(&b, "  %s\n", st.LogLine)
	}
	fmt.Fprintf(&b, "%d steps (%d skipped), %d kernels measured (distinct images, endpoints included)\n", len(r.Steps), skipped, r.Measured)
	if r.Instructions {
		fmt.Fprintf(&b, "note: %s\n", instructionsExplanation)
	}
	fmt.Fprintf(&b, "state: %s, step log: %s\n", r.StatePath, r.LogPath)
	_, err := io.WriteString(w, b.String())
	return err
}

var bisectionHTML = newPage("bisection", `{{define "body"}}<p class="verdict">{{.Verdict}}</p>
{{with .Effect}}<h2>Effect, good → bad</h2>
<table><tr><th>benchmark</th><th>good</th><th>bad</th><th>change</th><th>verdict</th><th>p</th><th>boots</th></tr>
{{range .}}<tr><td>{{.Benchmark}}</td><td class="num">{{value .A .Unit}}</td><td class="num">{{value .B .Unit}}</td><td class="num">{{delta .DeltaPct}}</td><td>{{.Verdict}}</td><td class="num">{{p .P}}</td><td class="num">{{.BootsA}}+{{.BootsB}}</td></tr>{{end}}
</table>{{end}}
{{with .Recheck}}<h2>Re-check, parent → culprit</h2>
<table><tr><th>benchmark</th><th>parent</th><th>culprit</th><th>change</th><th>verdict</th><th>p</th><th>boots</th></tr>
{{range .}}<tr><td>{{.Benchmark}}</td><td class="num">{{value .A .Unit}}</td><td class="num">{{value .B .Unit}}</td><td class="num">{{delta .DeltaPct}}</td><td>{{.Verdict}}</td><td class="num">{{p .P}}</td><td class="num">{{.BootsA}}+{{.BootsB}}</td></tr>{{end}}
</table>{{end}}
{{with .InsightText}}<h2>Why it changed, parent → culprit</h2>
<pre>{{.}}</pre>{{end}}
{{with .RecheckHTML}}<p>The re-check as a comparison report, with plots: <a href="{{.}}">{{.}}</a>.</p>{{end}}
<p>Confidence: ≥ {{printf "%.3f" .Confidence}} that no step's verdict was wrong (1 − Σ p over the steps' claims).
{{len .Steps}} steps, {{.Measured}} kernels measured.</p>
<h2>Steps</h2>
<table><tr><th>#</th><th>{{if .Images}}kernel{{else}}commit{{end}}</th><th>image</th><th>boots</th><th>verdict</th><th>why</th></tr>
{{range .Steps}}<tr class="{{.Class}}"><td class="num">{{.N}}</td><td>{{.What}}</td><td>{{.Image}}</td><td class="num">{{.Boots}}</td><td>{{.Class}}</td><td>{{.Reason}}</td></tr>
{{end}}</table>
<p>State: <code>{{.StatePath}}</code>; step log: <code>{{.LogPath}}</code>.</p>
{{end}}`, template.FuncMap{
	"value": view.FormatValue,
	"delta": view.FormatDelta,
	"p":     view.FormatP,
})

// WriteBisectionHTML writes a bisection report as a self-contained HTML
// page.
func WriteBisectionHTML(w io.Writer, r view.Bisection) error {
	return writePrintable(w, func(w io.Writer) error { return writeBisectionHTML(w, r) })
}

func writeBisectionHTML(w io.Writer, r view.Bisection) error {
	page := struct {
		view.Bisection
		InsightText string
	}{Bisection: r}
	if r.Insight != nil {
		var b strings.Builder
		if err := writeInsightText(&b, r.Insight); err != nil {
			return err
		}
		page.InsightText = strings.TrimPrefix(b.String(), insightTitle+"\n")
	}
	if err := writePage(w, bisectionHTML, pageDoc{Title: "lpmbisect: " + r.Culprit, Heading: r.Culprit, Class: "bisection", Page: page}); err != nil {
		return fmt.Errorf("report: render bisection HTML: %w", err)
	}
	return nil
}

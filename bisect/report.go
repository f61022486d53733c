package bisect

import (
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"strings"

	"github.com/lpmbisect/lpmbisect/compare"
)

// Report renders a finished bisection for people: the culprit, the effect,
// the re-check, the confidence and every step.
type Report struct {
	State  *State
	Result *Result
	// RecheckHTML, when set, names the page with compare's report of the
	// parent against the culprit (package report), which the HTML links.
	RecheckHTML string
}

// Culprit names what the bisection found, in one line.
func (r Report) Culprit() string {
	res, s := r.Result, r.State
	what := "first bad"
	if s.Reverse {
		what = "first improved"
	}
	switch {
	case res.FirstBad != "" && s.Kind == "images":
		return fmt.Sprintf("%s kernel: #%d %s", what, res.Index+1, res.FirstBad)
	case res.FirstBad != "":
		return fmt.Sprintf("%s commit: %s %s", what, res.FirstBad, res.Subject)
	case len(res.Range) > 0:
		names := make([]string, len(res.Range))
		for i, c := range res.Range {
			names[i] = short(c)
			if s.Kind == "images" {
				names[i] = filepath.Base(c)
			}
		}
		return fmt.Sprintf("no single culprit: skipped steps leave %d candidates: %s", len(res.Range), strings.Join(names, " "))
	}
	return "no result"
}

// Verdict is "confirmed", "suspect: …" or "not re-checked".
func (r Report) Verdict() string {
	rc := r.Result.Recheck
	switch {
	case r.Result.FirstBad == "":
		return "inconclusive"
	case rc == nil:
		return "not re-checked"
	case rc.SameImage:
		return "suspect: " + rc.Note
	case rc.Confirmed:
		return "confirmed by the re-check"
	}
	return fmt.Sprintf("suspect: the re-check did not confirm it (parent %s, culprit %s against the endpoints)", rc.Parent.Class, rc.Culprit.Class)
}

// Confirmed reports whether the culprit was named and confirmed.
func (r Report) Confirmed() bool {
	return r.Result.FirstBad != "" && r.Result.Recheck != nil && r.Result.Recheck.Confirmed
}

func rowLine(r EffectRow) string {
	return fmt.Sprintf("%s: %s → %s: %s, %d+%d boots", r.Benchmark, formatValue(r.A, r.Unit), formatValue(r.B, r.Unit), r.Comparison, r.BootsA, r.BootsB)
}

// WriteText writes the report as plain text.
func (r Report) WriteText(w io.Writer) error {
	s, res := r.State, r.Result
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", r.Culprit())
	fmt.Fprintf(&b, "verdict: %s\n", r.Verdict())
	if s.Effect != nil {
		fmt.Fprintf(&b, "effect, good → bad:\n")
		for _, row := range s.Effect.Rows {
			if !row.Control {
				fmt.Fprintf(&b, "  %s\n", rowLine(row))
			}
		}
		for _, k := range s.Effect.Drift {
			fmt.Fprintf(&b, "  warning: control %s moved between the endpoints (harness or host drift)\n", k)
		}
	}
	if rc := res.Recheck; rc != nil && !rc.SameImage {
		fmt.Fprintf(&b, "re-check, parent → culprit:\n")
		for _, row := range rc.Rows {
			if !row.Control {
				fmt.Fprintf(&b, "  %s\n", rowLine(row))
			}
		}
	}
	fmt.Fprintf(&b, "confidence: ≥ %.3f that no step's verdict was wrong (1 − Σ p over %d steps' claims)", res.Confidence, res.Steps)
	if rc := res.Recheck; rc != nil && len(rc.Rows) > 0 {
		maxP := 0.0
		for _, row := range rc.Rows {
			if isSignal(s.Effect, row.RowKey) {
				maxP = max(maxP, row.PValue())
			}
		}
		fmt.Fprintf(&b, "; culprit against its parent p%s", formatP(maxP))
	}
	b.WriteString("\n")
	skipped := 0
	fmt.Fprintf(&b, "steps:\n")
	for _, st := range s.Steps {
		if st.Verdict.Class == Skip {
			skipped++
		}
		fmt.Fprintf(&b, "  %s\n", FormatStep(st))
	}
	fmt.Fprintf(&b, "%d steps (%d skipped), %d kernels measured (distinct images, endpoints included)\n", res.Steps, skipped, res.Measured)
	if unitInsn(s.Effect) {
		fmt.Fprintf(&b, "note: %s\n", compare.InstructionsExplanation)
	}
	fmt.Fprintf(&b, "state: %s, step log: %s\n", s.Path(), s.LogPath())
	_, err := io.WriteString(w, b.String())
	return err
}

func isSignal(e *Effect, k RowKey) bool {
	if e == nil {
		return false
	}
	for _, s := range e.Signal {
		if s == k {
			return true
		}
	}
	return false
}

func unitInsn(e *Effect) bool {
	if e == nil {
		return false
	}
	for _, r := range e.Rows {
		if r.Unit == compare.UnitInstructions {
			return true
		}
	}
	return false
}

var htmlReport = template.Must(template.New("report").Funcs(template.FuncMap{
	"value": formatValue,
	"delta": compare.FormatDelta,
	"p":     compare.FormatP,
	"short": short,
	"base":  filepath.Base,
	"inc":   func(i int) int { return i + 1 },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>lpmbisect: {{.Culprit}}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2em; max-width: 70em; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.good { background: #e6f4e6; } .bad { background: #fbe3e3; } .skip { background: #eee; }
.verdict { font-weight: bold; }
</style></head><body>
<h1>{{.Culprit}}</h1>
<p class="verdict">{{.Verdict}}</p>
{{with .State.Effect}}<h2>Effect, good → bad</h2>
<table><tr><th>benchmark</th><th>good</th><th>bad</th><th>change</th><th>verdict</th><th>p</th><th>boots</th></tr>
{{range .Rows}}{{if not .Control}}<tr><td>{{.Benchmark}}</td><td class="num">{{value .A .Unit}}</td><td class="num">{{value .B .Unit}}</td><td class="num">{{delta .DeltaPct}}</td><td>{{.Verdict}}</td><td class="num">{{p .PValue}}</td><td class="num">{{.BootsA}}+{{.BootsB}}</td></tr>{{end}}{{end}}
</table>{{end}}
{{with .Result.Recheck}}{{if .Rows}}<h2>Re-check, parent → culprit</h2>
<table><tr><th>benchmark</th><th>parent</th><th>culprit</th><th>change</th><th>verdict</th><th>p</th><th>boots</th></tr>
{{range .Rows}}{{if not .Control}}<tr><td>{{.Benchmark}}</td><td class="num">{{value .A .Unit}}</td><td class="num">{{value .B .Unit}}</td><td class="num">{{delta .DeltaPct}}</td><td>{{.Verdict}}</td><td class="num">{{p .PValue}}</td><td class="num">{{.BootsA}}+{{.BootsB}}</td></tr>{{end}}{{end}}
</table>{{end}}{{end}}
{{with .RecheckHTML}}<p>The re-check as a comparison report, with plots: <a href="{{.}}">{{.}}</a>.</p>{{end}}
<p>Confidence: ≥ {{printf "%.3f" .Result.Confidence}} that no step's verdict was wrong (1 − Σ p over the steps' claims).
{{.Result.Steps}} steps, {{.Result.Measured}} kernels measured.</p>
<h2>Steps</h2>
<table><tr><th>#</th><th>{{if eq .State.Kind "images"}}kernel{{else}}commit{{end}}</th><th>image</th><th>boots</th><th>verdict</th><th>why</th></tr>
{{range .State.Steps}}<tr class="{{.Verdict.Class}}"><td class="num">{{.N}}</td><td>{{if .Commit}}{{short .Commit}} {{.Subject}}{{else}}#{{inc .Index}} {{base .Kernel}}{{end}}</td><td>{{short .Image}}</td><td class="num">{{.Verdict.Boots}}</td><td>{{.Verdict.Class}}</td><td>{{.Verdict.Reason}}</td></tr>
{{end}}</table>
<p>State: <code>{{.State.Path}}</code>; step log: <code>{{.State.LogPath}}</code>.</p>
</body></html>
`))

// WriteHTML writes the report as a self-contained HTML page.
func (r Report) WriteHTML(w io.Writer) error {
	return htmlReport.Execute(w, r)
}

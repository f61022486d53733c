package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/internal/words"
	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/wire"
)

// FormatMail is the series' reply to its cover letter: plain text, 72
// columns, with the headers that thread it (writeSeriesMail).
const FormatMail Format = "mail"

// mailWidth is the width of a mail's lines, as the kernel's lists want.
const mailWidth = 72

// WriteSeries writes a series report in format f: text, markdown, json,
// html or mail.
func WriteSeries(w io.Writer, f Format, s view.Series) error {
	// Subjects, build logs and guest names are untrusted text: every
	// format but JSON (which escapes) shows control characters escaped.
	switch f {
	case FormatText:
		return writePrintable(w, func(w io.Writer) error { return writeSeriesText(w, s) })
	case FormatMarkdown:
		return writePrintable(w, func(w io.Writer) error { return writeSeriesMarkdown(w, s) })
	case FormatJSON:
		return writeSeriesJSON(w, s)
	case FormatHTML:
		return WriteSeriesHTML(w, s)
	case FormatMail:
		return writePrintable(w, func(w io.Writer) error { return writeSeriesMail(w, s) })
	case FormatGitHub:
		return writePrintable(w, func(w io.Writer) error { return writeSeriesGitHub(w, s) })
	}
	return fmt.Errorf("report: unknown format %q (want text, markdown, json, html, mail or github)", f)
}

// seriesOutcomeLine says the series' outcome as compare says its own.
func seriesOutcomeLine(s view.Series) string {
	why := "no patch regresses"
	switch s.Outcome {
	case compare.Regression:
		why = "a patch regresses against its parent"
	case compare.Inconclusive:
		why = "a patch stayed UNKNOWN or was not measured"
	}
	return fmt.Sprintf("%s (--fail-on %v): %s", strings.ToUpper(s.Outcome.String()), s.FailOn, why)
}

// parentCell is a patch's change against its parent in the tables.
func parentCell(p view.SeriesPatch, c view.SeriesCell) string {
	switch p.Status {
	case "same-image":
		return "same image, no boot"
	case "build-failed":
		return "does not build"
	case "boot-failed":
		return "did not boot"
	case "not-applied":
		return "does not apply"
	case "not-reached":
		return "not reached"
	case "":
		return "not measured (interrupted)"
	}
	if c.VsParent == nil {
		return "-"
	}
	s := deltaCell(c.VsParent)
	if c.VsParent.Verdict == compare.Different && c.VsParent.Direction != "changed" {
		s += " " + c.VsParent.Direction
	}
	if !p.Parent {
		s += " (vs " + againstName(p) + ")"
	}
	return s
}

func againstName(p view.SeriesPatch) string {
	if p.AgainstN == 0 {
		return "base"
	}
	return fmt.Sprintf("%d/%d", p.AgainstN, p.Total)
}

func deltaCell(d *view.SeriesDelta) string {
	if d == nil {
		return "-"
	}
	return fmt.Sprintf("%s %s", d.Verdict, view.FormatDelta(d.DeltaPct))
}

// seriesTable writes one benchmark's table in plain text, at most
// mailWidth wide for the usual names; the heading, which names the
// benchmark and its base value (with the unit), folds at width.
func seriesTable(w io.Writer, s view.Series, b view.SeriesBenchmark, width int) {
	fmt.Fprintln(w, fold(fmt.Sprintf("%s, base %s", b.Benchmark, view.FormatValue(b.Base, b.Unit)), width))
	fmt.Fprintf(w, "  %-5s %-12s  %-32s %s\n", "patch", "commit", "vs parent", "vs base")
	for i, p := range s.Patches {
		fmt.Fprintf(w, "  %-5s %-12s  %-32s %s\n", fmt.Sprintf("%d/%d", p.N, p.Total), words.ShortHash(p.Commit), parentCell(p, b.Cells[i]), deltaCell(b.Cells[i].VsBase))
	}
}

// seriesBody is what the text report and the mail share: the patches, the
// tables, the patches that moved with their insight, those not measured
// with their log, the environment and the command.
func seriesBody(w io.Writer, s view.Series, width int) error {
	fmt.Fprintln(w, fold(fmt.Sprintf("%d patches on %s %q", len(s.Patches), words.ShortHash(s.Base), s.BaseSubject), width))
	for _, p := range s.Patches {
		fmt.Fprintln(w, fold(fmt.Sprintf("  %d/%d %-12s %s", p.N, p.Total, words.ShortHash(p.Commit), p.Subject), width))
	}
	if s.Stopped != "" {
		fmt.Fprintf(w, "\n%s\n", wrap(s.Stopped, width, ""))
	}
	for _, b := range s.Benchmarks {
		fmt.Fprintln(w)
		seriesTable(w, s, b, width)
	}
	for _, p := range s.Patches {
		if !p.Moved {
			continue
		}
		against := "its parent"
		if !p.Parent {
			against = againstName(p)
		}
		fmt.Fprintf(w, "\n%s\n", fold(fmt.Sprintf("Patch %d/%d %q moved against %s:", p.N, p.Total, p.Subject, against), width))
		for _, b := range s.Benchmarks {
			if d := b.Cells[p.N-1].VsParent; d != nil && d.Verdict == compare.Different {
				fmt.Fprintf(w, "  %s %s (%s)\n", b.Benchmark, view.FormatDelta(d.DeltaPct), d.Direction)
			}
		}
		if p.Insight != nil {
			var ib strings.Builder
			if err := writeInsightText(&ib, p.Insight); err != nil {
				return err
			}
			for _, l := range strings.Split(strings.TrimRight(ib.String(), "\n"), "\n") {
				fmt.Fprintln(w, fold("  "+l, width))
			}
		}
	}
	for _, p := range s.Patches {
		if p.Status == "measured" || p.Status == "same-image" || p.Status == "not-reached" || p.Status == "" {
			continue
		}
		fmt.Fprintf(w, "\n%s\n", fold(fmt.Sprintf("Patch %d/%d %q %s:", p.N, p.Total, p.Subject, p.Detail), width))
		for _, l := range p.LogTail {
			fmt.Fprintln(w, fold("  "+l, width))
		}
	}
	e := s.Environment
	fmt.Fprintf(w, "\nEnvironment:\n")
	for _, kv := range [][2]string{
		{"base", e.Base}, {"kernel config", e.Kconfig}, {"compiler", e.Compiler}, {"QEMU", e.QEMU},
		{"CPU model", e.CPUModel}, {"accelerator", e.Accel}, {"boots", bootsLine(e.Boots)}, {"lpmbisect", e.Version},
	} {
		if kv[1] != "" {
			fmt.Fprintln(w, fold(fmt.Sprintf("  %-14s%s", kv[0], kv[1]), width))
		}
	}
	if wire.Accel(e.Accel).CountsInstructions() {
		fmt.Fprintln(w, wrap("Under icount the guest clock counts instructions: the values are instructions per operation, deterministic, not time.", width, "  "))
	}
	fmt.Fprintf(w, "\nReproduce:\n%s\n", commandLines(s.Command, width))
	return nil
}

func bootsLine(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d per kernel at most", n)
}

// writeSeriesText writes the series report for a terminal.
func writeSeriesText(w io.Writer, s view.Series) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "Series %s\n%s\n\n", s.Title, seriesOutcomeLine(s))
	if err := seriesBody(bw, s, 100); err != nil {
		return err
	}
	if s.State != "" {
		fmt.Fprintf(bw, "\nState (a rerun resumes from it): %s\n", s.State)
	}
	return bw.Flush()
}

// writeSeriesMail writes the series report as a plain-text reply to its
// cover letter (Subject: Re:, In-Reply-To and References from the mbox),
// 72 columns, for the list: a person or nightly's notify hook sends it.
func writeSeriesMail(w io.Writer, s view.Series) error {
	bw := bufio.NewWriter(w)
	if s.Reply != nil {
		fmt.Fprintf(bw, "Subject: %s\n", s.Reply.Subject)
		if s.Reply.InReplyTo != "" {
			fmt.Fprintf(bw, "In-Reply-To: %s\n", s.Reply.InReplyTo)
		}
		if s.Reply.References != "" {
			fmt.Fprintf(bw, "References: %s\n", s.Reply.References)
		}
	} else {
		fmt.Fprintf(bw, "Subject: lpmbisect: series %s\n", s.Title)
	}
	fmt.Fprintf(bw, "\n%s\n\n", wrap("lpmbisect built and booted every patch of this series and measured the BPF map benchmarks below against each patch's parent and against the base. "+seriesOutcomeLine(s)+".", mailWidth, ""))
	if err := seriesBody(bw, s, mailWidth); err != nil {
		return err
	}
	fmt.Fprintf(bw, "\n-- \nlpmbisect %s\n", s.Environment.Version)
	return bw.Flush()
}

// writeSeriesMarkdown writes the series report as GitHub-flavoured
// Markdown, for a CI step summary: a table per benchmark.
func writeSeriesMarkdown(w io.Writer, s view.Series) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "## Series %s\n\n**%s**\n\n", mdEscape(s.Title), mdEscape(seriesOutcomeLine(s)))
	fmt.Fprintf(bw, "Base `%s` %s\n\n", words.ShortHash(s.Base), mdEscape(s.BaseSubject))
	if s.Stopped != "" {
		fmt.Fprintf(bw, "> %s\n\n", mdEscape(s.Stopped))
	}
	for _, b := range s.Benchmarks {
		fmt.Fprintf(bw, "### `%s` (%s), base %s\n\n", b.Benchmark, b.Unit, view.FormatValue(b.Base, b.Unit))
		fmt.Fprintf(bw, "| Patch | Commit | Subject | vs parent | vs base |\n|---|---|---|---|---|\n")
		for i, p := range s.Patches {
			fmt.Fprintf(bw, "| %d/%d | `%s` | %s | %s | %s |\n", p.N, p.Total, words.ShortHash(p.Commit), mdEscape(p.Subject), parentCell(p, b.Cells[i]), deltaCell(b.Cells[i].VsBase))
		}
		fmt.Fprintln(bw)
	}
	for _, p := range s.Patches {
		if p.Moved && p.Insight != nil {
			fmt.Fprintf(bw, "<details><summary>%d/%d %s: why it changed</summary>\n\n", p.N, p.Total, mdEscape(p.Subject))
			if err := writeInsightMarkdown(bw, p.Insight); err != nil {
				return err
			}
			fmt.Fprintf(bw, "\n</details>\n\n")
		}
		if len(p.LogTail) > 0 {
			fmt.Fprintf(bw, "%d/%d %s: %s\n\n```\n%s\n```\n\n", p.N, p.Total, mdEscape(p.Subject), p.Detail, strings.Join(p.LogTail, "\n"))
		}
	}
	e := s.Environment
	fmt.Fprintf(bw, "Base `%s`, config `%s`, %s, QEMU %s, CPU model %s, %s, %d boots per kernel per look, lpmbisect %s\n\n",
		e.Base, e.Kconfig, e.Compiler, e.QEMU, e.CPUModel, e.Accel, e.Boots, e.Version)
	fmt.Fprintf(bw, "```\n%s\n```\n", s.Command)
	return bw.Flush()
}

// writeSeriesJSON writes the series as JSON (view.Series).
func writeSeriesJSON(w io.Writer, s view.Series) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(newSeriesDoc(s))
}

// seriesDoc is writeSeriesJSON's document; Insight is the series record's
// addition (WriteSeriesRecord).
type seriesDoc struct {
	view.Series
	Outcome string `json:"outcome"`
	FailOn  string `json:"fail_on"`
	// Insight is each moved patch's insight block, by patch number: what
	// the text and HTML formats show under "why it changed".
	Insight map[int]*insight.Diff `json:"insight,omitempty"`
}

func newSeriesDoc(s view.Series) seriesDoc {
	return seriesDoc{Series: s, Outcome: s.Outcome.String(), FailOn: s.FailOn.String()}
}

// WriteSeriesRecord writes what the history keeps of a series run
// (history.PatchSeriesRun.Document): writeSeriesJSON's document with the
// insight block of each patch that moved (compact: package insight's
// Diff.Compact), from which ReadSeriesRecord gives back the view every
// format renders.
func WriteSeriesRecord(w io.Writer, s view.Series) error {
	doc := newSeriesDoc(s)
	for _, p := range s.Patches {
		if p.Insight != nil {
			if doc.Insight == nil {
				doc.Insight = map[int]*insight.Diff{}
			}
			doc.Insight[p.N] = p.Insight.Compact()
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// ReadSeriesRecord reads back a series written by WriteSeriesRecord,
// within insight.MaxDiffFileBytes.
func ReadSeriesRecord(r io.Reader) (view.Series, error) {
	lr := &io.LimitedReader{R: r, N: insight.MaxDiffFileBytes + 1}
	var doc seriesDoc
	if err := json.NewDecoder(lr).Decode(&doc); err != nil {
		if lr.N <= 0 {
			return view.Series{}, fmt.Errorf("report: read series record: %w: more than %d bytes", insight.ErrTooLarge, insight.MaxDiffFileBytes)
		}
		return view.Series{}, fmt.Errorf("report: read series record: %w", err)
	}
	s := doc.Series
	var err error
	if s.FailOn, err = compare.ParseFailOn(doc.FailOn); err != nil {
		return s, fmt.Errorf("report: read series record: %w", err)
	}
	known := false
	for _, o := range []compare.Outcome{compare.NoRegression, compare.Regression, compare.Inconclusive} {
		if o.String() == doc.Outcome {
			s.Outcome, known = o, true
		}
	}
	if !known {
		return s, fmt.Errorf("report: read series record: outcome %q is none of compare's", doc.Outcome)
	}
	for i := range s.Patches {
		s.Patches[i].Insight = doc.Insight[s.Patches[i].N]
	}
	return s, nil
}

var seriesHTML = newPage("series", `{{define "body"}}{{if .Served}}`+servedNav+`{{end}}<p class="outcome {{.Class}}">{{.Outcome}}</p>
<p>Base <code>{{short .Base}}</code> {{.BaseSubject}}</p>
{{if .Stopped}}<p class="warning">{{.Stopped}}</p>{{end}}
{{range .Benchmarks}}<h2><code>{{.Benchmark}}</code> ({{.Unit}}), base {{value .Base .Unit}}</h2>
<div class="scroll"><table><tr><th>Patch</th><th>Commit</th><th>Subject</th><th>vs parent</th><th>vs base</th></tr>
{{range .Rows}}<tr><td>{{.N}}</td><td><code>{{.Commit}}</code></td><td>{{.Subject}}</td><td class="{{.ParentClass}}">{{.Parent}}</td><td>{{.Base}}</td></tr>
{{end}}</table></div>
{{end}}{{range .Notes}}<h2>{{.Title}}</h2><pre>{{.Text}}</pre>
{{end}}<h2>Reproduce</h2><pre>{{.Command}}</pre>
{{end}}`, template.FuncMap{"short": words.ShortHash, "value": view.FormatValue})

// WriteSeriesHTML writes the series as a self-contained HTML page.
func WriteSeriesHTML(w io.Writer, s view.Series) error {
	return writePrintable(w, func(w io.Writer) error { return writeSeriesHTML(w, s, false) })
}

// WriteServedPatchSeries writes a stored patch-series run's served page:
// WriteSeriesHTML's, under the links of the served pages.
func WriteServedPatchSeries(w io.Writer, s view.Series) error {
	return writePrintable(w, func(w io.Writer) error { return writeSeriesHTML(w, s, true) })
}

func writeSeriesHTML(w io.Writer, s view.Series, served bool) error {
	type row struct{ N, Commit, Subject, Parent, ParentClass, Base string }
	type bench struct {
		view.SeriesBenchmark
		Rows []row
	}
	type note struct{ Title, Text string }
	page := struct {
		view.Series
		Class, Outcome string
		Benchmarks     []bench
		Notes          []note
		Served         bool
	}{Series: s, Outcome: seriesOutcomeLine(s), Class: outcomeClass(s.Outcome), Served: served}
	for _, b := range s.Benchmarks {
		pb := bench{SeriesBenchmark: b}
		for i, p := range s.Patches {
			class := ""
			if d := b.Cells[i].VsParent; d != nil {
				class = strings.ToLower(d.Verdict.String())
			}
			pb.Rows = append(pb.Rows, row{fmt.Sprintf("%d/%d", p.N, p.Total), words.ShortHash(p.Commit), p.Subject, parentCell(p, b.Cells[i]), class, deltaCell(b.Cells[i].VsBase)})
		}
		page.Benchmarks = append(page.Benchmarks, pb)
	}
	for _, p := range s.Patches {
		if p.Moved && p.Insight != nil {
			var ib strings.Builder
			if err := writeInsightText(&ib, p.Insight); err != nil {
				return err
			}
			page.Notes = append(page.Notes, note{fmt.Sprintf("%d/%d %s: why it changed", p.N, p.Total, p.Subject), strings.TrimPrefix(ib.String(), insightTitle+"\n")})
		}
		if len(p.LogTail) > 0 {
			page.Notes = append(page.Notes, note{fmt.Sprintf("%d/%d %s: %s", p.N, p.Total, p.Subject, p.Detail), strings.Join(p.LogTail, "\n")})
		}
	}
	if err := writePage(w, seriesHTML, pageDoc{Title: "lpmbisect series " + s.Title, Heading: "Series " + s.Title, Class: "bisection", Page: page}); err != nil {
		return fmt.Errorf("report: render series HTML: %w", err)
	}
	return nil
}

// fold breaks a line longer than width at spaces, continuing with four
// more spaces of indent; a width of 0 or less leaves it.
func fold(line string, width int) string {
	if width <= 0 || len([]rune(line)) <= width {
		return line
	}
	indent := len(line) - len(strings.TrimLeft(line, " "))
	rest := strings.Repeat(" ", indent+4)
	return strings.Repeat(" ", indent) + strings.TrimPrefix(wrap(line, width, rest), rest)
}

// commandLines writes a command line in lines of at most width (the
// words permitting), continued with backslashes as a shell reads them.
func commandLines(cmd string, width int) string {
	if width <= 0 {
		width = 100
	}
	var lines []string
	cur := " "
	quoted := false // inside a single-quoted word, where a backslash is literal
	for _, word := range strings.Split(cmd, " ") {
		if !quoted && len(cur)+1+len(word) > width-2 && strings.TrimSpace(cur) != "" {
			lines = append(lines, cur+" \\")
			cur = "     "
		}
		cur += " " + word
		quoted = quoted != (strings.Count(word, "'")%2 == 1)
	}
	lines = append(lines, cur)
	return strings.Join(lines, "\n")
}

package report

import (
	"bytes"
	"html/template"
	"io"
)

// pageSkeleton is what every HTML page of the package shares (the
// comparison, the history, the bisection): one self-contained document (no
// scripts, no style sheets or fonts from elsewhere, plots inlined as SVG),
// so that a page can be attached to a bug, archived by CI or opened from
// disk years later, with one style sheet. A page defines its "body"
// (newPage); writePage fills in its title, heading and class.
const pageSkeleton = `{{define "page"}}<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
` + styleSheet + `</style>
</head>
<body class="{{.Class}}">
<h1>{{.Heading}}</h1>
{{template "body" .Page}}</body>
</html>
{{end}}`

// styleSheet is the style of every page: what they share first, then what
// one page's body class changes, then each page's own elements.
const styleSheet = `body { font-family: system-ui, -apple-system, "Segoe UI", "Liberation Sans", sans-serif; margin: 2em auto; max-width: 70em; padding: 0 1em; color: #222; }
h1 { font-size: 1.4em; }
h2 { font-size: 1.15em; margin-top: 2em; }
h3 { font-size: 1.05em; margin-top: 1.5em; }
table { border-collapse: collapse; font-size: .9em; }
th, td { padding: .3em .6em; border-bottom: 1px solid #ddd; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.bench { font-family: ui-monospace, "Liberation Mono", monospace; overflow-wrap: anywhere; }
.scroll { overflow-x: auto; }
.different { color: #d93025; font-weight: 700; }
.same { color: #1e8e3e; font-weight: 700; }
.unknown { color: #b06000; }
figure { margin: 1.5em 0; }
figcaption { font-family: ui-monospace, "Liberation Mono", monospace; font-size: .9em; }
svg.plot { width: 100%; max-width: 48em; height: auto; border: 1px solid #eee; }
body.history { max-width: 84em; }
body.history h2 { font-size: 1.25em; border-bottom: 1px solid #ddd; }
body.history table { font-size: .85em; }
body.history th, body.history td { padding: .25em .6em; }
body.history td.bench { white-space: nowrap; }
body.history figcaption { font-size: .85em; }
body.history svg.plot { max-width: 56em; }
body.bisection table { margin: 1em 0; }
.outcome { padding: .6em 1em; border-radius: 4px; font-weight: 600; }
.outcome.good { background: #e6f4ea; border-left: 6px solid #1e8e3e; }
.outcome.bad { background: #fce8e6; border-left: 6px solid #d93025; }
.outcome.unsure { background: #fef7e0; border-left: 6px solid #f9ab00; }
ul.headlines li { font-family: ui-monospace, "Liberation Mono", monospace; margin: .2em 0; }
.warning { background: #fff4e5; border-left: 4px solid #f9ab00; padding: .5em 1em; }
.control { color: #666; font-size: .85em; }
dl.run { display: grid; grid-template-columns: max-content auto; gap: .2em 1em; }
dl.run dt { font-weight: 600; }
dl.run dd { margin: 0; overflow-wrap: anywhere; }
.source { color: #555; overflow-wrap: anywhere; }
ul.changes { list-style: none; padding: 0; }
li.change { margin: .5em 0; padding: .4em .8em; border-left: 6px solid #999; background: #f6f6f6; }
li.change.worse { border-color: #d93025; background: #fce8e6; }
li.change.better { border-color: #1e8e3e; background: #e6f4ea; }
li.change.host { border-color: #d65f0e; background: #fef7e0; }
li.change.withdrawn { color: #777; text-decoration: line-through; }
li.change .headline { font-family: ui-monospace, "Liberation Mono", monospace; font-weight: 600; }
li.change .detail { font-size: .9em; color: #444; }
td.tip { font-family: ui-monospace, "Liberation Mono", monospace; }
td.tip small { font-family: system-ui, -apple-system, "Segoe UI", "Liberation Sans", sans-serif; }
td.date, td.status { white-space: nowrap; }
td.verdict { min-width: 8em; }
tr.night td { border-top: 2px solid #bbb; }
tr.changed td { background: #f1f3f4; }
a.mark { font-weight: 600; white-space: nowrap; }
a.mark.worse { color: #d93025; }
a.mark.better { color: #1e8e3e; }
form.signin { background: #f1f3f4; padding: .4em .8em; }
p.around, p.paging { font-weight: 600; }
tr.failed td.status { color: #d93025; font-weight: 700; }
td.note { color: #555; font-style: italic; }
p.verdict { font-weight: 700; }
tr.good { background: #e6f4e6; }
tr.bad { background: #fbe3e3; }
tr.skip { background: #eee; }
`

// pageDoc is what the skeleton renders: the page's title, its heading, the
// class of its body in the style sheet ("compare", "history",
// "bisection") and the data of its body.
type pageDoc struct {
	Title, Heading, Class string
	Page                  any
}

// newPage parses a page, the template "body" in text, into the skeleton,
// with funcs for the body.
func newPage(name, text string, funcs template.FuncMap) *template.Template {
	return template.Must(template.Must(template.New(name).Funcs(funcs).Parse(pageSkeleton)).Parse(text))
}

// writePage renders the page t of doc to w, whole or not at all.
func writePage(w io.Writer, t *template.Template, doc pageDoc) error {
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "page", doc); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

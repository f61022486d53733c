package report

import (
	"bytes"
	"html/template"
	"io"
)

// pageSkeleton is what every HTML page of the package shares: one
// self-contained document (no scripts, no style sheets or fonts from
// elsewhere, plots inlined as SVG), so that a page can be attached to a
// bug, archived by CI or opened from disk years later. A page defines its
// "style" and its "body" (newPage); writePage fills in its title and
// heading.
const pageSkeleton = `{{define "page"}}<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
{{template "style"}}</style>
</head>
<body>
<h1>{{.Heading}}</h1>
{{template "body" .Page}}</body>
</html>
{{end}}`

// pageDoc is what the skeleton renders: the page's title, its heading and
// the data of its body.
type pageDoc struct {
	Title, Heading string
	Page           any
}

// newPage parses a page, the templates "style" and "body" in text, into
// the skeleton, with funcs for the body.
func newPage(name, text string, funcs template.FuncMap) *template.Template {
	return template.Must(template.Must(template.New(name).Funcs(funcs).Parse(pageSkeleton)).Parse(text))
}

// writePage renders the page t with its title, heading and body's data to
// w, whole or not at all.
func writePage(w io.Writer, t *template.Template, title, heading string, data any) error {
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "page", pageDoc{Title: title, Heading: heading, Page: data}); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

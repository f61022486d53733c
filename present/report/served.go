package report

import (
	"cmp"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/internal/words"
	"github.com/lpmbisect/lpmbisect/present/view"
)

// The pages lpmbisect serve renders (package serve handles the requests,
// the token and the sessions): the history page's parts (change points,
// trend plots, excursions, nights) with links between the pages both ways
// (a change point to its nights, its plot and its card; a night to its
// change points and to the nights before and after it; a plot's point to
// its night), a sign-in form where a session is not signed in, and a
// triage form beside every live change point where it is. Every string is
// escaped by html/template and made printable, as on the history page.

// The paths of the served pages; package serve routes them.
const (
	AlertsPath      = "/alerts"
	BisectionsPath  = "/bisections"
	PatchSeriesPath = "/patch-series"
	TriagePath      = "/triage"
	// SessionPath is where a page's sign-in form posts the token, once a
	// session.
	SessionPath = "/session"
)

// PatchSeriesRunPath is the path of a stored patch-series run's page.
func PatchSeriesRunPath(id int64) string { return fmt.Sprintf("%s/%d", PatchSeriesPath, id) }

// servedNav heads every served page: the links between them.
const servedNav = `<nav class="served"><a href="/">series</a> · <a href="` + AlertsPath + `">alerts</a> · <a href="` + BisectionsPath + `">bisections</a> · <a href="` + PatchSeriesPath + `">patch series</a> · <a href="?format=json">JSON</a></nav>`

// SeriesPath is the path of a series' page.
func SeriesPath(series string) string { return "/series/" + url.PathEscape(series) }

// NightPath is the path of a night's page.
func NightPath(series, date string) string {
	return SeriesPath(series) + "/nights/" + url.PathEscape(date)
}

// ResultsPath is the path of the raw benchfmt results of a night's boots of
// one role (tip, reference, …), or of all of them (NightResults): a file
// plain benchstat reads.
func ResultsPath(series, date string, role history.Role) string {
	return NightPath(series, date) + "/results/" + url.PathEscape(string(role)) + ".txt"
}

// NightResults names the results file of every boot of a night.
const NightResults history.Role = "night"

// TriageForm is what a page's forms carry: the session's CSRF token and
// the page to come back to; SignedIn says the session was signed in with
// the server's token (the page shows triage forms; else a sign-in form),
// as Who, a placeholder the server fills per session. A nil *TriageForm
// renders no forms (a server without a token file takes no changes).
type TriageForm struct {
	CSRF, Return, Who string
	SignedIn          bool
}

// NightsAround names the nights before and after a night's, for its
// page's links ("" at either end).
type NightsAround struct{ Before, After string }

// servedChange is a change point on a served page: the history page's card,
// its page on the series (CardURL), who triaged it last, and its form.
type servedChange struct {
	historyChange
	Series, SeriesURL, CardURL string
	Action                     string // its current state, selected in its form
	Provisional                bool
	LastTriage                 string
}

type servedPage struct {
	Form    *TriageForm
	Actions []history.TriageAction
	Series  []servedSeries
	Night   *servedNight
	Empty   string // what an empty page says
	// PatchSeries lists the stored patch-series runs (their page);
	// RunsPage says this is it.
	PatchSeries []servedPatchSeries
	RunsPage    bool
}

type servedPatchSeries struct {
	URL, Recorded, Title, Range, Outcome, Host, Command string
	ID                                                  int64
	Patches                                             int
}

type servedSeries struct {
	historySeriesPage
	URL, Anchor, AlertsURL   string
	Kind                     string
	Latest                   historyNight
	NightCount, Open, Bisect int
	Changes                  []servedChange // replaces historySeriesPage.Changes
	Index                    bool           // the front page's line of the series
	Triage                   []servedTriage
	// Paging of the table of nights: which nights it shows, newest first,
	// and the pages of newer and older ones ("" at either end).
	Paging             string
	NewerURL, OlderURL string
}

type servedTriage struct {
	At, Who, Action, Change, ChangeURL, Comment string
}

type servedNight struct {
	Date, Status, Reason, Benchstat string
	// BeforeURL and AfterURL open the nights before and after it.
	Before, BeforeURL, After, AfterURL string
	Run                                [][2]string
	Results                            []servedResults
	// InsightAgainst says what the insight block compares tonight's tip
	// with.
	InsightAgainst string
	insightBlock
}

type servedResults struct {
	Role, URL string
	Boots     int
	Outcomes  string
}

// seriesAnchor is the id of a series' part of the alerts and bisections
// pages.
func seriesAnchor(name string) string { return "series-" + name }

// newServedSeries is a series as the served pages show it; without plots
// its trends are not drawn (the front page, a night's page).
func newServedSeries(hs view.HistorySeries, plots bool) (servedSeries, error) {
	name := hs.Series.Name
	sp, err := newHistorySeriesPage(hs, func(date string) string { return NightPath(name, date) }, plots)
	if err != nil {
		return servedSeries{}, err
	}
	ss := servedSeries{historySeriesPage: sp, URL: SeriesPath(name), Anchor: seriesAnchor(name), AlertsURL: AlertsPath + "#" + url.PathEscape(seriesAnchor(name)),
		Kind: string(hs.Series.Kind), NightCount: len(sp.Nights)}
	if n := len(sp.Nights); n > 0 {
		ss.Latest = sp.Nights[n-1]
	}
	slices.Reverse(ss.historySeriesPage.Nights) // newest first
	byID := map[int64]history.ChangePoint{}
	for _, cp := range hs.ChangePoints {
		byID[cp.ID] = cp
		if cp.Open() {
			ss.Open++
		}
		if cp.Bisect.State != history.BisectNone {
			ss.Bisect++
		}
	}
	last := history.LastTriage(hs.Triage)
	for _, c := range sp.Changes {
		cp := byID[c.ID]
		sc := servedChange{historyChange: c, Series: name, SeriesURL: ss.URL, CardURL: ss.URL + "#cp" + strconv.FormatInt(c.ID, 10),
			Action: string(cp.Status), Provisional: cp.Provisional}
		if c.PlotURL != "" {
			sc.PlotURL = ss.URL + c.PlotURL // the plot is on the series' page
		}
		if t, ok := last[c.ID]; ok {
			sc.LastTriage = fmt.Sprintf("%s by %s on %s", t.Action, t.Who, t.At.UTC().Format("2006-01-02 15:04 MST"))
			if t.Comment != "" {
				sc.LastTriage += ": " + t.Comment
			}
		}
		ss.Changes = append(ss.Changes, sc)
	}
	for i := len(hs.Triage) - 1; i >= 0; i-- { // newest first
		t := hs.Triage[i]
		ss.Triage = append(ss.Triage, servedTriage{At: t.At.UTC().Format("2006-01-02 15:04:05 MST"), Who: t.Who,
			Action: fmt.Sprintf("%s (%s → %s)", t.Action, t.StatusBefore, t.StatusAfter), Change: fmt.Sprintf("#%d", t.ChangePointID),
			ChangeURL: ss.URL + "#cp" + strconv.FormatInt(t.ChangePointID, 10), Comment: t.Comment})
	}
	return ss, nil
}

func writeServed(w io.Writer, title string, p servedPage) error {
	p.Actions = history.TriageActions()
	return writePrintable(w, func(w io.Writer) error {
		if err := writePage(w, servedTemplate, pageDoc{Title: title, Heading: title, Class: "history served", Page: p}); err != nil {
			return fmt.Errorf("report: render %s: %w", title, err)
		}
		return nil
	})
}

// WriteServedIndex writes the served front page: every series with its
// latest night, its counts of open change points and bisections (linked to
// the alerts and bisections pages) and its open change points, each with
// the range of its step and its nights linked.
func WriteServedIndex(w io.Writer, h view.History, form *TriageForm) error {
	p := servedPage{Form: form}
	for _, hs := range h.Series {
		ss, err := newServedSeries(hs, false)
		if err != nil {
			return err
		}
		ss.Excursions, ss.historySeriesPage.Nights, ss.Triage = nil, nil, nil
		ss.Changes = slices.DeleteFunc(ss.Changes, func(c servedChange) bool { return c.Action != string(history.ChangeOpen) })
		ss.Index = true
		p.Series = append(p.Series, ss)
	}
	p.Empty = "The history holds no series yet: lpmbisect nightly or lpmbisect history import adds them."
	return writeServed(w, "lpmbisect: series", p)
}

// WriteServedSeries writes a series' page: its change points with their
// triage forms (none when form is nil), excursions, trend plots of every
// night, the nights of the page nights (view.HistorySeries.NightsPage:
// newest first, with links to the newer and older pages) and the audit log
// of its triage.
func WriteServedSeries(w io.Writer, hs view.HistorySeries, nights view.NightsPage, form *TriageForm) error {
	ss, err := newServedSeries(hs, true)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, d := range nights.Dates {
		keep[d] = true
	}
	ss.historySeriesPage.Nights = slices.DeleteFunc(ss.historySeriesPage.Nights, func(n historyNight) bool { return !keep[n.Date] })
	if nights.Pages > 1 {
		lo := (nights.Page - 1) * nights.PerPage
		ss.Paging = fmt.Sprintf("nights %d–%d of %d, newest first (page %d of %d)", lo+1, lo+len(nights.Dates), nights.Nights, nights.Page, nights.Pages)
		page := func(n int) string { return fmt.Sprintf("%s?page=%d&per_page=%d#nights", ss.URL, n, nights.PerPage) }
		if nights.Page > 1 {
			ss.NewerURL = page(nights.Page - 1)
		}
		if nights.Page < nights.Pages {
			ss.OlderURL = page(nights.Page + 1)
		}
	}
	return writeServed(w, "lpmbisect: "+hs.Series.Name, servedPage{Form: form, Series: []servedSeries{ss}})
}

// WriteServedChanges writes a page of change points (view.History's
// ChangesOnly: the alerts page, the bisections), each with its triage form,
// under title; empty is what it says when there are none.
func WriteServedChanges(w io.Writer, title, empty string, h view.History, form *TriageForm) error {
	p := servedPage{Form: form, Empty: empty}
	for _, hs := range h.Series {
		ss, err := newServedSeries(hs, true)
		if err != nil {
			return err
		}
		ss.Summary = "" // of the change points alone: no nights to count
		p.Series = append(p.Series, ss)
	}
	return writeServed(w, title, p)
}

// WriteServedNight writes a night's page: links to the nights before and
// after it (around), its kernels and measuring environment, its rows with
// their verdicts, the change points whose step lies next to it, the raw
// results of its boots for download, the benchstat command that reads
// them, and the insight block stored with the night (hs.Insight: why it
// changed, the profiles), as compare's page shows it. hs is the series at
// that night (view.HistorySeries.AtNight), boots the night's boots.
func WriteServedNight(w io.Writer, hs view.HistorySeries, n history.Night, boots []history.Boot, around NightsAround, form *TriageForm) error {
	ss, err := newServedSeries(hs, false)
	if err != nil {
		return err
	}
	ss.Excursions = nil
	sn := &servedNight{Date: n.Date, Status: string(n.Status), Reason: n.Reason, Before: around.Before, After: around.After}
	if around.Before != "" {
		sn.BeforeURL = NightPath(hs.Series.Name, around.Before)
	}
	if around.After != "" {
		sn.AfterURL = NightPath(hs.Series.Name, around.After)
	}
	add := func(k, v string) {
		if v != "" {
			sn.Run = append(sn.Run, [2]string{k, v})
		}
	}
	add("tip", strings.TrimSpace(n.Tip.Commit+" "+n.Tip.Subject))
	add("tip image", n.Tip.ImageSHA256)
	add("tip release", n.Tip.Release)
	add("tip compiler", n.Tip.Compiler)
	add("reference", n.Reference.Release)
	add("reference image", n.Reference.ImageSHA256)
	add("accelerator", n.Accel)
	add("QEMU", n.QEMUVersion)
	add("CPU model", n.CPUModel)
	add("host", n.Host)
	add("lpmbisect", n.ToolVersion)
	if !n.Started.IsZero() {
		add("started", n.Started.UTC().Format(time.RFC3339))
	}
	add("note", n.Note)
	byRole := map[history.Role][]history.Boot{}
	var roles []history.Role
	for _, b := range boots {
		if _, ok := byRole[b.Role]; !ok {
			roles = append(roles, b.Role)
		}
		byRole[b.Role] = append(byRole[b.Role], b)
	}
	slices.SortFunc(roles, func(a, b history.Role) int { return cmp.Compare(a, b) })
	for _, r := range roles {
		outcomes := map[string]int{}
		for _, b := range byRole[r] {
			outcomes[b.Outcome]++
		}
		var o []string
		for k, c := range outcomes {
			o = append(o, fmt.Sprintf("%d %s", c, k))
		}
		slices.Sort(o)
		sn.Results = append(sn.Results, servedResults{Role: string(r), URL: ResultsPath(hs.Series.Name, n.Date, r), Boots: len(byRole[r]), Outcomes: strings.Join(o, ", ")})
	}
	if len(boots) > 0 {
		sn.Results = append(sn.Results, servedResults{Role: string(NightResults), URL: ResultsPath(hs.Series.Name, n.Date, NightResults), Boots: len(boots), Outcomes: "every boot of the night"})
		sn.Benchstat = benchstatCommand(n.Tip.Release == n.Reference.Release, false, n.Accel, string(NightResults)+".txt")
	}
	if in, ok := hs.Insight[n.Date]; ok {
		if sn.insightBlock, err = newInsightBlock(in.Diff); err != nil {
			return err
		}
		sn.InsightAgainst = in.Against
	}
	title := fmt.Sprintf("lpmbisect: %s, night %s", hs.Series.Name, n.Date)
	return writeServed(w, title, servedPage{Form: form, Series: []servedSeries{ss}, Night: sn})
}

// WriteServedPatchSeriesList writes the page of the patch-series runs the
// history holds (lpmbisect series with a history), newest first, each
// linked to its report.
func WriteServedPatchSeriesList(w io.Writer, runs []history.PatchSeriesRun) error {
	p := servedPage{RunsPage: true, Empty: "No patch-series runs in the history yet: lpmbisect series records its runs when the configuration names a [nightly] db."}
	for _, r := range runs {
		rng := words.ShortHash(r.Base)
		if r.Tip != "" {
			rng += ".." + words.ShortHash(r.Tip)
		}
		p.PatchSeries = append(p.PatchSeries, servedPatchSeries{URL: PatchSeriesRunPath(r.ID), ID: r.ID, Recorded: r.Recorded.UTC().Format("2006-01-02 15:04 MST"),
			Title: r.Title, Range: rng, Patches: r.Patches, Outcome: r.Outcome, Host: r.Host, Command: r.Command})
	}
	return writeServed(w, "lpmbisect: patch series", p)
}

// PatchSeriesDoc is the JSON of lpmbisect serve's patch-series page, version 1:
// each run without its report (PatchSeriesRunPath serves it).
type PatchSeriesDoc struct {
	Version int                 `json:"version"`
	Runs    []PatchSeriesRunDoc `json:"patch_series"`
}

// PatchSeriesRunDoc is one stored run of lpmbisect series.
type PatchSeriesRunDoc struct {
	ID       int64     `json:"id"`
	URL      string    `json:"url"`
	Recorded time.Time `json:"recorded"`
	Repo     string    `json:"repo"`
	Base     string    `json:"base"`
	Tip      string    `json:"tip,omitempty"`
	Title    string    `json:"title"`
	Patches  int       `json:"patches"`
	Outcome  string    `json:"outcome"`
	Command  string    `json:"command"`
	Host     string    `json:"host"`
}

// NewPatchSeriesDocument converts the stored runs for JSON.
func NewPatchSeriesDocument(runs []history.PatchSeriesRun) PatchSeriesDoc {
	doc := PatchSeriesDoc{Version: 1, Runs: []PatchSeriesRunDoc{}}
	for _, r := range runs {
		doc.Runs = append(doc.Runs, PatchSeriesRunDoc{ID: r.ID, URL: PatchSeriesRunPath(r.ID), Recorded: r.Recorded, Repo: r.Repo,
			Base: r.Base, Tip: r.Tip, Title: r.Title, Patches: r.Patches, Outcome: r.Outcome, Command: r.Command, Host: r.Host})
	}
	return doc
}

// servedSignIn is the box at the top of a served page with forms: a
// sign-in form (the token and a name, once a session), or who the session
// is signed in as, with a sign-out button.
const servedSignIn = `{{define "signin"}}{{with .Form}}{{if .SignedIn}}<form method="post" action="` + SessionPath + `" class="signin"><input type="hidden" name="csrf" value="{{.CSRF}}"><input type="hidden" name="return" value="{{.Return}}"><input type="hidden" name="action" value="sign-out">signed in as <b>{{.Who}}</b>: the change points' forms triage <button type="submit">sign out</button></form>
{{else}}<form method="post" action="` + SessionPath + `" class="signin"><input type="hidden" name="csrf" value="{{.CSRF}}"><input type="hidden" name="return" value="{{.Return}}">To triage, sign in once: <input name="who" placeholder="your name" maxlength="100" autocomplete="username" aria-label="your name" required> <input type="password" name="token" placeholder="token" autocomplete="current-password" aria-label="token" required> <button type="submit">sign in</button></form>
{{end}}{{end}}{{end}}`

var servedTemplate = newPage("served", historyParts+insightPart+servedSignIn+`{{define "changes"}}{{$form := .Form}}{{$actions := .Actions}}{{with .Changes}}
<ul class="changes">{{range .}}
<li class="{{.Class}}" id="cp{{.ID}}">{{template "change" .}}{{if .Provisional}} (provisional){{end}}{{with .LastTriage}}<br><span class="triaged">{{.}}</span>{{end}}
{{if and $form .Live}}{{if $form.SignedIn}}<form method="post" action="`+TriagePath+`" class="triage">
<input type="hidden" name="csrf" value="{{$form.CSRF}}"><input type="hidden" name="id" value="{{.ID}}"><input type="hidden" name="return" value="{{$form.Return}}">
<select name="action" aria-label="state">{{$cur := .Action}}{{range $actions}}<option value="{{.}}"{{if eq (print .) $cur}} selected{{end}}>{{if eq (print .) "bisect"}}bisect this{{else}}{{.}}{{end}}</option>{{end}}</select>
<input name="comment" placeholder="comment" maxlength="4096" aria-label="comment">
<button type="submit">triage</button>
</form>{{end}}{{end}}</li>{{end}}
</ul>{{end}}{{end}}{{define "body"}}`+servedNav+`
{{template "signin" .}}{{$page := .}}{{if .RunsPage}}{{with .PatchSeries}}<div class="scroll"><table class="patch-series"><thead><tr><th>run</th><th>recorded</th><th>series</th><th>range</th><th>patches</th><th>outcome</th><th>host</th></tr></thead><tbody>
{{range .}}<tr><td><a href="{{.URL}}">#{{.ID}}</a></td><td class="date">{{.Recorded}}</td><td>{{.Title}}</td><td><code>{{.Range}}</code></td><td class="num">{{.Patches}}</td><td>{{.Outcome}}</td><td>{{.Host}}</td></tr>
{{end}}</tbody></table></div>{{else}}<p>{{$page.Empty}}</p>{{end}}{{else if not .Series}}<p>{{.Empty}}</p>{{end}}{{if .Night}}{{with .Night}}<p class="around">{{if .BeforeURL}}<a href="{{.BeforeURL}}" rel="prev">← the night before, {{.Before}}</a>{{else}}the first night{{end}} · {{with index $page.Series 0}}<a href="{{.URL}}">{{.Name}}</a>{{end}} · {{if .AfterURL}}<a href="{{.AfterURL}}" rel="next">the night after, {{.After}} →</a>{{else}}the latest night{{end}}</p>
<p class="verdict">{{.Status}}{{with .Reason}}: {{.}}{{end}}</p>
<dl class="run">{{range .Run}}<dt>{{index . 0}}</dt><dd>{{index . 1}}</dd>{{end}}</dl>
{{with .Results}}<h3>Raw results</h3>
<ul>{{range .}}<li><a href="{{.URL}}" download>{{.Role}}.txt</a>: {{.Boots}} boots ({{.Outcomes}})</li>{{end}}</ul>{{end}}
{{with .Benchstat}}<p>Compare them with plain benchstat: <code>{{.}}</code></p>{{end}}
{{if .Insight}}<p class="against">{{.InsightAgainst}}</p>{{end}}{{template "insight" .}}{{end}}
{{with index .Series 0}}{{template "nights" .}}{{with .Changes}}<h3>Change points next to this night</h3><p>Their step lies between this night and the one before or after it.</p>{{end}}{{template "changes" (servedChanges $page .)}}{{end}}
{{else}}{{range .Series}}<h2 id="{{.Anchor}}"><a href="{{.URL}}">{{.Name}}</a></h2>
<p class="source">{{.Source}}{{with .Summary}}<br>{{.}}{{end}}</p>
{{if .Index}}<p class="latest">latest night: {{if .Latest.URL}}<a href="{{.Latest.URL}}">{{.Latest.Date}}</a> {{.Latest.Status}}, tip {{.Latest.Tip}}{{else}}none{{end}}; <a class="open" href="{{.AlertsURL}}">{{.Open}} open change point{{if ne .Open 1}}s{{end}}</a>, <a href="`+BisectionsPath+`#{{.Anchor}}">{{.Bisect}} bisection{{if ne .Bisect 1}}s{{end}}</a></p>
{{with .Changes}}<ul class="changes">{{range .}}<li class="{{.Class}}">{{template "change" .}} · <a href="{{.CardURL}}">triage</a></li>{{end}}</ul>{{end}}{{else}}{{with .Changes}}<h3>Change points</h3>{{end}}{{template "changes" (servedChanges $page .)}}
{{template "excursions" .}}{{template "trends" .}}{{if .Nights}}<div id="nights">{{with .Paging}}<p class="paging">{{.}}</p>{{end}}{{template "nights" .}}{{if or .NewerURL .OlderURL}}<p class="paging">{{with .NewerURL}}<a href="{{.}}" rel="prev">← newer nights</a>{{end}}{{if and .NewerURL .OlderURL}} · {{end}}{{with .OlderURL}}<a href="{{.}}" rel="next">older nights →</a>{{end}}</p>{{end}}</div>{{end}}
{{with .Triage}}<h3>Triage log</h3>
<div class="scroll"><table class="triage-log"><thead><tr><th>when</th><th>change point</th><th>decision</th><th>who</th><th>comment</th></tr></thead><tbody>
{{range .}}<tr><td class="date">{{.At}}</td><td><a href="{{.ChangeURL}}">{{.Change}}</a></td><td>{{.Action}}</td><td>{{.Who}}</td><td>{{.Comment}}</td></tr>
{{end}}</tbody></table></div>{{end}}{{end}}
{{end}}{{end}}{{end}}`, map[string]any{
	"servedChanges": func(p servedPage, s servedSeries) map[string]any {
		return map[string]any{"Form": p.Form, "Actions": p.Actions, "Changes": s.Changes}
	},
})

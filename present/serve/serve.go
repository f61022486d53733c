// Package serve serves the nights' history over HTTP (lpmbisect serve): the
// pages package report renders, a JSON document for each of them, and the
// triage of change points from the page, by the rule of history.DB.Triage
// that lpmbisect history ack applies too.
//
// The pages (package report's paths):
//
//	/                                        every series, its latest night, its open change points (ranges, nights)
//	/series/NAME                             change points with their triage forms, trend plots, nights, triage log
//	/series/NAME/nights/DATE                 one night: kernels, rows, change points, insight and profiles, raw results, benchstat's command
//	/series/NAME/nights/DATE/results/ROLE.txt the raw benchfmt results of the night's boots of ROLE (tip, reference)
//	/alerts                                  the open change points of every series
//	/bisections                              every change point whose bisection was asked for, ran or ended
//	/patch-series                            the runs of lpmbisect series the history holds
//	/patch-series/ID                         one run: its report (lpmbisect series --html's), its JSON
//	POST /triage                             id, action, comment, who; the form's session token; the token unless the session is signed in
//	POST /session                            sign the browser's session in with the token (once), or out
//
// Every page answers ?format=json with the JSON of package report's
// HistoryDocument (what lpmbisect history --format json writes) of the
// page's data; a series' nights come a page at a time, newest first
// (?page=N, ?per_page=N), as on its HTML page. JSON answers may be cached
// and revalidated (Cache-Control: no-cache, an ETag); pages are not stored.
//
// # Security
//
// Reads are open to whoever reaches the listen address (loopback by
// default), under a Host that names this server (hostAllowed: its
// address, localhost, or Options.HostNames; else 421, so that a site whose
// name is pointed at this address cannot read the pages). A change needs
// the server's token (Options.Token, compared in constant time): typed
// once into a page's sign-in form, which signs the browser's session in,
// or sent by a script as "Authorization: Bearer TOKEN" (the scheme in any
// case); without it the answer is 401 and nothing changes. Every change
// must come from this server's own pages: its Origin header, when it has
// one, must name this server, else its Sec-Fetch-Site must say
// same-origin (403 otherwise); a request with neither is no browser's (a
// script) and passes. A form also carries a token derived from the
// browser's session cookie (SameSite=Strict, 403 without it); a request
// with the bearer header needs none, because a browser does not send that
// header across sites. Forms are POST only; request bodies are bounded
// (maxBody: 413); every connection has read, write and idle timeouts
// (Serve). Pages run no script and may load nothing from elsewhere
// (Content-Security-Policy). Every string from a kernel, a guest, a
// commit, a patch or a person is escaped by html/template and made
// printable (control and bidirectional characters shown as escapes), as
// is every field of the server's log lines. Errors are one line, JSON to
// a JSON client. Writes are history's transactions: a triage is one, so a
// nightly writing beside the server never sees, nor leaves, half of one.
package serve

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lpmbisect/lpmbisect/internal/words"

	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/present/report"
	"github.com/lpmbisect/lpmbisect/present/view"
)

// maxBody bounds a request's body: a triage form is a few hundred bytes.
const maxBody = 64 << 10

// maxWho bounds the name a triage records from a form.
const maxWho = 100

// Nights a series' page and its JSON show at once, newest first (?page,
// ?per_page), and the most a JSON client may ask for.
const (
	nightsPerPage    = 30
	maxNightsPerPage = 1000
)

// Timeouts of every connection.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 15 * time.Second
	writeTimeout      = 60 * time.Second
	idleTimeout       = 60 * time.Second
)

// Options configure a Server.
type Options struct {
	DB *history.DB
	// Token is what every change must carry; "" refuses every change
	// (the pages then show no forms). ReadToken reads it from a file.
	Token string
	// HostNames are the names this server answers to besides its listen
	// address and, on loopback, localhost: the name a TLS proxy in front
	// serves it under. A request under another name is refused.
	HostNames []string
	// Log gets one line per change and per failed request (nil: none).
	Log *log.Logger
}

// Server is the served history: an http.Handler.
type Server struct {
	db        *history.DB
	token     []byte // sha256 of Options.Token; nil: no changes
	csrfKey   []byte
	log       *log.Logger
	mux       *http.ServeMux
	cache     pageCache
	hostNames map[string]bool
	listenIP  atomic.Pointer[net.IP] // set by Serve; nil: any address
	origins   *http.CrossOriginProtection
	// csrfSlot and whoSlot stand for the session's CSRF token and the
	// name it is signed in as in cached pages.
	csrfSlot, whoSlot string
}

// New returns the server of o.
func New(o Options) (*Server, error) {
	if o.DB == nil {
		return nil, errors.New("serve: no history database")
	}
	s := &Server{db: o.DB, log: o.Log, mux: http.NewServeMux(), csrfKey: make([]byte, 32), hostNames: map[string]bool{},
		origins: http.NewCrossOriginProtection()}
	for _, name := range o.HostNames {
		n := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(name)), ".")
		if strings.ContainsAny(n, "/ @?#") {
			n = ""
		} else if h, _, err := net.SplitHostPort(n); err == nil {
			n = h
		}
		if n = strings.Trim(n, "[]"); n == "" {
			return nil, fmt.Errorf("serve: %w: %q (give a name such as lpmbisect.example.org, without a scheme or path)", ErrHostName, name)
		}
		s.hostNames[n] = true
	}
	if s.log == nil {
		s.log = log.New(io.Discard, "", 0)
	}
	if o.Token != "" {
		sum := sha256.Sum256([]byte(o.Token))
		s.token = sum[:]
	}
	if _, err := rand.Read(s.csrfKey); err != nil {
		return nil, fmt.Errorf("serve: session key: %w", err)
	}
	slot := make([]byte, 16)
	rand.Read(slot)
	s.csrfSlot, s.whoSlot = "csrf-"+hex.EncodeToString(slot), "who-"+hex.EncodeToString(slot)
	s.mux.HandleFunc("GET /{$}", s.index)
	s.mux.HandleFunc("GET /series/{name}", s.series)
	s.mux.HandleFunc("GET /series/{name}/nights/{date}", s.night)
	s.mux.HandleFunc("GET /series/{name}/nights/{date}/results/{file}", s.results)
	s.mux.HandleFunc("GET "+report.AlertsPath, s.alerts)
	s.mux.HandleFunc("GET "+report.BisectionsPath, s.bisections)
	s.mux.HandleFunc("GET "+report.PatchSeriesPath, s.patchSeriesList)
	s.mux.HandleFunc("GET "+report.PatchSeriesPath+"/{id}", s.patchSeries)
	s.mux.HandleFunc("POST "+report.TriagePath, s.triage)
	s.mux.HandleFunc("POST "+report.SessionPath, s.signIn)
	s.mux.HandleFunc("GET "+report.TriagePath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "POST")
		s.fail(w, r, http.StatusMethodNotAllowed, "a triage is a POST of the page's form")
	})
	s.mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusNotFound, "no page %q (the pages are /, /series/NAME, %s, %s and %s)", r.URL.Path, report.AlertsPath, report.BisectionsPath, report.PatchSeriesPath)
	})
	return s, nil
}

// ErrHostName is wrapped by New's error about a host name that is not one.
var ErrHostName = errors.New("not a host name")

// minTokenLength is the shortest token ReadToken takes: a token is all
// that stands between the network and a change, and whoever can try
// tokens can try short ones all.
const minTokenLength = 16

// ErrWeakToken is wrapped by ReadToken's errors about a token that others
// could guess or read.
var ErrWeakToken = errors.New("weak token")

// ReadToken reads the token a server's changes need from a file: its first
// line, without surrounding space. An empty token is refused, and so are a
// token shorter than minTokenLength and a file that every user of the
// machine may read (ErrWeakToken).
func ReadToken(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("read the token: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o004 != 0 {
		return "", fmt.Errorf("read the token: %w: %s is readable by every user of this machine (mode %04o; chmod 600 %s)", ErrWeakToken, path, perm, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read the token: %w", err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	tok := strings.TrimSpace(line)
	switch {
	case tok == "":
		return "", fmt.Errorf("read the token: %s holds none (write a long random line into it, e.g. openssl rand -hex 32)", path)
	case len(tok) < minTokenLength:
		return "", fmt.Errorf("read the token: %w: the token in %s is %s long, shorter than %d (write a long random line into it, e.g. openssl rand -hex 32)",
			ErrWeakToken, path, words.Plural(len(tok), "byte"), minTokenLength)
	}
	return tok, nil
}

// ListenWarning says what serving on addr exposes, "" on loopback: beyond
// it the pages are open to the network, and unless a TLS proxy is in front
// the token, as it is typed into the sign-in form, and the session cookie
// cross it in clear.
func ListenWarning(addr net.Addr) string {
	if a, ok := addr.(*net.TCPAddr); ok && a.IP.IsLoopback() {
		return ""
	}
	return fmt.Sprintf("serving on %s, beyond loopback, over plain HTTP: anyone who reaches it reads the pages, and the token typed into the sign-in form and the session's cookie cross the network in clear; listen on loopback behind a TLS proxy (docs/serve.md), or put one in front", addr)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	if !s.hostAllowed(r.Host) {
		s.fail(w, r, http.StatusMisdirectedRequest, "Host %s is not a name of this server (it answers to its listen address, localhost on loopback, and the names of --host-name)", words.OneLine(r.Host))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if why := s.crossOrigin(r); why != "" {
			s.fail(w, r, http.StatusForbidden, "%s: a change must come from this server's own pages", why)
			return
		}
		s.mux.ServeHTTP(w, r)
		return
	}
	gen, err := s.cache.generation(r.Context(), s.db)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "read the history: %v", err)
		return
	}
	name, signedIn := s.signedInAs(r)
	key := r.Method + " " + r.URL.RequestURI()
	if signedIn {
		key += " signed in" // the pages show triage forms, not the sign-in form
	}
	resp := s.cache.get(key, gen, func() *recorded {
		rec := newRecorded()
		s.mux.ServeHTTP(rec, r)
		return rec
	})
	for k, v := range resp.header {
		h[k] = v
	}
	if tag := resp.header.Get("ETag"); tag != "" && r.Header.Get("If-None-Match") == tag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := resp.body.Bytes()
	if s.token != nil && bytes.Contains(body, []byte(s.csrfSlot)) {
		body = bytes.ReplaceAll(body, []byte(s.csrfSlot), []byte(s.csrfToken(s.session(w, r))))
	}
	if signedIn && bytes.Contains(body, []byte(s.whoSlot)) {
		body = bytes.ReplaceAll(body, []byte(s.whoSlot), []byte(html.EscapeString(words.Printable(name))))
	}
	w.WriteHeader(resp.status)
	w.Write(body)
}

// Serve serves on l until ctx ends, then shuts down, giving requests in
// flight a few seconds. Every connection has read, write and idle timeouts
// and bounded headers.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	if a, ok := l.Addr().(*net.TCPAddr); ok {
		s.listenIP.Store(&a.IP)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
		WriteTimeout: writeTimeout, IdleTimeout: idleTimeout, MaxHeaderBytes: 32 << 10,
		BaseContext: func(net.Listener) context.Context { return ctx }, ErrorLog: s.log}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	err := srv.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		<-done
		return nil
	}
	return fmt.Errorf("serve: %w", err)
}

// page renders a page as HTML, or as JSON when ?format=json asks; with
// paged, the JSON holds one page of each series' nights (?page,
// ?per_page, pagedDocument).
func (s *Server) page(w http.ResponseWriter, r *http.Request, doc view.History, paged bool, html func(io.Writer, *report.TriageForm) error) {
	f, ok := s.format(w, r)
	if !ok {
		return
	}
	if f == "json" {
		if !paged {
			s.writeJSON(w, r, report.NewHistoryDocument(doc))
			return
		}
		page, per, ok := s.paging(w, r)
		if !ok {
			return
		}
		if d, ok := s.pagedDocument(w, r, doc, page, per); ok {
			s.writeJSON(w, r, d)
		}
		return
	}
	var form *report.TriageForm
	if s.token != nil {
		// The session's CSRF token goes in when the page is sent.
		form = &report.TriageForm{CSRF: s.csrfSlot, Who: s.whoSlot, Return: r.URL.RequestURI(), SignedIn: s.signedIn(r)}
	}
	s.writeHTML(w, r, func(out io.Writer) error { return html(out, form) })
}

// paging reads ?page (from 1: the newest nights) and ?per_page (nights a
// page, at most maxNightsPerPage), or answers why they are wrong.
func (s *Server) paging(w http.ResponseWriter, r *http.Request) (page, per int, ok bool) {
	page, per = 1, nightsPerPage
	q := r.URL.Query()
	for _, p := range []struct {
		name string
		v    *int
		max  int
	}{{"page", &page, 1 << 30}, {"per_page", &per, maxNightsPerPage}} {
		if v := q.Get(p.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > p.max {
				s.fail(w, r, http.StatusBadRequest, "%s %q: give a whole number from 1 to %d", p.name, words.OneLine(v), p.max)
				return 0, 0, false
			}
			*p.v = n
		}
	}
	return page, per, true
}

// pageURL is the request's URL with ?page set to page.
func pageURL(r *http.Request, page int) string {
	q := r.URL.Query()
	q.Set("page", strconv.Itoa(page))
	return r.URL.Path + "?" + q.Encode()
}

// pagedDocument is the JSON of h with one page of each series' nights,
// newest first (view.HistorySeries.NightsPage), its paging and links to
// the newer and older pages (also as a Link header), or a 404 answered for
// a page past the last.
func (s *Server) pagedDocument(w http.ResponseWriter, r *http.Request, h view.History, page, per int) (report.HistoryDocument, bool) {
	pages := 1
	totals := make([]int, len(h.Series))
	paged := view.History{Series: make([]view.HistorySeries, len(h.Series))}
	for i, hs := range h.Series {
		var p view.NightsPage
		paged.Series[i], p = hs.NightsPage(page, per)
		pages, totals[i] = max(pages, p.Pages), p.Nights
	}
	if page > pages {
		s.fail(w, r, http.StatusNotFound, "no page %d: the nights fill %s of %d (?page=1 is the newest)", page, words.Plural(pages, "page"), per)
		return report.HistoryDocument{}, false
	}
	doc := report.NewHistoryDocument(paged)
	for i := range doc.Series {
		doc.Series[i].NightsTotal = totals[i]
	}
	doc.Paging = &report.PagingDoc{Page: page, PerPage: per, Pages: pages}
	var links []string
	if page > 1 {
		doc.Paging.Newer = pageURL(r, page-1)
		links = append(links, fmt.Sprintf("<%s>; rel=\"prev\"", doc.Paging.Newer))
	}
	if page < pages {
		doc.Paging.Older = pageURL(r, page+1)
		links = append(links, fmt.Sprintf("<%s>; rel=\"next\"", doc.Paging.Older))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	return doc, true
}

// load is the history of one series ("" for all), or a failure answered.
func (s *Server) load(w http.ResponseWriter, r *http.Request, series string) (view.History, bool) {
	h, err := view.LoadHistory(r.Context(), s.db, series)
	if errors.Is(err, history.ErrNotFound) || (err == nil && series != "" && len(h.Series) == 0) {
		s.fail(w, r, http.StatusNotFound, "no series %q in the history (see / for the series it holds)", series)
		return h, false
	}
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "read the history: %v", err)
		return h, false
	}
	return h, true
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	h, ok := s.load(w, r, "")
	if !ok {
		return
	}
	s.page(w, r, h, true, func(out io.Writer, form *report.TriageForm) error { return report.WriteServedIndex(out, h, form) })
}

func (s *Server) series(w http.ResponseWriter, r *http.Request) {
	h, ok := s.load(w, r, r.PathValue("name"))
	if !ok {
		return
	}
	page, per, ok := s.paging(w, r)
	if !ok {
		return
	}
	_, nights := h.Series[0].NightsPage(page, per)
	if page > nights.Pages {
		s.fail(w, r, http.StatusNotFound, "no page %d: the series' %s fill %s of %d (?page=1 is the newest)", page,
			words.Plural(nights.Nights, "night"), words.Plural(nights.Pages, "page"), per)
		return
	}
	s.page(w, r, h, true, func(out io.Writer, form *report.TriageForm) error {
		return report.WriteServedSeries(out, h.Series[0], nights, form)
	})
}

// nightOf finds the night of the request's series and date, and the
// series whole.
func (s *Server) nightOf(w http.ResponseWriter, r *http.Request) (view.HistorySeries, history.Night, bool) {
	h, ok := s.load(w, r, r.PathValue("name"))
	if !ok {
		return view.HistorySeries{}, history.Night{}, false
	}
	date := r.PathValue("date")
	for _, n := range h.Series[0].Nights {
		if n.Date == date {
			return h.Series[0], n, true
		}
	}
	s.fail(w, r, http.StatusNotFound, "series %q has no night %q (nights are YYYY-MM-DD; see %s)", r.PathValue("name"), date, report.SeriesPath(r.PathValue("name")))
	return view.HistorySeries{}, history.Night{}, false
}

// nightBoots finds the request's night and reads its boots.
func (s *Server) nightBoots(w http.ResponseWriter, r *http.Request) (view.HistorySeries, history.Night, []history.Boot, bool) {
	hs, n, ok := s.nightOf(w, r)
	if !ok {
		return hs, n, nil, false
	}
	boots, err := s.db.Boots(r.Context(), n.ID)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "read the night's boots: %v", err)
		return hs, n, nil, false
	}
	return hs, n, boots, true
}

func (s *Server) night(w http.ResponseWriter, r *http.Request) {
	whole, n, boots, ok := s.nightBoots(w, r)
	if !ok {
		return
	}
	hs := whole.AtNight(n.Date)
	before, after := whole.NightsAround(n.Date)
	in, found, err := view.LoadNightInsight(r.Context(), s.db, n.ID)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "read the night's insight block: %v", err)
		return
	}
	if found {
		hs.Insight = map[string]view.NightInsight{n.Date: in}
	}
	s.page(w, r, view.History{Series: []view.HistorySeries{hs}}, false, func(out io.Writer, form *report.TriageForm) error {
		return report.WriteServedNight(out, hs, n, boots, report.NightsAround{Before: before, After: after}, form)
	})
}

// results serves the raw results of a night's boots of one role, as one
// benchfmt file.
func (s *Server) results(w http.ResponseWriter, r *http.Request) {
	role, ok := strings.CutSuffix(r.PathValue("file"), ".txt")
	if !ok {
		s.fail(w, r, http.StatusNotFound, "results are ROLE.txt (tip.txt, reference.txt, night.txt: every boot)")
		return
	}
	_, n, boots, ok := s.nightBoots(w, r)
	if !ok {
		return
	}
	var b strings.Builder
	for _, boot := range boots {
		if string(boot.Role) == role || history.Role(role) == report.NightResults {
			b.WriteString(boot.Results)
			if !strings.HasSuffix(boot.Results, "\n") {
				b.WriteByte('\n')
			}
		}
	}
	if b.Len() == 0 {
		s.fail(w, r, http.StatusNotFound, "night %s has no %s boots", n.Date, role)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", role+".txt"))
	io.WriteString(w, b.String())
}

func (s *Server) alerts(w http.ResponseWriter, r *http.Request) {
	h, ok := s.load(w, r, "")
	if !ok {
		return
	}
	h = h.ChangesOnly(history.ChangePoint.Open)
	s.page(w, r, h, false, func(out io.Writer, form *report.TriageForm) error {
		return report.WriteServedChanges(out, "lpmbisect: alerts", "No open change points: every change point has been triaged.", h, form)
	})
}

func (s *Server) bisections(w http.ResponseWriter, r *http.Request) {
	h, ok := s.load(w, r, "")
	if !ok {
		return
	}
	h = h.ChangesOnly(func(cp history.ChangePoint) bool { return cp.Bisect.State != history.BisectNone })
	s.page(w, r, h, false, func(out io.Writer, form *report.TriageForm) error {
		return report.WriteServedChanges(out, "lpmbisect: bisections",
			"No bisections in the history yet: nightly's auto-bisect and the \"bisect this\" triage add them. (Patch-series runs are on "+report.PatchSeriesPath+".)", h, form)
	})
}

// format is the request's ?format: "html" or "json", or false when it is
// neither (answered).
func (s *Server) format(w http.ResponseWriter, r *http.Request) (string, bool) {
	switch f := r.URL.Query().Get("format"); f {
	case "", "html":
		return "html", true
	case "json":
		return f, true
	default:
		s.fail(w, r, http.StatusBadRequest, "format %q: use html or json", f)
		return "", false
	}
}

func (s *Server) patchSeriesList(w http.ResponseWriter, r *http.Request) {
	f, ok := s.format(w, r)
	if !ok {
		return
	}
	runs, err := s.db.PatchSeriesRuns(r.Context())
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "read the patch-series runs: %v", err)
		return
	}
	if f == "json" {
		s.writeJSON(w, r, report.NewPatchSeriesDocument(runs))
		return
	}
	s.writeHTML(w, r, func(out io.Writer) error { return report.WriteServedPatchSeriesList(out, runs) })
}

// patchSeries serves a stored run: its report, by the renderer of
// lpmbisect series --html, or as JSON the document lpmbisect series
// --format json wrote, with each moved patch's insight block.
func (s *Server) patchSeries(w http.ResponseWriter, r *http.Request) {
	f, ok := s.format(w, r)
	if !ok {
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		s.fail(w, r, http.StatusNotFound, "no patch-series run %q (runs are numbered; see %s)", r.PathValue("id"), report.PatchSeriesPath)
		return
	}
	run, err := s.db.PatchSeriesRun(r.Context(), id)
	if errors.Is(err, history.ErrNotFound) {
		s.fail(w, r, http.StatusNotFound, "no patch-series run %d (see %s)", id, report.PatchSeriesPath)
		return
	}
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "read the patch-series run: %v", err)
		return
	}
	if f == "json" {
		writeJSONBytes(w, []byte(run.Document))
		return
	}
	v, err := report.ReadSeriesRecord(strings.NewReader(run.Document))
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "patch-series run %d: %v", id, err)
		return
	}
	s.writeHTML(w, r, func(out io.Writer) error { return report.WriteServedPatchSeries(out, v) })
}

// writeJSON answers doc as JSON that a client may keep and revalidate:
// Cache-Control no-cache and an ETag of the document (ServeHTTP answers
// 304 to an If-None-Match that names it).
func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, doc any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		s.fail(w, r, http.StatusInternalServerError, "encode JSON: %v", err)
		return
	}
	writeJSONBytes(w, b.Bytes())
}

// writeJSONBytes answers a JSON document as it is, with writeJSON's
// headers.
func writeJSONBytes(w http.ResponseWriter, doc []byte) {
	sum := sha256.Sum256(doc)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", `"`+hex.EncodeToString(sum[:12])+`"`)
	w.Write(doc)
}

// writeHTML renders a page, whole or, failing, not at all.
func (s *Server) writeHTML(w http.ResponseWriter, r *http.Request, render func(io.Writer) error) {
	var b strings.Builder
	if err := render(&b); err != nil {
		s.fail(w, r, http.StatusInternalServerError, "render: %v", err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	io.WriteString(w, b.String())
}

// tokenOK compares a presented token with the server's in constant time
// (hashes of equal length, so not even the length leaks).
func (s *Server) tokenOK(tok string) bool {
	if s.token == nil || tok == "" {
		return false
	}
	sum := sha256.Sum256([]byte(tok))
	return subtle.ConstantTimeCompare(sum[:], s.token) == 1
}

// parseForm reads a POST's form, bounded by maxBody, or answers why not.
func (s *Server) parseForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.fail(w, r, http.StatusRequestEntityTooLarge, "the request body is over %d bytes", maxBody)
			return false
		}
		s.fail(w, r, http.StatusBadRequest, "malformed form: %v", err)
		return false
	}
	return true
}

// triage applies a triage decision: who may change (a script's bearer
// token; else the form's session token and a session signed in, or the
// token in the form), then history.DB.Triage's rule. A decision that
// changes nothing is not recorded, and said so.
func (s *Server) triage(w http.ResponseWriter, r *http.Request) {
	if !s.parseForm(w, r) {
		return
	}
	tok, script := bearer(r)
	who := strings.TrimSpace(r.PostForm.Get("who"))
	switch {
	case s.token == nil:
		s.fail(w, r, http.StatusUnauthorized, "this server takes no changes (start it with a token file)")
		return
	case script && !s.tokenOK(tok):
		s.fail(w, r, http.StatusUnauthorized, "a change needs the server's token (wrong or missing)")
		return
	case script:
	case !s.csrfOK(r):
		s.fail(w, r, http.StatusForbidden, "the form's session token does not match this browser's session (reload the page and try again)")
		return
	case r.PostForm.Has("token") && r.PostForm.Get("token") != "":
		if !s.tokenOK(r.PostForm.Get("token")) {
			s.fail(w, r, http.StatusUnauthorized, "a change needs the server's token (wrong or missing)")
			return
		}
	default:
		name, ok := s.signedInAs(r)
		if !ok {
			s.fail(w, r, http.StatusUnauthorized, "a change needs the server's token: sign in with it at the top of the page (once a session), then triage")
			return
		}
		who = cmp.Or(who, name)
	}
	id, err := strconv.ParseInt(r.PostForm.Get("id"), 10, 64)
	if err != nil || id <= 0 {
		s.fail(w, r, http.StatusBadRequest, "id %q is not a change point ID", words.OneLine(r.PostForm.Get("id")))
		return
	}
	action, err := history.ParseTriageAction(r.PostForm.Get("action"))
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "%v", err)
		return
	}
	if len(who) > maxWho {
		s.fail(w, r, http.StatusBadRequest, "say who you are: the who field, 1 to %d bytes", maxWho)
		return
	}
	if err := history.CheckWho(who); err != nil {
		s.fail(w, r, http.StatusBadRequest, "say who you are: %v", err)
		return
	}
	cp, changed, err := s.db.Triage(r.Context(), id, action, r.PostForm.Get("comment"), who+" (web)")
	switch {
	case errors.Is(err, history.ErrNotFound):
		s.fail(w, r, http.StatusNotFound, "%v", err)
		return
	case errors.Is(err, history.ErrBadTriage):
		s.fail(w, r, http.StatusConflict, "%v", err)
		return
	case err != nil:
		s.fail(w, r, http.StatusInternalServerError, "%v", err)
		return
	}
	if changed {
		s.cache.forget() // the next page shows the change
		s.log.Printf("change point %d: %s by %s from %s", id, action, words.OneLine(who), words.OneLine(r.RemoteAddr))
	}
	if script || wantsJSON(r) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(struct {
			ID      int64  `json:"id"`
			Status  string `json:"status"`
			Bisect  string `json:"bisect"`
			Changed bool   `json:"changed"` // false: the decision changed nothing and was not recorded
		}{cp.ID, string(cp.Status), cmp.Or(string(cp.Bisect.State), "none"), changed})
		return
	}
	http.Redirect(w, r, returnPath(r.PostForm.Get("return"), "cp"+strconv.FormatInt(id, 10)), http.StatusSeeOther)
}

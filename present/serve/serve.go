// Package serve serves the nights' history over HTTP (lpmbisect serve): the
// pages package report renders, a JSON document for each of them, and the
// triage of change points from the page, by the rule of history.DB.Triage
// that lpmbisect history ack applies too.
//
// The pages (package report's paths):
//
//	/                                        every series, its latest night, its untriaged change points
//	/series/NAME                             change points with their triage forms, trend plots, nights, triage log
//	/series/NAME/nights/DATE                 one night: kernels, rows, change points, insight and profiles, raw results, benchstat's command
//	/series/NAME/nights/DATE/results/ROLE.txt the raw benchfmt results of the night's boots of ROLE (tip, reference)
//	/alerts                                  the untriaged change points of every series
//	/bisections                              every change point whose bisection was asked for, ran or ended
//	/patch-series                            the runs of lpmbisect series the history holds
//	/patch-series/ID                         one run: its report (lpmbisect series --html's), its JSON
//	POST /triage                             id, action, comment, who; the token; the form's session token
//
// Every page answers ?format=json with the JSON of package report's
// HistoryDocument (what lpmbisect history --format json writes) of the
// page's data.
//
// # Security
//
// Reads are open to whoever reaches the listen address (loopback by
// default). A change needs the server's token (Options.Token, compared in
// constant time), in the form or as "Authorization: Bearer TOKEN"; without
// it the answer is 401 and nothing changes. A form also carries a token
// derived from the browser's session cookie (SameSite=Strict), so another
// site cannot make a browser post one (403); a request with the bearer
// header needs none, because a browser does not send that header across
// sites. Forms are POST only; request bodies are bounded (MaxBody: 413);
// every connection has read, write and idle timeouts (Serve). Pages run no
// script and may load nothing from elsewhere (Content-Security-Policy).
// Every string from a kernel, a guest, a commit or a patch is escaped by
// html/template. Writes are history's transactions: a triage is one, so a
// nightly writing beside the server never sees, nor leaves, half of one.
package serve

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lpmbisect/lpmbisect/flow/nightly"
	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/present/report"
	"github.com/lpmbisect/lpmbisect/present/view"
)

// MaxBody bounds a request's body: a triage form is a few hundred bytes.
const MaxBody = 64 << 10

// maxWho bounds the name a triage records.
const maxWho = 100

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
	// (the pages then show no forms).
	Token string
	// Log gets one line per change and per failed request (nil: none).
	Log *log.Logger
}

// Server is the served history: an http.Handler.
type Server struct {
	db      *history.DB
	token   []byte // sha256 of Options.Token; nil: no changes
	csrfKey []byte
	log     *log.Logger
	mux     *http.ServeMux
	cache   pageCache
	// csrfSlot stands for the session's CSRF token in cached pages.
	csrfSlot string
}

// New returns the server of o.
func New(o Options) (*Server, error) {
	if o.DB == nil {
		return nil, errors.New("serve: no history database")
	}
	s := &Server{db: o.DB, log: o.Log, mux: http.NewServeMux(), csrfKey: make([]byte, 32)}
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
	s.csrfSlot = "csrf-" + hex.EncodeToString(slot)
	s.mux.HandleFunc("GET /{$}", s.index)
	s.mux.HandleFunc("GET /series/{name}", s.series)
	s.mux.HandleFunc("GET /series/{name}/nights/{date}", s.night)
	s.mux.HandleFunc("GET /series/{name}/nights/{date}/results/{file}", s.results)
	s.mux.HandleFunc("GET "+report.AlertsPath, s.alerts)
	s.mux.HandleFunc("GET "+report.BisectionsPath, s.bisections)
	s.mux.HandleFunc("GET "+report.PatchSeriesPath, s.patchSeriesList)
	s.mux.HandleFunc("GET "+report.PatchSeriesPath+"/{id}", s.patchSeries)
	s.mux.HandleFunc("POST "+report.TriagePath, s.triage)
	s.mux.HandleFunc("GET "+report.TriagePath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "POST")
		s.fail(w, r, http.StatusMethodNotAllowed, "a triage is a POST of the page's form")
	})
	s.mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusNotFound, "no page %q (the pages are /, /series/NAME, %s, %s and %s)", r.URL.Path, report.AlertsPath, report.BisectionsPath, report.PatchSeriesPath)
	})
	return s, nil
}

// ReadToken reads the token a server's changes need from a file: its first
// line, without surrounding space. An empty token is refused.
func ReadToken(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read the token: %w", err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	if tok := strings.TrimSpace(line); tok != "" {
		return tok, nil
	}
	return "", fmt.Errorf("read the token: %s holds none (write a long random line into it, e.g. openssl rand -hex 32)", path)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.mux.ServeHTTP(w, r)
		return
	}
	gen, err := s.cache.generation(r.Context(), s.db)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "read the history: %v", err)
		return
	}
	resp := s.cache.get(r.Method+" "+r.URL.RequestURI(), gen, func() *recorded {
		rec := newRecorded()
		s.mux.ServeHTTP(rec, r)
		return rec
	})
	for k, v := range resp.header {
		h[k] = v
	}
	body := resp.body.Bytes()
	if s.token != nil && bytes.Contains(body, []byte(s.csrfSlot)) {
		body = bytes.ReplaceAll(body, []byte(s.csrfSlot), []byte(s.csrfToken(s.session(w, r))))
	}
	w.WriteHeader(resp.status)
	w.Write(body)
}

// Serve serves on l until ctx ends, then shuts down, giving requests in
// flight a few seconds. Every connection has read, write and idle timeouts
// and bounded headers.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
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

// fail answers an error with its status and a one-line message.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, code int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if code >= 500 || code == http.StatusUnauthorized || code == http.StatusForbidden {
		s.log.Printf("%s %s from %s: %d %s", r.Method, r.URL.Path, r.RemoteAddr, code, msg)
	}
	if code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="lpmbisect"`)
	}
	http.Error(w, fmt.Sprintf("%d %s: %s", code, http.StatusText(code), msg), code)
}

// page renders a page as HTML, or as JSON when ?format=json asks.
func (s *Server) page(w http.ResponseWriter, r *http.Request, doc view.History, html func(io.Writer, *report.TriageForm) error) {
	f, ok := s.format(w, r)
	if !ok {
		return
	}
	if f == "json" {
		s.writeJSON(w, r, report.NewHistoryDocument(doc))
		return
	}
	var form *report.TriageForm
	if s.token != nil {
		form = &report.TriageForm{CSRF: s.csrfSlot, Return: r.URL.Path} // the session's, when sent
	}
	s.writeHTML(w, r, func(out io.Writer) error { return html(out, form) })
}

// load is the history of one series ("" for all), or a failure answered.
func (s *Server) load(w http.ResponseWriter, r *http.Request, series string) (view.History, bool) {
	h, err := nightly.LoadHistory(r.Context(), s.db, series)
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
	s.page(w, r, h, func(out io.Writer, _ *report.TriageForm) error { return report.WriteServedIndex(out, h) })
}

func (s *Server) series(w http.ResponseWriter, r *http.Request) {
	h, ok := s.load(w, r, r.PathValue("name"))
	if !ok {
		return
	}
	s.page(w, r, h, func(out io.Writer, form *report.TriageForm) error {
		return report.WriteServedSeries(out, h.Series[0], form)
	})
}

// nightOf finds the night of the request's series and date.
func (s *Server) nightOf(w http.ResponseWriter, r *http.Request) (view.HistorySeries, history.Night, bool) {
	h, ok := s.load(w, r, r.PathValue("name"))
	if !ok {
		return view.HistorySeries{}, history.Night{}, false
	}
	date := r.PathValue("date")
	for _, n := range h.Series[0].Nights {
		if n.Date == date {
			return h.Series[0].AtNight(date), n, true
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
	hs, n, boots, ok := s.nightBoots(w, r)
	if !ok {
		return
	}
	in, found, err := nightly.NightInsight(r.Context(), s.db, n.ID)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "read the night's insight block: %v", err)
		return
	}
	if found {
		hs.Insight = map[string]view.NightInsight{n.Date: in}
	}
	s.page(w, r, view.History{Series: []view.HistorySeries{hs}}, func(out io.Writer, form *report.TriageForm) error {
		return report.WriteServedNight(out, hs, n, boots, form)
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
	s.page(w, r, h, func(out io.Writer, form *report.TriageForm) error {
		return report.WriteServedChanges(out, "lpmbisect: alerts", "No untriaged change points.", h, form)
	})
}

func (s *Server) bisections(w http.ResponseWriter, r *http.Request) {
	h, ok := s.load(w, r, "")
	if !ok {
		return
	}
	h = h.ChangesOnly(func(cp history.ChangePoint) bool { return cp.Bisect.State != history.BisectNone })
	s.page(w, r, h, func(out io.Writer, form *report.TriageForm) error {
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
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, run.Document)
		return
	}
	v, err := report.ReadSeriesRecord(strings.NewReader(run.Document))
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "patch-series run %d: %v", id, err)
		return
	}
	s.writeHTML(w, r, func(out io.Writer) error { return report.WriteServedPatchSeries(out, v) })
}

func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, doc any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		s.log.Printf("%s: %v", r.URL.Path, err)
	}
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

// sessionCookie names the browser's session, to which a form's CSRF token
// is bound.
const sessionCookie = "lpmbisect_session"

// session returns the request's session, starting one (a cookie) when it
// has none.
func (s *Server) session(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(sessionCookie); err == nil && validSession(c.Value) {
		return c.Value
	}
	b := make([]byte, 16)
	rand.Read(b)
	id := hex.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	return id
}

func validSession(v string) bool {
	_, err := hex.DecodeString(v)
	return len(v) == 32 && err == nil
}

// csrfToken is the token a session's forms carry: a MAC of the session
// under this server's key, so it cannot be made without the cookie.
func (s *Server) csrfToken(session string) string {
	m := hmac.New(sha256.New, s.csrfKey)
	m.Write([]byte(session))
	return hex.EncodeToString(m.Sum(nil))
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

// triage applies a triage decision: the token first, then the form's
// session token, then history.DB.Triage's rule.
func (s *Server) triage(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.fail(w, r, http.StatusRequestEntityTooLarge, "the request body is over %d bytes", MaxBody)
			return
		}
		s.fail(w, r, http.StatusBadRequest, "malformed form: %v", err)
		return
	}
	tok, bearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !bearer {
		tok = r.PostForm.Get("token")
	}
	switch {
	case s.token == nil:
		s.fail(w, r, http.StatusUnauthorized, "this server takes no changes (start it with a token file)")
		return
	case !s.tokenOK(tok):
		s.fail(w, r, http.StatusUnauthorized, "a change needs the server's token (wrong or missing)")
		return
	}
	if !bearer {
		c, err := r.Cookie(sessionCookie)
		if err != nil || !validSession(c.Value) || !hmac.Equal([]byte(r.PostForm.Get("csrf")), []byte(s.csrfToken(c.Value))) {
			s.fail(w, r, http.StatusForbidden, "the form's session token does not match this browser's session (reload the page and try again)")
			return
		}
	}
	id, err := strconv.ParseInt(r.PostForm.Get("id"), 10, 64)
	if err != nil || id <= 0 {
		s.fail(w, r, http.StatusBadRequest, "id %q is not a change point ID", r.PostForm.Get("id"))
		return
	}
	action, err := history.ParseTriageAction(r.PostForm.Get("action"))
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, "%v", err)
		return
	}
	who := strings.TrimSpace(r.PostForm.Get("who"))
	if who == "" || len(who) > maxWho || !utf8.ValidString(who) {
		s.fail(w, r, http.StatusBadRequest, "say who you are: the who field, 1 to %d bytes of UTF-8", maxWho)
		return
	}
	cp, _, err := s.db.Triage(r.Context(), id, action, r.PostForm.Get("comment"), who+" (web)")
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
	s.cache.forget() // the next page shows the change
	s.log.Printf("change point %d: %s by %s from %s", id, action, who, r.RemoteAddr)
	if bearer || r.URL.Query().Get("format") == "json" {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(struct {
			ID     int64  `json:"id"`
			Status string `json:"status"`
			Bisect string `json:"bisect"`
		}{cp.ID, string(cp.Status), cmp.Or(string(cp.Bisect.State), "none")})
		return
	}
	back := r.PostForm.Get("return")
	if !strings.HasPrefix(back, "/") || strings.HasPrefix(back, "//") || strings.ContainsAny(back, "\\\r\n") {
		back = "/"
	}
	http.Redirect(w, r, back+"#cp"+strconv.FormatInt(id, 10), http.StatusSeeOther)
}

package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/flow/nightly"
	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/present/report"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/testbed/testseries"
)

const testToken = "s3cret-token-for-tests"

// importNights imports nights nights that write writes (a testseries
// night, drawn from a generator seeded with seed) into the SQLite history
// at location under the series name, judged at minEffect.
func importNights(t testing.TB, location, name string, nights int, write func(testing.TB, string, int, *rand.Rand) string, seed uint64, minEffect float64) {
	t.Helper()
	db, err := history.Open(context.Background(), location)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(seed, 2))
	var files []string
	for i := range nights {
		files = append(files, write(t, dir, i, rng))
	}
	if _, err := nightly.Import(context.Background(), db, history.Series{Name: name, Kind: history.ImageSeries, Source: "imported"}, compare.Options{MinEffect: minEffect}, files); err != nil {
		t.Fatal(err)
	}
}

// importSeries imports nights of the bad-night series (testseries: a −12 %
// step at night 15, a +19 % step at night 45, an excursion at night 10)
// into a fresh SQLite history under the series name.
func importSeries(t testing.TB, location, name string, nights int) {
	t.Helper()
	importNights(t, location, name, nights, testseries.WriteBadNight, 26, 0.05)
}

// importMorning imports the sheriff's-morning series (testseries: 60
// nights under icount, two boots each, a −12 % step at night 20, a +8 %
// step at night 42, a one-night outlier at night 30) into the SQLite
// history at location under the series name.
func importMorning(t testing.TB, location, name string) {
	t.Helper()
	importNights(t, location, name, 60, testseries.WriteMorningNight, 49, 0.01)
}

// testServer serves a fresh history of the bad-night series ("public", 60
// nights) with the token, or without one when token is "".
func testServer(t *testing.T, token string) (*httptest.Server, *history.DB) {
	t.Helper()
	ts, db, _ := testServerWith(t, Options{Token: token})
	return ts, db
}

// testServerWith serves a fresh history of the bad-night series
// ("public", 60 nights) with o, logging into the file whose path it
// returns.
func testServerWith(t *testing.T, o Options) (*httptest.Server, *history.DB, string) {
	t.Helper()
	dir := t.TempDir()
	loc := filepath.Join(dir, "history.db")
	importSeries(t, loc, "public", 60)
	db, err := history.Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	logPath := filepath.Join(dir, "serve.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	o.DB, o.Log = db, log.New(logFile, "", 0)
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts, db, logPath
}

// serveLoopback serves the history at loc with the token on a loopback
// port until the test ends; it returns the database and the server's base
// URL.
func serveLoopback(t *testing.T, loc string) (*history.DB, string) {
	t.Helper()
	db, err := history.Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{DB: db, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, l) }()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("Serve = %v", err)
		}
		db.Close()
	})
	return db, "http://" + l.Addr().String()
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func openChanges(t *testing.T, db *history.DB) []history.ChangePoint {
	t.Helper()
	cps, err := db.ChangePoints(context.Background(), 0, history.ChangeOpen)
	if err != nil {
		t.Fatal(err)
	}
	return cps
}

// Every page answers 200 in HTML and in JSON, with the series' change
// points, its plots and its nights' links.
func TestPages(t *testing.T) {
	ts, db := testServer(t, testToken)
	cps := openChanges(t, db)
	if len(cps) != 2 {
		t.Fatalf("the bad-night series has %d open change points; want 2", len(cps))
	}
	night := report.NightPath("public", cps[0].Night)
	for _, p := range []struct{ path, want string }{
		{"/", `href="/series/public"`},
		{"/series/public", "<svg"},
		{"/series/public", `href="` + night + `"`},
		{"/series/public", `name="csrf"`},
		{night, "night.txt</a>"},
		{night, "benchstat -col "},
		{night + "/results/night.txt", "BenchmarkPublic/lookup 1 "},
		{night + "/results/tip.txt", "BenchmarkPublic/lookup 1 "},
		{report.AlertsPath, fmt.Sprintf(`id="cp%d"`, cps[0].ID)},
		{report.BisectionsPath, "No bisections"},
	} {
		code, body := get(t, ts.Client(), ts.URL+p.path)
		if code != 200 || !strings.Contains(body, p.want) {
			t.Errorf("GET %s = %d, %d bytes without %q", p.path, code, len(body), p.want)
		}
	}
	for _, path := range []string{"/", "/series/public", night, report.AlertsPath} {
		code, body := get(t, ts.Client(), ts.URL+path+"?format=json")
		var doc report.HistoryDocument
		if err := json.Unmarshal([]byte(body), &doc); code != 200 || err != nil || len(doc.Series) != 1 || len(doc.Series[0].ChangePoints) == 0 {
			t.Errorf("GET %s?format=json = %d, %v, %+v", path, code, err, doc)
		}
	}
}

// Strings from the history are escaped: a series named like a script
// shows as text.
func TestPagesEscape(t *testing.T) {
	loc := filepath.Join(t.TempDir(), "history.db")
	name := `evil<script>alert(1)</script>`
	importSeries(t, loc, name, 20)
	db, err := history.Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, _ := New(Options{DB: db})
	ts := httptest.NewServer(s)
	defer ts.Close()
	for _, path := range []string{"/", report.SeriesPath(name), report.AlertsPath} {
		code, body := get(t, ts.Client(), ts.URL+path)
		if code != 200 || strings.Contains(body, "<script>") || !strings.Contains(body, "evil&lt;script&gt;") {
			t.Errorf("GET %s = %d; want the name escaped, got %q", path, code, body[:min(len(body), 300)])
		}
	}
}

// session opens a series' page in a client with cookies and returns the
// client and the form's CSRF token.
func session(t *testing.T, ts *httptest.Server) (*http.Client, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	_, body := get(t, c, ts.URL+"/series/public")
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no CSRF token in the series' page")
	}
	return c, m[1]
}

func post(t *testing.T, c *http.Client, u string, form url.Values, header map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// A triage with the token and the session's form token changes the state
// and is logged; every bad request gets its 4xx and changes nothing.
func TestTriageRequests(t *testing.T) {
	ts, db := testServer(t, testToken)
	cps := openChanges(t, db)
	id := fmt.Sprint(cps[0].ID)
	c, csrf := session(t, ts)
	good := func(change func(url.Values)) url.Values {
		v := url.Values{"id": {id}, "action": {"acknowledged"}, "who": {"alice"}, "comment": {"seen"}, "token": {testToken}, "csrf": {csrf}, "return": {"/series/public"}}
		if change != nil {
			change(v)
		}
		return v
	}
	u := ts.URL + report.TriagePath
	bad := []struct {
		name   string
		form   url.Values
		raw    string // a body sent as it is instead of form
		header map[string]string
		code   int
		says   string
	}{
		{"wrong token", good(func(v url.Values) { v.Set("token", "guess") }), "", nil, 401, "token"},
		{"no token", good(func(v url.Values) { v.Del("token") }), "", nil, 401, "token"},
		{"wrong bearer", good(func(v url.Values) { v.Del("token") }), "", map[string]string{"Authorization": "Bearer guess"}, 401, "token"},
		{"no csrf", good(func(v url.Values) { v.Del("csrf") }), "", nil, 403, "session token"},
		{"another session's csrf", good(func(v url.Values) { v.Set("csrf", strings.Repeat("0", 64)) }), "", nil, 403, "session token"},
		{"bad id", good(func(v url.Values) { v.Set("id", "1; DROP TABLE") }), "", nil, 400, "not a change point ID"},
		{"unknown change point", good(func(v url.Values) { v.Set("id", "999999") }), "", nil, 404, "not found"},
		{"unknown action", good(func(v url.Values) { v.Set("action", "delete") }), "", nil, 400, "triage refused"},
		{"nobody", good(func(v url.Values) { v.Set("who", " ") }), "", nil, 400, "who"},
		{"long comment", good(func(v url.Values) { v.Set("comment", strings.Repeat("x", history.MaxTriageComment+1)) }), "", nil, 409, "comment"},
		{"malformed form", nil, "id=%zz&token=" + testToken, nil, 400, "malformed form"},
		{"huge body", nil, "comment=" + strings.Repeat("x", maxBody+1), nil, 413, "over"},
	}
	for _, b := range bad {
		body := b.raw
		if b.form != nil {
			body = b.form.Encode()
		}
		req, _ := http.NewRequest("POST", u, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range b.header {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != b.code || !strings.Contains(string(got), b.says) {
			t.Errorf("%s: POST %s = %d %q; want %d saying %q", b.name, report.TriagePath, resp.StatusCode, got, b.code, b.says)
		}
	}
	if log, err := db.TriageLog(context.Background(), 0); err != nil || len(log) != 0 || len(openChanges(t, db)) != 2 {
		t.Fatalf("after refused requests: triage log %d rows, %v, %d open; want nothing changed", len(log), err, len(openChanges(t, db)))
	}
	if code, _ := get(t, c, u); code != http.StatusMethodNotAllowed {
		t.Errorf("GET %s = %d; want 405", report.TriagePath, code)
	}
	for _, p := range []string{"/series/nope", "/series/public/nights/2025-01-01", "/series/public/nights/x/results/tip.txt", "/nope", "/series/public?format=xml"} {
		if code, body := get(t, c, ts.URL+p); code/100 != 4 || !strings.Contains(body, ": ") {
			t.Errorf("GET %s = %d %q; want a 4xx saying why", p, code, body)
		}
	}

	code, _ := post(t, c, u, good(nil), nil)
	if code != http.StatusSeeOther {
		t.Fatalf("POST good triage = %d; want 303", code)
	}
	if cp, _ := db.ChangePoint(context.Background(), cps[0].ID); cp.Status != history.ChangeAcknowledged {
		t.Errorf("after the triage: status %s; want acknowledged", cp.Status)
	}
	// A script with the bearer header needs no session; bisect is asked
	// once, the second time refused.
	for i, want := range []int{200, 409} {
		code, body := post(t, http.DefaultClient, u, url.Values{"id": {id}, "action": {"bisect"}, "who": {"bot"}},
			map[string]string{"Authorization": "Bearer " + testToken})
		if code != want {
			t.Errorf("bisect by bearer, try %d = %d %q; want %d", i+1, code, body, want)
		}
	}
	log, err := db.TriageLog(context.Background(), 0)
	if err != nil || len(log) != 2 || log[0].Who != "alice (web)" || log[0].Comment != "seen" || log[1].Action != history.ActionBisect {
		t.Errorf("triage log = %+v, %v", log, err)
	}
	_, body := get(t, c, ts.URL+"/series/public")
	if !strings.Contains(body, "bisect by bot (web)") || !strings.Contains(body, "<td>alice (web)</td><td>seen</td>") || !strings.Contains(body, "bisection requested") {
		t.Errorf("the series' page does not show the triage and the requested bisection")
	}
}

// A server without a token takes no change and shows no form.
func TestReadOnly(t *testing.T) {
	ts, db := testServer(t, "")
	_, body := get(t, ts.Client(), ts.URL+"/series/public")
	if strings.Contains(body, "<form") {
		t.Error("a read-only server's page shows a form")
	}
	id := fmt.Sprint(openChanges(t, db)[0].ID)
	code, body := post(t, ts.Client(), ts.URL+report.TriagePath, url.Values{"id": {id}, "action": {"muted"}, "who": {"x"}, "token": {""}},
		map[string]string{"Authorization": "Bearer "})
	if code != 401 || !strings.Contains(body, "takes no changes") || len(openChanges(t, db)) != 2 {
		t.Errorf("POST to a read-only server = %d %q", code, body)
	}
}

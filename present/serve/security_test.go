package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
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

	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/present/report"
)

// guardedServer serves the bad-night series with the token and o's host
// names; logged reads what the server logged so far.
func guardedServer(t *testing.T, o Options) (ts *httptest.Server, db *history.DB, logged func() string) {
	t.Helper()
	o.Token = testToken
	ts, db, path := testServerWith(t, o)
	return ts, db, func() string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
}

// changed is what the history holds that a refused request must not
// change: the triage log's rows and every change point's state.
func changed(t *testing.T, db *history.DB) string {
	t.Helper()
	log, err := db.TriageLog(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	cps, err := db.ChangePoints(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	s := fmt.Sprintf("%d triage rows;", len(log))
	for _, cp := range cps {
		s += fmt.Sprintf(" #%d %s/%s", cp.ID, cp.Status, cp.Bisect.State)
	}
	return s
}

func do(t *testing.T, c *http.Client, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// Every write must come from the server's own pages: a triage with the
// session, its form token and the token, but an Origin of another site or
// a Sec-Fetch-Site of cross-site, is refused (403) and changes nothing; so
// is one under a Host that is not the server's (421). A script's request
// with neither header, and the bearer scheme in any case, is taken.
func TestSameOrigin(t *testing.T) {
	ts, db, logged := guardedServer(t, Options{HostNames: []string{"lpmbisect.example.org"}})
	id := fmt.Sprint(openChanges(t, db)[0].ID)
	c, csrf := session(t, ts)
	form := func(action string) url.Values {
		return url.Values{"id": {id}, "action": {action}, "who": {"alice"}, "token": {testToken}, "csrf": {csrf}, "return": {"/series/public"}}
	}
	u := ts.URL + report.TriagePath
	host := strings.TrimPrefix(ts.URL, "http://")
	before := changed(t, db)
	for _, p := range []struct {
		name   string
		header map[string]string
		host   string
		code   int
		says   string
	}{
		{"Origin of another site", map[string]string{"Origin": "http://evil.example"}, "", 403, "another site (Origin http://evil.example"},
		{"Origin of another port", map[string]string{"Origin": "http://127.0.0.1:1"}, "", 403, "another site"},
		{"Origin null", map[string]string{"Origin": "null"}, "", 403, "another site"},
		{"Sec-Fetch-Site cross-site", map[string]string{"Sec-Fetch-Site": "cross-site"}, "", 403, "another site (Sec-Fetch-Site cross-site)"},
		{"Sec-Fetch-Site same-site", map[string]string{"Sec-Fetch-Site": "same-site"}, "", 403, "another site"},
		{"both, Origin foreign", map[string]string{"Origin": "http://evil.example", "Sec-Fetch-Site": "same-origin"}, "", 403, "another site"},
		{"a rebinding name", map[string]string{"Origin": "http://evil.example:80"}, "evil.example:80", 421, "is not a name of this server"},
	} {
		req, _ := http.NewRequest("POST", u, strings.NewReader(form("muted").Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range p.header {
			req.Header.Set(k, v)
		}
		if p.host != "" {
			req.Host = p.host
		}
		if resp, body := do(t, c, req); resp.StatusCode != p.code || !strings.Contains(body, p.says) {
			t.Errorf("%s: POST = %d %q; want %d saying %q", p.name, resp.StatusCode, body, p.code, p.says)
		}
		if now := changed(t, db); now != before {
			t.Errorf("%s: the history went from %q to %q", p.name, before, now)
		}
	}
	if !strings.Contains(logged(), "403 the request comes from another site") {
		t.Errorf("the log does not record the refusals:\n%s", logged())
	}
	// The server's own page: Origin and Sec-Fetch-Site say so.
	req, _ := http.NewRequest("POST", u, strings.NewReader(form("acknowledged").Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", ts.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if resp, body := do(t, c, req); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a triage from the server's own page = %d %q; want 303", resp.StatusCode, body)
	}
	// A script: no Origin, no Sec-Fetch-Site, the bearer scheme in any
	// case.
	for i, scheme := range []string{"bearer", "BEARER", "Bearer"} {
		action := []string{"muted", "invalid", "open"}[i]
		req, _ := http.NewRequest("POST", u, strings.NewReader(url.Values{"id": {id}, "action": {action}, "who": {"bot"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", scheme+" "+testToken)
		if resp, body := do(t, http.DefaultClient, req); resp.StatusCode != 200 || !strings.Contains(body, `"status":"`+action+`"`) {
			t.Errorf("a script's triage with Authorization: %s = %d %q; want 200, %s", scheme, resp.StatusCode, body, action)
		}
	}
	// Reads: under a name of the server, localhost, an address; not under
	// another name.
	for _, c := range []struct {
		host string
		code int
	}{{host, 200}, {"localhost:" + host[strings.LastIndexByte(host, ':')+1:], 200}, {"LPMBISECT.example.org.", 200}, {"lpmbisect.example.org:443", 200},
		{"evil.example", 421}, {"127.0.0.1.evil.example", 421}} {
		req, _ := http.NewRequest("GET", ts.URL+"/series/public", nil)
		req.Host = c.host
		if resp, body := do(t, http.DefaultClient, req); resp.StatusCode != c.code {
			t.Errorf("GET under Host %s = %d %.80q; want %d", c.host, resp.StatusCode, body, c.code)
		}
	}
}

// A server listening on loopback answers loopback's names and its own
// address only; one listening on every address answers any address.
func TestHostAllowed(t *testing.T) {
	s, err := New(Options{DB: &history.DB{}, HostNames: []string{"Lpmbisect.Example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		listen string
		host   string
		ok     bool
	}{
		{"127.0.0.1", "127.0.0.1:8080", true},
		{"127.0.0.1", "localhost:8080", true},
		{"127.0.0.1", "[::1]:8080", true},
		{"127.0.0.1", "lpmbisect.example.org", true},
		{"127.0.0.1", "10.0.0.5:8080", false},
		{"127.0.0.1", "attacker.example:8080", false},
		{"127.0.0.1", "", true},
		{"10.0.0.5", "10.0.0.5:8080", true},
		{"10.0.0.5", "localhost:8080", false},
		{"10.0.0.5", "10.0.0.6", false},
		{"0.0.0.0", "10.0.0.6:8080", true},
		{"0.0.0.0", "localhost", true},
		{"0.0.0.0", "attacker.example", false},
	} {
		ip := net.ParseIP(c.listen)
		s.listenIP.Store(&ip)
		if got := s.hostAllowed(c.host); got != c.ok {
			t.Errorf("listening on %s, hostAllowed(%q) = %v; want %v", c.listen, c.host, got, c.ok)
		}
	}
	if _, err := New(Options{DB: &history.DB{}, HostNames: []string{"https://lpmbisect.example.org/"}}); err == nil {
		t.Error("New took a URL as a host name")
	}
}

// The name typed into a form cannot forge a log line or reach a page as
// a control character: refused (400) with a newline, ESC or a
// bidirectional override, and nothing changes; a comment's right-to-left
// override is stored as typed and shown escaped; every field of the
// server's log lines is printable on one line.
func TestHostileText(t *testing.T) {
	ts, db, logged := guardedServer(t, Options{})
	id := fmt.Sprint(openChanges(t, db)[0].ID)
	c, csrf := session(t, ts)
	u := ts.URL + report.TriagePath
	before := changed(t, db)
	for _, who := range []string{"bob\nmuted by admin from 10.0.0.1", "bob\r\nx", "\x1b[31mbob\x1b[0m", "bob\u202e", "bob\u2066"} {
		code, body := post(t, c, u, url.Values{"id": {id}, "action": {"muted"}, "who": {who}, "token": {testToken}, "csrf": {csrf}}, nil)
		if code != 400 || !strings.Contains(body, "say who you are") || strings.ContainsAny(body, "\x1b\u202e\u2066") {
			t.Errorf("who %q: POST = %d %q; want 400 saying who, printable", who, code, body)
		}
	}
	if now := changed(t, db); now != before {
		t.Errorf("refused names changed the history from %q to %q", before, now)
	}
	code, _ := post(t, c, u, url.Values{"id": {id}, "action": {"acknowledged"}, "who": {"carol"}, "comment": {"seen \u202egnp.exe \x1b[2J"}, "token": {testToken}, "csrf": {csrf}}, nil)
	if code != http.StatusSeeOther {
		t.Fatalf("a comment with an override: %d; want 303", code)
	}
	for _, path := range []string{report.SeriesPath("public"), report.AlertsPath, report.BisectionsPath, "/"} {
		_, page := get(t, c, ts.URL+path)
		if strings.ContainsAny(page, "\x1b\u202e") {
			t.Errorf("GET %s carries a raw ESC or U+202E", path)
		}
		if path == report.SeriesPath("public") && !strings.Contains(page, `seen \u202egnp.exe \x1b[2J`) {
			t.Errorf("GET %s does not show the comment's override escaped", path)
		}
	}
	// A request's path and header values in the log: one line each.
	req, _ := http.NewRequest("POST", u+"/%0Aforged", nil)
	req.Header.Set("Origin", "http://evil.example\u202e")
	do(t, c, req)
	lines := strings.Split(strings.TrimSpace(logged()), "\n")
	for _, line := range lines {
		if strings.ContainsAny(line, "\x1b\u202e\r") || !regexp.MustCompile(`^(POST /triage\S* from|change point \d+:) `).MatchString(line) {
			t.Errorf("log line %q is not one printable line of its own", line)
		}
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, `POST /triage/\x0aforged from`) || !strings.Contains(last, `evil.example\u202e`) {
		t.Errorf("the last log line %q does not show the path's newline and the Origin's override escaped", last)
	}
}

// A JSON client gets its errors as JSON; a page's JSON holds one page of
// nights, newest first, with its paging, a Link header, and headers that
// let a client revalidate it (Cache-Control, ETag, 304).
func TestJSONErrorsPagingAndCaching(t *testing.T) {
	ts, db, _ := guardedServer(t, Options{})
	for _, c := range []struct {
		method, path string
		header       map[string]string
		code         int
		says         string
	}{
		{"GET", "/series/nope?format=json", nil, 404, `no series \"nope\"`},
		{"GET", "/series/nope", map[string]string{"Accept": "application/json"}, 404, "no series"},
		{"GET", "/?format=json&page=3", nil, 404, "no page 3: the nights fill 2 pages of 30"},
		{"GET", "/?format=json&per_page=0", nil, 400, "per_page"},
		{"GET", "/series/public?format=json&page=x", nil, 400, "page"},
		{"POST", report.TriagePath, map[string]string{"Authorization": "Bearer wrong"}, 401, "token"},
		{"POST", report.TriagePath + "?format=json", nil, 403, "session token"},
	} {
		req, _ := http.NewRequest(c.method, ts.URL+c.path, nil)
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		resp, body := do(t, http.DefaultClient, req)
		var e errorDoc
		if err := json.Unmarshal([]byte(body), &e); resp.StatusCode != c.code || err != nil || e.Status != c.code || !strings.Contains(body, c.says) ||
			resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s = %d %s %q; want %d as JSON saying %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Content-Type"), body, c.code, c.says)
		}
	}
	if code, body := get(t, http.DefaultClient, ts.URL+"/series/nope"); code != 404 || strings.HasPrefix(body, "{") {
		t.Errorf("GET /series/nope from a browser = %d %q; want a 404 in text", code, body)
	}

	first, err := http.Get(ts.URL + "/?format=json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(first.Body)
	first.Body.Close()
	var doc report.HistoryDocument
	if err := json.Unmarshal(body, &doc); err != nil || doc.Paging == nil || len(doc.Series) != 1 {
		t.Fatalf("/?format=json: %v, %+v", err, doc.Paging)
	}
	nights := doc.Series[0].Nights
	if p := *doc.Paging; p.Page != 1 || p.PerPage != 30 || p.Pages != 2 || p.Older != "/?format=json&page=2" || p.Newer != "" ||
		len(nights) != 30 || doc.Series[0].NightsTotal != 60 || nights[len(nights)-1].Date != "2026-03-01" || nights[0].Date != "2026-01-31" {
		t.Errorf("/?format=json paging %+v, %d of %d nights, %s to %s; want the newest 30 of 60 and a link to the older", p, len(nights), doc.Series[0].NightsTotal, nights[0].Date, nights[len(nights)-1].Date)
	}
	if got := first.Header.Get("Link"); got != `</?format=json&page=2>; rel="next"` {
		t.Errorf("Link = %q", got)
	}
	tag := first.Header.Get("ETag")
	if cc := first.Header.Get("Cache-Control"); cc != "no-cache" || tag == "" {
		t.Errorf("/?format=json: Cache-Control %q, ETag %q; want no-cache and a tag", cc, tag)
	}
	req, _ := http.NewRequest("GET", ts.URL+"/?format=json", nil)
	req.Header.Set("If-None-Match", tag)
	if resp, body := do(t, http.DefaultClient, req); resp.StatusCode != http.StatusNotModified || body != "" {
		t.Errorf("If-None-Match the ETag = %d, %d bytes; want 304 and nothing", resp.StatusCode, len(body))
	}
	code, body2 := get(t, http.DefaultClient, ts.URL+"/?format=json&page=2&per_page=50")
	var doc2 report.HistoryDocument
	if err := json.Unmarshal([]byte(body2), &doc2); code != 200 || err != nil || len(doc2.Series[0].Nights) != 10 || doc2.Series[0].Nights[0].Date != "2026-01-01" || doc2.Paging.Newer != "/?format=json&page=1&per_page=50" {
		t.Errorf("page 2 of 50: %d %v %+v", code, err, doc2.Paging)
	}
	// A change shows at once, under a new tag.
	id := fmt.Sprint(openChanges(t, db)[0].ID)
	req, _ = http.NewRequest("POST", ts.URL+report.TriagePath, strings.NewReader(url.Values{"id": {id}, "action": {"muted"}, "who": {"bot"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+testToken)
	do(t, http.DefaultClient, req)
	req, _ = http.NewRequest("GET", ts.URL+"/?format=json", nil)
	req.Header.Set("If-None-Match", tag)
	if resp, _ := do(t, http.DefaultClient, req); resp.StatusCode != 200 || resp.Header.Get("ETag") == tag {
		t.Errorf("after a triage, If-None-Match the old tag = %d, tag %q; want 200 and a new tag", resp.StatusCode, resp.Header.Get("ETag"))
	}
	if code, page := get(t, http.DefaultClient, ts.URL+"/series/public?page=2"); code != 200 || !strings.Contains(page, "nights 31–60 of 60, newest first (page 2 of 2)") || !strings.Contains(page, "← newer nights") {
		t.Errorf("GET /series/public?page=2 = %d; want the older nights and a link to the newer", code)
	}
}

// A browser signs its session in once with the token; its forms then
// carry no token, and every triage of the session needs none, until it
// signs out. A wrong token, another session's mark or a forged one sign
// nothing in. A triage that changes nothing is not recorded.
func TestSignIn(t *testing.T) {
	ts, db, logged := guardedServer(t, Options{})
	cps := openChanges(t, db)
	c, csrf := session(t, ts)
	u := ts.URL + report.TriagePath
	signIn := func(c *http.Client, csrf, token string) int {
		code, _ := post(t, c, ts.URL+report.SessionPath, url.Values{"who": {"alice"}, "token": {token}, "csrf": {csrf}, "return": {"/alerts"}}, nil)
		return code
	}
	triage := func(c *http.Client, csrf string, id int64, action string) int {
		code, _ := post(t, c, u, url.Values{"id": {fmt.Sprint(id)}, "action": {action}, "csrf": {csrf}, "return": {"/series/public"}}, nil)
		return code
	}
	if code := triage(c, csrf, cps[0].ID, "acknowledged"); code != 401 {
		t.Errorf("a triage before signing in = %d; want 401", code)
	}
	if code := signIn(c, csrf, "a-guess"); code != 401 {
		t.Errorf("signing in with a wrong token = %d; want 401", code)
	}
	if code := signIn(c, strings.Repeat("0", 64), testToken); code != 403 {
		t.Errorf("signing in with another session's form token = %d; want 403", code)
	}
	before := changed(t, db)
	if code := triage(c, csrf, cps[0].ID, "acknowledged"); code != 401 || changed(t, db) != before {
		t.Errorf("a triage after failed sign-ins = %d; want 401 and nothing changed", code)
	}
	if code := signIn(c, csrf, testToken); code != http.StatusSeeOther {
		t.Fatalf("signing in = %d; want 303", code)
	}
	_, page := get(t, c, ts.URL+"/series/public")
	if !strings.Contains(page, "signed in as <b>alice</b>") || strings.Contains(page, `name="token"`) || !strings.Contains(page, `class="triage"`) {
		t.Errorf("the signed-in page: want who, triage forms and no token field")
	}
	for _, id := range []int64{cps[0].ID, cps[1].ID} {
		if code := triage(c, csrf, id, "acknowledged"); code != http.StatusSeeOther {
			t.Errorf("a signed-in triage of #%d = %d; want 303", id, code)
		}
	}
	if code := triage(c, csrf, cps[0].ID, "acknowledged"); code != http.StatusSeeOther {
		t.Errorf("a triage that changes nothing = %d; want 303 (ignored)", code)
	}
	log, _ := db.TriageLog(context.Background(), 0)
	if len(log) != 2 || log[0].Who != "alice (web)" {
		t.Errorf("triage log %+v; want the two changes by alice, not the unchanged one", log)
	}
	// The mark is the session's: another browser with it and its own
	// session is not signed in; a forged mark neither.
	jar, _ := cookiejar.New(nil)
	other := &http.Client{Jar: jar, CheckRedirect: c.CheckRedirect}
	_, otherPage := get(t, other, ts.URL+"/series/public")
	otherCSRF := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(otherPage)[1]
	base, _ := url.Parse(ts.URL)
	for _, ck := range c.Jar.Cookies(base) {
		if ck.Name == signedInCookie {
			jar.SetCookies(base, []*http.Cookie{ck})
		}
	}
	if code := triage(other, otherCSRF, cps[0].ID, "muted"); code != 401 {
		t.Errorf("another session with the signed-in mark = %d; want 401", code)
	}
	jar.SetCookies(base, []*http.Cookie{{Name: signedInCookie, Value: "9999999999.616c696365." + strings.Repeat("0", 64), Path: "/"}})
	if code := triage(other, otherCSRF, cps[0].ID, "muted"); code != 401 {
		t.Errorf("a forged mark = %d; want 401", code)
	}
	// Signing out.
	code, _ := post(t, c, ts.URL+report.SessionPath, url.Values{"action": {"sign-out"}, "csrf": {csrf}, "return": {"/"}}, nil)
	if code != http.StatusSeeOther || triage(c, csrf, cps[0].ID, "muted") != 401 {
		t.Errorf("after signing out (%d), a triage was taken", code)
	}
	if !strings.Contains(logged(), "session signed in as alice from 127.0.0.1") {
		t.Errorf("the log does not say who signed in:\n%s", logged())
	}
	// A script learns that nothing changed.
	req, _ := http.NewRequest("POST", u, strings.NewReader(url.Values{"id": {fmt.Sprint(cps[1].ID)}, "action": {"acknowledged"}, "who": {"bot"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+testToken)
	if resp, body := do(t, http.DefaultClient, req); resp.StatusCode != 200 || !strings.Contains(body, `"changed":false`) {
		t.Errorf("a script's unchanged triage = %d %q; want 200 and changed false", resp.StatusCode, body)
	}
}

// A token file must hold a token others cannot guess or read; serving
// beyond loopback is said to expose the pages.
func TestReadTokenAndListenWarning(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p
	}
	good := strings.Repeat("ab", 16)
	for _, c := range []struct {
		path string
		says string
	}{
		{write("good", good+"\n", 0o600), ""},
		{write("group", good+"\n", 0o640), ""},
		{write("short", "x\n", 0o600), "1 byte long, shorter than 16"},
		{write("fifteen", "123456789012345\n", 0o600), "15 bytes long"},
		{write("world", good+"\n", 0o644), "readable by every user of this machine (mode 0644; chmod 600"},
		{write("empty", "\n", 0o600), "holds none"},
	} {
		tok, err := ReadToken(c.path)
		switch {
		case c.says == "" && (err != nil || tok != good):
			t.Errorf("ReadToken(%s) = %q, %v; want the token", filepath.Base(c.path), tok, err)
		case c.says != "" && (err == nil || !strings.Contains(err.Error(), c.says)):
			t.Errorf("ReadToken(%s) = %q, %v; want an error saying %q", filepath.Base(c.path), tok, err, c.says)
		}
	}
	for _, c := range []struct {
		addr string
		warn bool
	}{{"127.0.0.1:8080", false}, {"[::1]:8080", false}, {"0.0.0.0:8080", true}, {"[::]:8080", true}, {"10.0.0.5:8080", true}} {
		a, _ := net.ResolveTCPAddr("tcp", c.addr)
		if w := ListenWarning(a); (w != "") != c.warn || c.warn && !strings.Contains(w, "TLS") {
			t.Errorf("ListenWarning(%s) = %q; want a warning %v", c.addr, w, c.warn)
		}
	}
}

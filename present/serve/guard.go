package serve

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/lpmbisect/lpmbisect/internal/words"
)

// What every request passes before a handler sees it, and how a refusal
// is answered.

// hostAllowed reports whether a request's Host names this server: one of
// Options.HostNames, an IP address (this server's listen address, any when
// it listens on every address), or localhost when it listens on loopback
// or every address; the port is not compared (a proxy in front may serve
// another). A request without a Host (HTTP/1.0, not a browser) is taken. A
// page of another site whose name its owner points at this server's
// address (DNS rebinding) sends that name, and is refused.
func (s *Server) hostAllowed(hostport string) bool {
	if hostport == "" {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if s.hostNames[host] {
		return true
	}
	listen := s.listenIP.Load()
	anywhere := listen == nil || listen.IsUnspecified()
	if ip := net.ParseIP(host); ip != nil {
		return anywhere || ip.Equal(*listen) || (ip.IsLoopback() && listen.IsLoopback())
	}
	return host == "localhost" && (anywhere || listen.IsLoopback())
}

// crossOrigin says why a request that changes something comes from
// another site, "" when it does not: its Origin header (which browsers
// send with every POST) when it has one, which must name this request's
// Host, else its Sec-Fetch-Site (http.CrossOriginProtection). A request
// with neither (a script, with the bearer token) is no browser's and
// passes.
func (s *Server) crossOrigin(r *http.Request) string {
	if o := r.Header.Get("Origin"); o != "" {
		if u, err := url.Parse(o); err != nil || u.Host == "" || u.Host != r.Host {
			return fmt.Sprintf("the request comes from another site (Origin %s, this is %s)", words.OneLine(o), words.OneLine(r.Host))
		}
	}
	if err := s.origins.Check(r); err != nil {
		return fmt.Sprintf("the request comes from another site (Sec-Fetch-Site %s)", words.OneLine(r.Header.Get("Sec-Fetch-Site")))
	}
	return ""
}

// bearer returns the token of an "Authorization: Bearer TOKEN" header, the
// scheme in any case (RFC 9110: schemes are case-insensitive); ok is false
// without such a header.
func bearer(r *http.Request) (token string, ok bool) {
	scheme, tok, found := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

// wantsJSON reports whether a request's client reads JSON: it asked for
// ?format=json, authenticates as a script (the bearer header), or accepts
// application/json and not HTML.
func wantsJSON(r *http.Request) bool {
	if r.URL.Query().Get("format") == "json" {
		return true
	}
	if _, ok := bearer(r); ok {
		return true
	}
	accept := r.Header.Get("Accept")
	return strings.Contains(accept, "application/json") && !strings.Contains(accept, "text/html")
}

// errorDoc is an error answered to a JSON client.
type errorDoc struct {
	Status int    `json:"status"`
	Error  string `json:"error"`
}

// fail answers an error with its status and a one-line message, as JSON to
// a JSON client (wantsJSON); a refused change (401, 403) and a server's
// failure are logged, every field of the line made printable on one line.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, code int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if code >= 500 || code == http.StatusUnauthorized || code == http.StatusForbidden || code == http.StatusMisdirectedRequest {
		s.log.Printf("%s %s from %s: %d %s", words.OneLine(r.Method), words.OneLine(r.URL.Path), words.OneLine(r.RemoteAddr), code, words.OneLine(msg))
	}
	h := w.Header()
	if code == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="lpmbisect"`)
	}
	h.Set("Cache-Control", "no-store")
	if wantsJSON(r) {
		h.Set("Content-Type", "application/json")
		h.Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(errorDoc{Status: code, Error: msg})
		return
	}
	http.Error(w, fmt.Sprintf("%d %s: %s", code, http.StatusText(code), words.Printable(msg)), code)
}

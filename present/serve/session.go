package serve

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/internal/words"
)

// A browser's session is a random cookie (HttpOnly, SameSite=Strict); its
// forms carry a token derived from it (csrfToken), so another site cannot
// make the browser post one. A person signs the session in once with the
// server's token and their name (POST report.SessionPath): the server
// answers with a second cookie, the expiry and the name with a MAC of them
// and the session under the server's key, and every triage of that session
// needs no token (and no name) until it expires, the person signs out, or
// the server restarts (a new key). The token is never written into a page
// or a cookie.

// Cookie names.
const (
	sessionCookie  = "lpmbisect_session"
	signedInCookie = "lpmbisect_signed_in"
)

// signedInFor is how long a session stays signed in.
const signedInFor = 12 * time.Hour

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

// mac is the server's MAC of parts, under its key drawn at start.
func (s *Server) mac(parts ...string) string {
	m := hmac.New(sha256.New, s.csrfKey)
	m.Write([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(m.Sum(nil))
}

// csrfToken is the token a session's forms carry: a MAC of the session
// under this server's key, so it cannot be made without the cookie.
func (s *Server) csrfToken(session string) string { return s.mac(session) }

// csrfOK reports whether the request's form carries its session's CSRF
// token.
func (s *Server) csrfOK(r *http.Request) bool {
	c, err := r.Cookie(sessionCookie)
	return err == nil && validSession(c.Value) && hmac.Equal([]byte(r.PostForm.Get("csrf")), []byte(s.csrfToken(c.Value)))
}

// signedIn reports whether the request's session was signed in with the
// token and has not expired.
func (s *Server) signedIn(r *http.Request) bool {
	_, ok := s.signedInAs(r)
	return ok
}

// signedInAs returns the name the request's session was signed in under,
// and whether it is signed in (with the token, not expired, by this
// server).
func (s *Server) signedInAs(r *http.Request) (string, bool) {
	if s.token == nil {
		return "", false
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil || !validSession(c.Value) {
		return "", false
	}
	mark, err := r.Cookie(signedInCookie)
	if err != nil {
		return "", false
	}
	parts := strings.Split(mark.Value, ".")
	if len(parts) != 3 {
		return "", false
	}
	until, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil || time.Now().Unix() > until || !hmac.Equal([]byte(parts[2]), []byte(s.mac("signed in", c.Value, parts[0], parts[1]))) {
		return "", false
	}
	name, err := hex.DecodeString(parts[1])
	return string(name), err == nil
}

// signIn answers POST report.SessionPath: with the token and a name (and
// the form's session token), the session is signed in under that name;
// with action "sign-out", out. Either way the browser goes back to the
// page it came from.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	if !s.parseForm(w, r) {
		return
	}
	if s.token == nil {
		s.fail(w, r, http.StatusUnauthorized, "this server takes no changes (start it with a token file)")
		return
	}
	if !s.csrfOK(r) {
		s.fail(w, r, http.StatusForbidden, "the form's session token does not match this browser's session (reload the page and try again)")
		return
	}
	session, _ := r.Cookie(sessionCookie)
	if r.PostForm.Get("action") == "sign-out" {
		http.SetCookie(w, &http.Cookie{Name: signedInCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
		s.log.Printf("session signed out from %s", words.OneLine(r.RemoteAddr))
		http.Redirect(w, r, returnPath(r.PostForm.Get("return"), ""), http.StatusSeeOther)
		return
	}
	who := strings.TrimSpace(r.PostForm.Get("who"))
	if err := history.CheckWho(who); err != nil || len(who) > maxWho {
		s.fail(w, r, http.StatusBadRequest, "say who you are: the name the triage log records, 1 to %d bytes of printable text", maxWho)
		return
	}
	if !s.tokenOK(r.PostForm.Get("token")) {
		s.fail(w, r, http.StatusUnauthorized, "wrong token: signing in needs the server's token (the first line of its --token-file)")
		return
	}
	until := time.Now().Add(signedInFor)
	expiry, name := strconv.FormatInt(until.Unix(), 10), hex.EncodeToString([]byte(who))
	http.SetCookie(w, &http.Cookie{Name: signedInCookie, Value: expiry + "." + name + "." + s.mac("signed in", session.Value, expiry, name), Path: "/",
		Expires: until, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	s.log.Printf("session signed in as %s from %s", words.OneLine(who), words.OneLine(r.RemoteAddr))
	http.Redirect(w, r, returnPath(r.PostForm.Get("return"), ""), http.StatusSeeOther)
}

// returnPath is where a form sends the browser back to: its return field
// when it is a path of this server, else the front page; fragment (without
// '#') is appended.
func returnPath(back, fragment string) string {
	if !strings.HasPrefix(back, "/") || strings.HasPrefix(back, "//") || strings.ContainsAny(back, "\\\r\n") {
		back = "/"
	}
	if fragment != "" {
		back += "#" + fragment
	}
	return back
}

package history

import (
	"net/url"
	"slices"
	"strings"
)

// Scrubber hides the password of a database URL in messages, where it
// appears as a credential: in a URL's user information ("user:PASSWORD@")
// and as the value of a password parameter ("password=PASSWORD", in a URL
// or a key=value connection string), in the spellings a message may show
// it in (as given, query-escaped, path-escaped). It leaves the password's
// other occurrences alone: a short password such as "a" is also a letter of
// most words, and replacing it everywhere would mangle every message. The
// URL itself is shown with Redact.
type Scrubber struct {
	spellings []string
}

// NewScrubber returns the scrubber of location's password; one that
// changes nothing when location is no postgres URL or has no password.
func NewScrubber(location string) Scrubber {
	if !IsPostgres(location) {
		return Scrubber{}
	}
	u, err := url.Parse(location)
	if err != nil {
		return Scrubber{}
	}
	var s Scrubber
	add := func(pw string) {
		for _, sp := range []string{pw, url.QueryEscape(pw), url.PathEscape(pw)} {
			if sp != "" && !slices.Contains(s.spellings, sp) {
				s.spellings = append(s.spellings, sp)
			}
		}
	}
	if pw, ok := u.User.Password(); ok {
		add(pw)
	}
	for k, vs := range u.Query() {
		if isPasswordKey(k) {
			for _, v := range vs {
				add(v)
			}
		}
	}
	return s
}

// hidden is what a scrubbed password becomes, as in Redact.
const hidden = "xxxxx"

// isPasswordKey reports whether a URL parameter named k carries a
// password (password, sslpassword, …): Redact hides its value in the URL,
// Scrubber wherever the value stands in a message.
func isPasswordKey(k string) bool { return strings.Contains(strings.ToLower(k), "password") }

// Text returns msg with the password hidden where it is a credential.
func (s Scrubber) Text(msg string) string {
	for _, sp := range s.spellings {
		msg = strings.ReplaceAll(msg, ":"+sp+"@", ":"+hidden+"@")
		msg = scrubParam(msg, sp)
	}
	return msg
}

// scrubParam hides sp where it is the whole value of a parameter whose
// name ends in "password" (password=sp, PGPASSWORD='sp'), a value ending
// at the end of msg, a space, a quote or a separator.
func scrubParam(msg, sp string) string {
	var b strings.Builder
	lower := strings.ToLower(msg)
	i := 0
	for {
		j := strings.Index(lower[i:], "password")
		if j < 0 {
			break
		}
		v := i + j + len("password")
		k := v
		for k < len(msg) && msg[k] == ' ' {
			k++
		}
		if k >= len(msg) || msg[k] != '=' {
			b.WriteString(msg[i:v])
			i = v
			continue
		}
		k++
		for k < len(msg) && msg[k] == ' ' {
			k++
		}
		if k < len(msg) && (msg[k] == '\'' || msg[k] == '"') {
			k++
		}
		end := k + len(sp)
		if strings.HasPrefix(msg[k:], sp) && (end == len(msg) || strings.IndexByte(" \t\n'\"&;,)`", msg[end]) >= 0) {
			b.WriteString(msg[i:k])
			b.WriteString(hidden)
			i = end
			continue
		}
		b.WriteString(msg[i:k])
		i = k
	}
	b.WriteString(msg[i:])
	return b.String()
}

// Error returns err with its text scrubbed (Text), keeping the chain for
// errors.Is and errors.As; nil stays nil.
func (s Scrubber) Error(err error) error {
	if err == nil || len(s.spellings) == 0 {
		return err
	}
	return &scrubbed{err: err, s: s}
}

// scrubbed is an error whose text is scrubbed.
type scrubbed struct {
	err error
	s   Scrubber
}

func (e *scrubbed) Error() string { return e.s.Text(e.err.Error()) }
func (e *scrubbed) Unwrap() error { return e.err }

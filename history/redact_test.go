package history

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/testbed/testpg"
)

func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/var/cache/lpmbisect/history.db", "/var/cache/lpmbisect/history.db"},
		{"postgres://ci:s3cret@db.lab:5432/perf?sslmode=require", "postgres://ci:xxxxx@db.lab:5432/perf?sslmode=require"},
		{"postgresql://ci@db.lab/perf", "postgresql://ci@db.lab/perf"},
		{"postgres://db.lab/perf?user=ci&password=s3cret", "postgres://db.lab/perf?password=xxxxx&user=ci"},
		{"postgres://ci:p%40ss%2Fword@db.lab/perf", "postgres://ci:xxxxx@db.lab/perf"},
		{"POSTGRES://ci:s3cret@db.lab/perf", "postgres://ci:xxxxx@db.lab/perf"},
		{"postgres://ci:s3cret@db.lab:port/perf", "postgres://(a URL that does not parse, not shown)"},
	}
	for _, tt := range tests {
		if got := Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestScrubKeepsTheChain(t *testing.T) {
	s := NewScrubber("postgres://ci:p%40ss%2Fword@db.lab/perf")
	err := s.Error(errors.Join(ErrLocked, errors.New("login postgres://ci:p@ss/word@db.lab, postgres://ci:p%40ss%2Fword@db.lab failed")))
	if !errors.Is(err, ErrLocked) {
		t.Errorf("scrub lost the error chain: %v", err)
	}
	if s := err.Error(); strings.Contains(s, "p@ss") || strings.Contains(s, "p%40ss") {
		t.Errorf("scrub left the password in %q", s)
	}
}

// TestScrubShortPassword checks that a password that is also a word, or a
// letter of one, is hidden only where it is a credential.
func TestScrubShortPassword(t *testing.T) {
	for _, tt := range []struct{ location, in, want string }{
		{"postgres://lpm:a@db.lab/perf", "failed to connect to postgres://lpm:a@db.lab/perf: password authentication failed for user lpm",
			"failed to connect to postgres://lpm:xxxxx@db.lab/perf: password authentication failed for user lpm"},
		{"postgres://lpm:lpm@db.lab/lpm", "history postgres://lpm:xxxxx@db.lab/lpm: lpmbisect_history needs migrating",
			"history postgres://lpm:xxxxx@db.lab/lpm: lpmbisect_history needs migrating"},
		{"postgres://db.lab/perf?user=ci&password=a", "cannot parse `host=db.lab user=ci password=a dbname=perf`: bad port",
			"cannot parse `host=db.lab user=ci password=xxxxx dbname=perf`: bad port"},
		{"postgres://db.lab/perf?password=a", "dsn password='a', PGPASSWORD=a&x, password=abc", "dsn password='xxxxx', PGPASSWORD=xxxxx&x, password=abc"},
		{"postgres://ci@db.lab/perf", "a password=a", "a password=a"},
		{"/var/cache/lpmbisect/history.db", "postgres://ci:a@db", "postgres://ci:a@db"},
	} {
		if got := NewScrubber(tt.location).Text(tt.in); got != tt.want {
			t.Errorf("NewScrubber(%q).Text(%q) = %q; want %q", tt.location, tt.in, got, tt.want)
		}
	}
}

// TestErrorsHideThePassword checks the messages a user sees when a
// PostgreSQL URL with a password is wrong or not ready.
func TestErrorsHideThePassword(t *testing.T) {
	ctx := context.Background()
	location := testpg.Shared(t)
	u, _ := url.Parse(location)
	password, _ := u.User.Password()

	check := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s = nil; want an error", what)
			return
		}
		t.Logf("%s: %v", what, err)
		if strings.Contains(err.Error(), password) {
			t.Errorf("%s = %q; it shows the password", what, err)
		}
		if !strings.Contains(err.Error(), "xxxxx") {
			t.Errorf("%s = %q; want the redacted location in it", what, err)
		}
	}
	// Not migrated yet.
	_, err := Open(ctx, location)
	check("Open(not migrated)", err)

	// A wrong password, and the right one in a parameter of a URL that
	// names a database that does not exist.
	wrong := *u
	wrong.User = url.UserPassword("postgres", "wrong-"+password)
	_, err = Open(ctx, wrong.String())
	check("Open(wrong password)", err)
	if err != nil && strings.Contains(err.Error(), "wrong-") {
		t.Errorf("Open(wrong password) = %q; it shows the wrong password", err)
	}
	missing := *u
	missing.User = url.User("postgres")
	missing.Path = "/no_such_database"
	missing.RawQuery = "sslmode=disable&password=" + url.QueryEscape(password)
	_, err = Open(ctx, missing.String())
	check("Open(no such database, password as a parameter)", err)

	// A one-letter password leaves the server's message as it was.
	short := *u
	short.User = url.UserPassword("postgres", "a")
	_, err = Open(ctx, short.String())
	if err == nil || !strings.Contains(err.Error(), "password authentication failed") || !strings.Contains(err.Error(), "postgres:xxxxx@") {
		t.Errorf("Open(password \"a\") = %v; want the server's message intact and the location redacted", err)
	}
}

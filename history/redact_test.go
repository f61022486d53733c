package history

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/internal/testpg"
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
	err := scrub(errors.Join(ErrLocked, errors.New("login p@ss/word failed, p%40ss%2Fword")), "p@ss/word")
	if !errors.Is(err, ErrLocked) {
		t.Errorf("scrub lost the error chain: %v", err)
	}
	if s := err.Error(); strings.Contains(s, "p@ss") || strings.Contains(s, "p%40ss") {
		t.Errorf("scrub left the password in %q", s)
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
}

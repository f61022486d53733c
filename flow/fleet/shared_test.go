package fleet

import (
	"context"
	"testing"
)

// TestShared checks that every Connect of a command gets the one client,
// that a failed Connect keeps none, and that Close lets the next Connect
// open a new one.
func TestShared(t *testing.T) {
	ctx := context.Background()
	var s Shared
	if _, err := s.Connect(ctx, "postgres://lpmbisect@127.0.0.1:1/none", nil); err == nil {
		t.Fatalf("Connect to a closed port: no error")
	}
	url := migrated(t)
	a, err := s.Connect(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := s.Connect(ctx, url, nil); err != nil || b != a {
		t.Errorf("second Connect = %p, %v; want the first client %p", b, err, a)
	}
	s.Close()
	c, err := s.Connect(ctx, url, nil)
	if err != nil || c == a {
		t.Errorf("Connect after Close = %p, %v; want a new client", c, err)
	}
	s.Close()
	s.Close() // nothing open: nothing to do
}

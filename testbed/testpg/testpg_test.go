package testpg

import (
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestStart(t *testing.T) {
	var dbURL string
	t.Run("server", func(t *testing.T) {
		dbURL = Start(t)
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			t.Fatalf("connect %s: %v", dbURL, err)
		}
		defer conn.Close(ctx)
		var db, addr string
		if err := conn.QueryRow(ctx, "SELECT current_database(), host(inet_server_addr())").Scan(&db, &addr); err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(dbURL)
		if "/"+db != u.Path || addr != "127.0.0.1" {
			t.Errorf("connected to database %q at %s; want %q at 127.0.0.1", db, addr, u.Path)
		}
		if n, err := conn.Exec(ctx, "CREATE TABLE t (x int); INSERT INTO t VALUES (1)"); err != nil {
			t.Errorf("write to the database: %v (%v)", err, n)
		}
		// The password is what the URL says, not trust: a wrong one fails.
		wrong := *u
		wrong.User = url.UserPassword("postgres", "wrong")
		if c, err := pgx.Connect(ctx, wrong.String()); err == nil {
			c.Close(ctx)
			t.Errorf("connect with a wrong password succeeded; want an authentication failure")
		}
	})
	if t.Failed() || dbURL == "" {
		return
	}
	// After the subtest's cleanup the server is gone.
	u, _ := url.Parse(dbURL)
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", u.Host, time.Second)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("server at %s still accepts connections after cleanup", u.Host)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Its directory is gone too. Other packages' tests may run servers of
	// their own at the same time: look for this one's log by its port.
	logs, _ := filepath.Glob(filepath.Join(os.TempDir(), "lpmbisect-pg-*", "server-"+u.Port()+".log"))
	if len(logs) > 0 {
		t.Errorf("server directory left behind: %v", logs)
	}
}

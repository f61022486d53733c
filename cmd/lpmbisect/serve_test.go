package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/testbed/testseries"
)

// importedHistory writes a configuration whose history holds the
// bad-night series ("public": two change points, one excursion), imported
// with history import, and returns the configuration and the database.
func importedHistory(t *testing.T) (cfg, db string) {
	t.Helper()
	dir := t.TempDir()
	db = filepath.Join(dir, "history.db")
	cfg = filepath.Join(dir, "kernels.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[nightly]\ndb = %q\n[[series]]\nname = \"public\"\nimages = \"/k\"\nreference = \"/r\"\nmin_effect = 5.0\n", db)), 0o644)
	rng := rand.New(rand.NewPCG(26, 2))
	args := []string{"history", "import", "--config", cfg, "--series", "public"}
	for i := range 60 {
		args = append(args, testseries.WriteBadNight(t, dir, i, rng))
	}
	if code, _, stderr := runCLI(t, args...); code != 0 {
		t.Fatalf("history import = exit %d, %s", code, stderr)
	}
	return cfg, db
}

func openChangePoints(t *testing.T, db string) (*history.DB, []history.ChangePoint) {
	t.Helper()
	h, err := history.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	cps, err := h.ChangePoints(context.Background(), 0, history.LiveStatuses()...)
	if err != nil || len(cps) != 2 {
		t.Fatalf("change points %+v, %v; want 2", cps, err)
	}
	return h, cps
}

// history ack sets every triage state by history's rule, with a comment
// and who for the audit log; bad states are usage errors.
func TestHistoryAckStates(t *testing.T) {
	cfg, db := importedHistory(t)
	h, cps := openChangePoints(t, db)
	id := fmt.Sprint(cps[0].ID)
	for _, c := range []struct {
		args []string
		code int
		want history.ChangeStatus
		says string
	}{
		{[]string{id}, 0, history.ChangeAcknowledged, "acknowledged"},
		{[]string{id}, 0, history.ChangeAcknowledged, "acknowledged already: nothing recorded"},
		{[]string{"--state", "invalid", "--comment", "a harness change", id}, 0, history.ChangeInvalid, "invalid"},
		{[]string{"--mute", id}, 0, history.ChangeMuted, "muted"},
		{[]string{"--state", "open", id}, 0, history.ChangeOpen, "open"},
		{[]string{"--state", "shrug", id}, 2, history.ChangeOpen, "--state"},
		{[]string{"--mute", "--state", "invalid", id}, 2, history.ChangeOpen, "not both"},
		{[]string{"--state", "bisect", id}, 0, history.ChangeOpen, "bisection: requested"},
		{[]string{"--state", "bisect", id}, 2, history.ChangeOpen, "already"},
		{[]string{"424242"}, 2, history.ChangeOpen, "not found"},
	} {
		code, _, stderr := runCLI(t, append([]string{"history", "ack", "--config", cfg}, c.args...)...)
		cp, _ := h.ChangePoint(context.Background(), cps[0].ID)
		if code != c.code || cp.Status != c.want || !strings.Contains(stderr, c.says) {
			t.Errorf("history ack %s = exit %d, %q, status %s; want exit %d saying %q, status %s", strings.Join(c.args, " "), code, stderr, cp.Status, c.code, c.says, c.want)
		}
	}
	log, err := h.TriageLog(context.Background(), 0)
	if err != nil || len(log) != 5 || log[1].Comment != "a harness change" || !strings.Contains(log[1].Who, "@") {
		t.Errorf("triage log %+v, %v; want 5 decisions, the second with its comment and user@host", log, err)
	}
}

// lpmbisect serve serves the history on the --listen address until
// SIGTERM, takes a triage with the --token-file's token, and refuses bad
// flags as usage errors.
func TestServeCommand(t *testing.T) {
	cfg, db := importedHistory(t)
	_, cps := openChangePoints(t, db)
	const tok = "tok-123-long-enough-for-a-test"
	token := filepath.Join(t.TempDir(), "token")
	os.WriteFile(token, []byte(tok+"\n"), 0o600)
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, nil, 0o600)
	short := filepath.Join(t.TempDir(), "short")
	os.WriteFile(short, []byte("x\n"), 0o600)
	open := filepath.Join(t.TempDir(), "world-readable")
	os.WriteFile(open, []byte(tok+"\n"), 0o644)
	os.Chmod(open, 0o644) // whatever the umask

	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--token-file", filepath.Join(t.TempDir(), "missing")}, "--token-file"},
		{[]string{"--token-file", empty}, "holds none"},
		{[]string{"--token-file", short}, "1 byte long, shorter than 16"},
		{[]string{"--token-file", open}, "readable by every user of this machine (mode 0644; chmod 600"},
		{[]string{"--listen", "256.1.1.1:80"}, "--listen"},
		{[]string{"--host-name", "https://lpmbisect.example.org/"}, "--host-name"},
	} {
		code, _, stderr := runCLI(t, append([]string{"serve", "--config", cfg}, c.args...)...)
		if code != 2 || !strings.Contains(stderr, c.says) {
			t.Errorf("serve %s = exit %d, %q; want 2 saying %q", strings.Join(c.args, " "), code, stderr, c.says)
		}
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	done := make(chan int)
	var stderr string
	go func() {
		var code int
		code, _, stderr = runCLI(t, "serve", "--config", cfg, "--listen", addr, "--token-file", token)
		done <- code
	}()
	page := "http://" + addr + "/series/public"
	var body []byte
	for start := time.Now(); time.Since(start) < 20*time.Second; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(page)
		if err == nil {
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			break
		}
	}
	if !strings.Contains(string(body), "<svg") {
		t.Errorf("GET %s = %q; want the series' page with its plot", page, body)
	}
	form := url.Values{"id": {fmt.Sprint(cps[1].ID)}, "action": {"muted"}, "who": {"ci"}}
	req, _ := http.NewRequest("POST", "http://"+addr+"/triage", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+tok)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("POST /triage with the token = %v, %v; want 200", resp, err)
	}
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	select {
	case code := <-done:
		if code != 0 || !strings.Contains(stderr, "serving "+db) || !strings.Contains(stderr, "changes need the token") {
			t.Errorf("serve after SIGTERM = exit %d, %q; want 0 and where it served", code, stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
	h, _ := openChangePoints(t, db)
	if cp, _ := h.ChangePoint(context.Background(), cps[1].ID); cp.Status != history.ChangeMuted {
		t.Errorf("after the triage over HTTP: %s; want muted", cp.Status)
	}
}

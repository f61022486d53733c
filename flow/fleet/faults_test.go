package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/lpmbisect/lpmbisect/host/measure"
)

// proxy forwards TCP connections to PostgreSQL and can cut them all, and
// refuse new ones, to play a database that goes away.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  []net.Conn
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.setCut(true) })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			if p.cut {
				p.mu.Unlock()
				c.Close()
				continue
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				p.mu.Unlock()
				c.Close()
				continue
			}
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, s); c.Close() }()
		}
	}()
	return p
}

// setCut cuts (closing every open connection) or restores the database.
func (p *proxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for _, c := range p.conns {
			c.Close()
		}
		p.conns = nil
	}
}

// through returns location with its host replaced by the proxy's.
func (p *proxy) through(t *testing.T, location string) string {
	u, err := url.Parse(location)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.ln.Addr().String()
	return u.String()
}

func targetOf(t *testing.T, location string) string {
	u, err := url.Parse(location)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// waitLog waits until a log holds want.
func waitLog(t *testing.T, logs *syncBuffer, want string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !strings.Contains(logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("log has no %q within %s:\n%s", want, within, logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDatabaseGoesAway cuts the database off from worker and client while
// a round runs: both retry with backoff and say so, and the round's results
// arrive once when the database is back.
func TestDatabaseGoesAway(t *testing.T) {
	ctx := context.Background()
	direct := migrated(t)
	px := startProxy(t, targetOf(t, direct))
	location := px.through(t, direct)
	u, _ := url.Parse(location)
	password, _ := u.User.Password()
	qemu, guest := fakeQEMUPath(t), fakeGuest(t)
	wlog, wlogs := testLogger(t, "worker")
	runWorker(t, Worker{URL: location, Name: "cut", Queues: []string{"tcg-fake"}, CacheDir: t.TempDir(), Guest: guest, QEMU: qemu, Log: wlog, Heartbeat: time.Second})
	clog, clogs := testLogger(t, "client")
	c, err := connect(ctx, location, clog)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ex := &Executor{Client: c, Queue: "tcg-fake", Guest: guest, Log: clog, PollInterval: 500 * time.Millisecond}
	r := fakeRunner(t, fakeSides(t, 2*time.Second), ex, false)
	measured := make(chan error, 1)
	go func() { measured <- r.Measure(ctx, 1) }()

	waitLog(t, wlogs, "job start job=", 30*time.Second)
	px.setCut(true)
	// The two boots end after 4 s; the database stays away 4 s longer.
	time.Sleep(8 * time.Second)
	px.setCut(false)
	select {
	case err := <-measured:
		if err != nil {
			t.Fatalf("Measure across a database outage = %v\nworker:\n%s\nclient:\n%s", err, wlogs, clogs)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("Measure did not finish after the database came back\nworker:\n%s\nclient:\n%s", wlogs, clogs)
	}
	for _, want := range []string{`database unreachable op="store boot results"`, `database back op="store boot results"`} {
		if !strings.Contains(wlogs.String(), want) {
			t.Errorf("worker log lacks %q:\n%s", want, wlogs)
		}
	}
	if !strings.Contains(clogs.String(), "database unreachable op=") || !strings.Contains(clogs.String(), "database back op=") {
		t.Errorf("client log does not say the database went away and came back:\n%s", clogs)
	}
	for name, logs := range map[string]string{"worker": wlogs.String(), "client": clogs.String()} {
		if strings.Contains(logs, password) {
			t.Errorf("%s log shows the database password", name)
		}
	}
	var n, jobs int
	// The pool may still hold a connection the cut broke: ask again.
	for try := 0; ; try++ {
		err := c.db.pool.QueryRow(ctx, "SELECT count(*), count(DISTINCT job_id) FROM lpmbisect_fleet_boot_results").Scan(&n, &jobs)
		if err == nil {
			break
		}
		if try == 10 {
			t.Fatalf("count the stored results: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if n != 2 || jobs != 1 {
		t.Errorf("%d results of %d jobs stored; want the round's 2 boots of 1 job, once", n, jobs)
	}
}

// TestWorkerStopHandsJobBack stops a worker in the middle of a round: the
// round goes back to the queue at once, without costing an attempt, and
// another worker runs it.
func TestWorkerStopHandsJobBack(t *testing.T) {
	ctx := context.Background()
	location := migrated(t)
	qemu, guest := fakeQEMUPath(t), fakeGuest(t)
	wlog, wlogs := testLogger(t, "first")
	firstCtx, stopFirst := context.WithCancel(ctx)
	first := &Worker{URL: location, Name: "first", Queues: []string{"tcg-fake"}, CacheDir: t.TempDir(), Guest: guest, QEMU: qemu, Log: wlog, Heartbeat: time.Second}
	ran := make(chan error, 1)
	go func() { ran <- first.Run(firstCtx) }()
	defer stopFirst()
	c, err := connect(ctx, location, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitLog(t, wlogs, "worker start", 30*time.Second)
	ex := &Executor{Client: c, Queue: "tcg-fake", Guest: guest, PollInterval: 500 * time.Millisecond}
	r := fakeRunner(t, fakeSides(t, 3*time.Second), ex, false)
	var startsMu sync.Mutex
	starts := map[string]int{}
	r.OnBootStart = func(s *measure.Side, boot, done, total int) {
		startsMu.Lock()
		defer startsMu.Unlock()
		starts[fmt.Sprintf("%s%d", s.Name, boot)]++
	}
	measured := make(chan error, 1)
	go func() { measured <- r.Measure(ctx, 1) }()
	waitLog(t, wlogs, "job start job=", 30*time.Second)
	slog, _ := testLogger(t, "second")
	runWorker(t, Worker{URL: location, Name: "second", Queues: []string{"tcg-fake"}, CacheDir: t.TempDir(), Guest: guest, QEMU: qemu, Log: slog, Heartbeat: time.Second})
	stopFirst()
	if err := <-ran; err != nil {
		t.Errorf("first.Run = %v", err)
	}
	if err := <-measured; err != nil {
		t.Fatalf("Measure = %v", err)
	}
	// The executor tells the runner when a job's boots start (so a failed
	// boot waits for its side's others), once, though the round ran twice.
	if want := map[string]int{"A1": 1, "B1": 1}; !maps.Equal(starts, want) {
		t.Errorf("boots reported started = %v; want %v", starts, want)
	}
	var worker string
	var attempt, errs int
	c.db.pool.QueryRow(ctx, `SELECT r.worker, j.attempt, COALESCE(array_length(j.errors, 1), 0) FROM lpmbisect_fleet_boot_results r
JOIN river_job j ON j.id = r.job_id LIMIT 1`).Scan(&worker, &attempt, &errs)
	if worker != "second" || attempt != 1 || errs != 0 {
		t.Errorf("round ran on %s, attempt %d, %d errors; want it on second as attempt 1 without errors (handed back, not failed)", worker, attempt, errs)
	}
}

// TestClientCancel ends a client's context (Ctrl-C) while its boots run
// and queue: every job is canceled, and the running boot's QEMU ends.
func TestClientCancel(t *testing.T) {
	ctx := context.Background()
	location := migrated(t)
	qemu, guest := fakeQEMUPath(t), fakeGuest(t)
	cache := t.TempDir()
	wlog, wlogs := testLogger(t, "worker")
	runWorker(t, Worker{URL: location, Name: "canceled", Queues: []string{"tcg-fake"}, CacheDir: cache, Guest: guest, QEMU: qemu, Log: wlog, Heartbeat: time.Second})
	clog, clogs := testLogger(t, "client")
	c, err := connect(ctx, location, clog)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ex := &Executor{Client: c, Queue: "tcg-fake", Guest: guest, Log: clog, PollInterval: 500 * time.Millisecond}
	r := fakeRunner(t, fakeSides(t, time.Minute), ex, false)
	runCtx, interrupt := context.WithCancel(ctx)
	measured := make(chan error, 1)
	go func() { measured <- r.Measure(runCtx, 3) }()
	waitLog(t, wlogs, "job start job=", 30*time.Second)
	interrupt()
	if err := <-measured; !errors.Is(err, context.Canceled) {
		t.Errorf("Measure(interrupted) = %v; want context.Canceled", err)
	}
	waitLog(t, clogs, "jobs canceled count=3", 10*time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for {
		states, err := c.pollJobs(ctx, []int64{1, 2, 3}, "lpmbisect_fleet_boot_results")
		if err != nil {
			t.Fatal(err)
		}
		cancelled := 0
		for _, s := range states {
			if s.state == rivertype.JobStateCancelled {
				cancelled++
			}
		}
		out, _ := exec.Command("pgrep", "-f", filepath.Join(cache, "blobs")).Output()
		if cancelled == 3 && len(out) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the interrupt: %d of 3 jobs cancelled, QEMU processes %q", cancelled, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

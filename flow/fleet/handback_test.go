package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/lpmbisect/lpmbisect/host/measure"
)

// handBackFixture is a migrated database with no worker process: the test
// plays River's fetch and the workers' heartbeats in SQL.
type handBackFixture struct {
	t *testing.T
	c *Client
}

func newHandBackFixture(t *testing.T) *handBackFixture {
	c, err := connect(context.Background(), migrated(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &handBackFixture{t: t, c: c}
}

// job inserts a boot job that may be attempted maxAttempts times.
func (f *handBackFixture) job(maxAttempts int) int64 {
	f.t.Helper()
	ins, err := f.c.river.Insert(context.Background(), validBoot(), &river.InsertOpts{Queue: "icount", MaxAttempts: maxAttempts})
	if err != nil {
		f.t.Fatal(err)
	}
	return ins.Job.ID
}

// fetch plays River's fetch of job id by worker process instance, ago
// before now, and returns the attempt as the worker gets it.
func (f *handBackFixture) fetch(id int64, instance string, ago time.Duration) *rivertype.JobRow {
	f.t.Helper()
	row := &rivertype.JobRow{ID: id}
	var at time.Time
	err := f.c.db.pool.QueryRow(context.Background(), `
UPDATE river_job SET state = 'running', attempt = attempt + 1, attempted_at = now() - $2 * interval '1 millisecond',
	attempted_by = array_append(attempted_by, $3)
WHERE id = $1 RETURNING attempt, attempted_at, attempted_by`, id, ago.Milliseconds(), instance).Scan(&row.Attempt, &at, &row.AttemptedBy)
	if err != nil {
		f.t.Fatal(err)
	}
	row.AttemptedAt = &at
	return row
}

// worker records worker process instance, last heard from ago before now,
// with a heartbeat of one second (dead after three).
func (f *handBackFixture) worker(instance string, ago time.Duration) {
	f.t.Helper()
	_, err := f.c.db.pool.Exec(context.Background(), `
INSERT INTO lpmbisect_fleet_workers (name, instance, host, pid, cpu_model, cores, qemu_version, icount_cpu, version, guest_sha256,
	accels, queues, dropped, heartbeat_ms, started_at, last_seen)
VALUES ($1, $2, 'host', 1, 'cpu', 2, '7.2.22', 'Westmere-v1', 'test', $3, '{icount}', '{icount}', '{}', 1000,
	now() - interval '1 hour', now() - $4 * interval '1 millisecond')`, workerOf(instance), instance, sumA, ago.Milliseconds())
	if err != nil {
		f.t.Fatal(err)
	}
}

// state reads a job's state, attempt and last error.
func (f *handBackFixture) state(id int64) *jobState {
	f.t.Helper()
	states, err := f.c.pollJobs(context.Background(), []int64{id}, "lpmbisect_fleet_boot_results")
	if err != nil || states[id] == nil {
		f.t.Fatalf("poll job %d: %v", id, err)
	}
	return states[id]
}

// handBack runs the hand-back as a caller that has watched the database
// for an hour, over all jobs (ids nil) or some.
func (f *handBackFixture) handBack(ids []int64) map[int64]handedBack {
	f.t.Helper()
	since := time.Now().Add(-time.Hour)
	handed, err := f.c.db.handBack(context.Background(), ids, &since)
	if err != nil {
		f.t.Fatalf("handBack = %v", err)
	}
	out := map[int64]handedBack{}
	for _, h := range handed {
		out[h.id] = h
	}
	return out
}

// TestHandBack checks whose running jobs the hand-back returns to the
// queue: a dead worker's attempts older than its last sign of life, and
// the attempts of a process whose name was taken; not a live worker's, not
// an attempt fetched within the silence allowed, not for a caller that
// could not have heard the silence. A job out of attempts is discarded.
func TestHandBack(t *testing.T) {
	ctx := context.Background()
	f := newHandBackFixture(t)
	f.worker("dead/1", 20*time.Second)
	f.worker("live/1", 0)
	// The name "gone" now belongs to a new process; "gone/1" was the old one.
	f.worker("gone/2", 0)

	dead, live, fresh, replaced, last, other := f.job(3), f.job(3), f.job(3), f.job(3), f.job(1), f.job(3)
	deadRow := f.fetch(dead, "dead/1", 30*time.Second)
	f.fetch(live, "live/1", 30*time.Second)
	f.fetch(fresh, "dead/1", time.Second) // the fetch itself is a sign of life
	f.fetch(replaced, "gone/1", 20*time.Second)
	f.fetch(last, "dead/1", 30*time.Second)
	f.fetch(other, "dead/1", 30*time.Second)

	// A caller that has only just reached the database hands back nothing:
	// the silence may be its own outage's.
	var since time.Time
	if handed, err := f.c.db.handBack(ctx, nil, &since); err != nil || len(handed) != 0 || since.IsZero() {
		t.Fatalf("handBack(no watch yet) = %v, %v, since %v; want nothing, the watch started", handed, err, since)
	}
	if handed, err := f.c.db.handBack(ctx, nil, &since); err != nil || len(handed) != 0 {
		t.Errorf("handBack(watching for a moment) = %v, %v; want nothing", handed, err)
	}
	// A client hands back only its own jobs.
	if handed := f.handBack([]int64{live, other}); len(handed) != 1 || handed[other].id != other {
		t.Errorf("handBack(live, other) = %v; want other only", handed)
	}
	handed := f.handBack(nil)
	for _, id := range []int64{dead, replaced, last} {
		if _, ok := handed[id]; !ok {
			t.Errorf("job %d not handed back; handed %v", id, handed)
		}
	}
	for _, id := range []int64{live, fresh} {
		if _, ok := handed[id]; ok {
			t.Errorf("job %d handed back: its worker is alive, or its fetch is recent", id)
		}
		if s := f.state(id); s.state != rivertype.JobStateRunning {
			t.Errorf("job %d is %s; want still running", id, s.state)
		}
	}
	if h := handed[dead]; h.note.Worker != "dead" || h.discarded || h.note.Replaced || h.note.At.Sub(h.note.LastSeen) < 15*time.Second {
		t.Errorf("hand-back of job %d = %+v; want worker dead, silent 20 s, not discarded", dead, h)
	}
	s := f.state(dead)
	if s.state != rivertype.JobStateAvailable || s.attempt != 1 || s.handedBack == nil || s.handedBack.Worker != "dead" ||
		!strings.HasPrefix(s.lastError, "worker dead stopped answering at ") || !strings.HasSuffix(s.lastError, "job handed back to the queue") {
		t.Errorf("job %d after the hand-back: %s, attempt %d, last error %q (%+v); want available, attempt 1, a hand-back by worker dead",
			dead, s.state, s.attempt, s.lastError, s.handedBack)
	}
	if s := f.state(replaced); s.handedBack == nil || !s.handedBack.Replaced || !strings.Contains(s.lastError, "(a new process has its name)") {
		t.Errorf("job %d of a replaced process: last error %q (%+v); want a hand-back saying its name was taken", replaced, s.lastError, s.handedBack)
	}
	if s := f.state(last); s.state != rivertype.JobStateDiscarded || !strings.HasSuffix(s.lastError, "no attempt left") || !handed[last].discarded {
		t.Errorf("job %d on its last attempt: %s, %q; want discarded, no attempt left", last, s.state, s.lastError)
	}
	if again := f.handBack(nil); len(again) != 0 {
		t.Errorf("second hand-back = %v; want nothing (each attempt once)", again)
	}

	// The attempt that was handed back stores nothing: its row lock finds
	// the job no longer its own.
	tx, err := f.c.db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var lost *LostAttemptError
	if err := holdJob(ctx, tx, deadRow); !errors.As(err, &lost) || lost.State != "available" {
		t.Errorf("holdJob(handed-back attempt) = %v; want a LostAttemptError naming the available job", err)
	}
	tx.Rollback(ctx)
}

// TestAttemptFence checks the fence of a job's attempts: the attempt that
// holds the job may complete it; an older attempt of it (handed back, then
// fetched again) can neither pass holdJob nor change the row through a
// report by job id (what River's completer writes), even with the same
// attempt number and worker process.
func TestAttemptFence(t *testing.T) {
	ctx := context.Background()
	f := newHandBackFixture(t)
	id := f.job(3)
	old := f.fetch(id, "w1/1", 30*time.Second)
	if _, err := f.c.db.pool.Exec(ctx, "UPDATE river_job SET state = 'available', attempt = attempt - 1 WHERE id = $1", id); err != nil {
		t.Fatal(err) // a snooze gives the attempt number back
	}
	holder := f.fetch(id, "w1/1", 0)
	if holder.Attempt != old.Attempt {
		t.Fatalf("attempts %d and %d; want the same number, to show that the fetch time tells them apart", old.Attempt, holder.Attempt)
	}
	report := func(row *rivertype.JobRow, state string) {
		t.Helper()
		by := row.AttemptedBy[len(row.AttemptedBy)-1]
		token, _ := json.Marshal(attemptToken{Worker: workerOf(by), Instance: by, Attempt: row.Attempt, AttemptedAt: *row.AttemptedAt})
		// River's completer: by job id, when running, merging the output.
		if _, err := f.c.db.pool.Exec(ctx, `
UPDATE river_job SET state = $2::river_job_state, finalized_at = CASE WHEN $2 = 'completed' THEN now() END,
	metadata = metadata || jsonb_build_object('output', $3::jsonb)
WHERE id = $1 AND state = 'running'`, id, state, string(token)); err != nil {
			t.Fatal(err)
		}
	}
	for _, state := range []string{"completed", "retryable"} {
		report(old, state)
		if s := f.state(id); s.state != rivertype.JobStateRunning {
			t.Fatalf("after the old attempt reported %s: job %s; want running (the report dropped)", state, s.state)
		}
	}
	tx, err := f.c.db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var lost *LostAttemptError
	if err := holdJob(ctx, tx, old); !errors.As(err, &lost) || lost.State != "running" || lost.HeldBy != "w1" {
		t.Errorf("holdJob(old attempt) = %v; want a LostAttemptError naming the running attempt on w1", err)
	}
	tx.Rollback(ctx)
	if tx, err = f.c.db.pool.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	if err := holdJob(ctx, tx, holder); err != nil {
		t.Errorf("holdJob(holder) = %v; want nil", err)
	}
	tx.Rollback(ctx)
	report(holder, "completed")
	if s := f.state(id); s.state != rivertype.JobStateCompleted {
		t.Errorf("after the holder reported completion: job %s; want completed", s.state)
	}
}

// roundOnWorker is one wall-clock round (fake boots of 3 s) measured by a
// client on a worker process, with a second worker, in this process, to
// start once the first has the round.
type roundOnWorker struct {
	c                *Client
	first            *workerProcess
	r                *measure.Runner
	measured         chan error
	clogs, slogs     *syncBuffer
	url, qemu, guest string
}

// startRound starts worker first, has a client measure one round on it and
// returns once the round runs there.
func startRound(t *testing.T, first string) *roundOnWorker {
	t.Helper()
	f := &roundOnWorker{url: migrated(t), qemu: fakeQEMUPath(t), guest: fakeGuest(t), measured: make(chan error, 1)}
	f.first = startWorker(t, workerConfig{URL: f.url, Name: first, Queues: []string{"tcg-fake"}, CacheDir: t.TempDir(), Guest: f.guest, QEMU: f.qemu, Heartbeat: time.Second})
	var clog *log.Logger
	clog, f.clogs = testLogger(t, "client")
	c, err := connect(context.Background(), f.url, clog)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	f.c = c
	ex := &Executor{Client: c, Queue: "tcg-fake", Guest: f.guest, Log: clog, PollInterval: 500 * time.Millisecond}
	f.r = fakeRunner(t, fakeSides(t, 3*time.Second), ex, false)
	go func() { f.measured <- f.r.Measure(context.Background(), 1) }()
	waitLog(t, f.first.logs, "job start job=", 30*time.Second)
	return f
}

// startSurvivor starts the second worker, "survivor".
func (f *roundOnWorker) startSurvivor(t *testing.T) {
	var slog *log.Logger
	slog, f.slogs = testLogger(t, "survivor")
	runWorker(t, Worker{URL: f.url, Name: "survivor", Queues: []string{"tcg-fake"}, CacheDir: t.TempDir(), Guest: f.guest, QEMU: f.qemu, Log: slog, Heartbeat: time.Second})
}

// wait waits for the client's Measure.
func (f *roundOnWorker) wait(t *testing.T) {
	t.Helper()
	select {
	case err := <-f.measured:
		if err != nil {
			t.Fatalf("Measure = %v\n%s", err, f.clogs)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("Measure did not finish within 2 minutes (River's rescuer would take 10)\nclient:\n%s\nsurvivor:\n%s", f.clogs, f.slogs)
	}
}

// TestKilledWorkerHandedBack kills a worker (SIGKILL) in the middle of a
// wall-clock round: the round goes back to the queue once the database has
// not heard from the worker for three heartbeats, long before River's
// rescuer would take it (the round's stuck time is the default 10
// minutes), and the client says so.
func TestKilledWorkerHandedBack(t *testing.T) {
	ctx := context.Background()
	f := startRound(t, "doomed")
	f.startSurvivor(t)
	f.first.kill()
	f.wait(t)
	c, clogs := f.c, f.clogs
	var id int64
	var attempt, results, errs int
	var worker, lastErr string
	c.db.pool.QueryRow(ctx, `SELECT j.id, j.attempt, COALESCE(array_length(j.errors, 1), 0), j.errors[array_upper(j.errors, 1)]->>'error',
	(SELECT count(*) FROM lpmbisect_fleet_boot_results r WHERE r.job_id = j.id), (SELECT min(worker) FROM lpmbisect_fleet_boot_results r WHERE r.job_id = j.id)
FROM river_job j WHERE j.kind = $1`, kindRound).Scan(&id, &attempt, &errs, &lastErr, &results, &worker)
	t.Logf("round job %d: attempt %d on %s, %d results; errors %d, last %q", id, attempt, worker, results, errs, lastErr)
	if attempt != 2 || worker != "survivor" || results != 2 || errs != 1 || !strings.HasPrefix(lastErr, "worker doomed stopped answering at ") {
		t.Errorf("round job %d: attempt %d on %s with %d results, %d errors (last %q); want attempt 2 on survivor with its 2 boots, after one hand-back from doomed",
			id, attempt, worker, results, errs, lastErr)
	}
	if want := "; its 2 boots run again jobs="; !strings.Contains(clogs.String(), "worker doomed stopped answering at ") || !strings.Contains(clogs.String(), want) {
		t.Errorf("client log does not say that doomed stopped answering and %q:\n%s", want, clogs)
	}
}

// TestStalledWorkerFenced stops a worker (SIGSTOP) in the middle of a
// wall-clock round for longer than the detection time, so that its round
// is handed back and runs again on another worker, and resumes it
// (SIGCONT) while that attempt runs: the stalled attempt finishes its boots
// but stores nothing and cannot change the job, the job's results are the
// two boots of the attempt that holds it, and the resumed worker is alive
// again.
func TestStalledWorkerFenced(t *testing.T) {
	ctx := context.Background()
	f := startRound(t, "stalled")
	c, clogs, stalled := f.c, f.clogs, f.first
	time.Sleep(time.Second)
	if err := stalled.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer stalled.cmd.Process.Signal(syscall.SIGCONT)
	f.startSurvivor(t)

	// Resume the stalled worker once the second attempt runs.
	var id int64
	for deadline := time.Now().Add(time.Minute); id == 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the round did not run again within a minute of the stall\nclient:\n%s\nsurvivor:\n%s", clogs, f.slogs)
		}
		c.db.pool.QueryRow(ctx, "SELECT id FROM river_job WHERE kind = $1 AND state = 'running' AND attempt = 2", kindRound).Scan(&id)
	}
	stalled.cmd.Process.Signal(syscall.SIGCONT)
	f.wait(t)
	for side, want := range map[string]float64{"A": 500, "B": 400} {
		if got := f.r.Boots(side); len(got) != 1 || len(got[0]) != 1 || got[0][0].Values[0].OrigValue != want {
			t.Errorf("side %s: results %v; want one boot of %v ns/op", side, got, want)
		}
	}
	// The stalled attempt ends its round and tries to store it.
	waitLog(t, stalled.logs, fmt.Sprintf("results dropped job=%d attempt=1", id), time.Minute)
	waitLog(t, stalled.logs, fmt.Sprintf("job failed job=%d", id), 10*time.Second)
	time.Sleep(2 * time.Second) // River's completer writes the failed attempt's report
	rows, err := c.db.pool.Query(ctx, "SELECT attempt, worker, count(*) FROM lpmbisect_fleet_boot_results WHERE job_id = $1 GROUP BY attempt, worker", id)
	if err != nil {
		t.Fatal(err)
	}
	var stored []string
	for rows.Next() {
		var attempt, n int
		var worker string
		rows.Scan(&attempt, &worker, &n)
		stored = append(stored, fmt.Sprintf("attempt %d on %s: %d boots", attempt, worker, n))
	}
	rows.Close()
	if len(stored) != 1 || stored[0] != "attempt 2 on survivor: 2 boots" {
		t.Errorf("round job %d stored %v; want only attempt 2 on survivor, both boots", id, stored)
	}
	s := waitFinal(t, c, id)
	if s.state != rivertype.JobStateCompleted || s.attempt != 2 || s.errorsCount != 1 || s.handedBack == nil || s.handedBack.Worker != "stalled" {
		t.Errorf("round job %d: %s, attempt %d, %d errors (last %q); want completed by attempt 2 after one hand-back from stalled (the stalled attempt's report dropped)",
			id, s.state, s.attempt, s.errorsCount, s.lastError)
	}
	// The resumed worker beats again: alive, not replaced.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		live, err := c.liveWorkers(ctx, "tcg-fake")
		if err != nil {
			t.Fatal(err)
		}
		if len(live) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("live workers after SIGCONT: %v; want stalled and survivor", live)
			break
		}
	}
	t.Logf("stalled worker's log:\n%s", stalled.logs)
}

// TestWorkerReplaced takes a worker's name from under it, as a new process
// of that name does once the worker has been silent long enough: at its
// next heartbeat the worker stops with ErrWorkerReplaced.
func TestWorkerReplaced(t *testing.T) {
	ctx := context.Background()
	url := migrated(t)
	qemu, guest := fakeQEMUPath(t), fakeGuest(t)
	lg, logs := testLogger(t, "worker")
	w := &Worker{URL: url, Name: "twin", Queues: []string{"tcg-fake"}, CacheDir: t.TempDir(), Guest: guest, QEMU: qemu, Log: lg, Heartbeat: time.Second}
	ready := make(chan WorkerHost, 1)
	w.Ready = func(h WorkerHost) { ready <- h }
	ran := make(chan error, 1)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { ran <- w.Run(runCtx) }()
	var host WorkerHost
	select {
	case host = <-ready:
	case err := <-ran:
		t.Fatalf("Run = %v before it was ready", err)
	}
	if host.Instance == "" || workerOf(host.Instance) != "twin" {
		t.Errorf("instance %q; want twin/…", host.Instance)
	}
	c, err := connect(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.db.pool.Exec(ctx, "UPDATE lpmbisect_fleet_workers SET instance = 'twin/other', pid = 4242 WHERE name = 'twin'"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ran:
		if !errors.Is(err, ErrWorkerReplaced) || !strings.Contains(err.Error(), "pid 4242") {
			t.Errorf("Run after its name was taken = %v; want ErrWorkerReplaced naming pid 4242", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("worker still runs 30 s after its name was taken\n%s", logs)
	}
}

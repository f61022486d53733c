package main

// End-to-end tests of the fleet: a throwaway PostgreSQL (internal/testpg),
// `lpmbisect fleet migrate`, two `lpmbisect worker` processes, and clients
// that send their boots to the workers' queue with --db and --queue. They
// boot the real Debian kernels under icount with the small plan, so the
// counts do not care that the workers share this machine's two cores.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/flow/fleet"
	"github.com/lpmbisect/lpmbisect/present/report"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/testbed/testguest"
	"github.com/lpmbisect/lpmbisect/testbed/testkbuild"
	"github.com/lpmbisect/lpmbisect/testbed/testkernels"
	"github.com/lpmbisect/lpmbisect/testbed/testpg"
)

// fleetPlan is the small plan of the fleet tests: one benchmark, a few
// seconds per icount boot.
var fleetPlan = []string{"--accel", "icount", "--bench", "LPMTrie/op=lookup/keys=random", "--entries", "1000"}

// lockedBuffer collects a process's output for the test to read while it
// runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// cliWorker is an `lpmbisect worker` process.
type cliWorker struct {
	name, cache string
	cmd         *exec.Cmd
	log         *lockedBuffer
	done        chan struct{}
	code        int
}

// startWorker starts `lpmbisect worker` on queue icount with one slot, and
// the flags args (a later --queues wins), and waits until it has
// registered in the fleet. Its cache is under the test process's shared
// cache, where assertNoQEMULeft looks.
func startWorker(t *testing.T, db, name string, args ...string) *cliWorker {
	t.Helper()
	w := &cliWorker{name: name, cache: filepath.Join(sharedCache(t), fmt.Sprintf("worker-%s-%d", name, time.Now().UnixNano())),
		log: &lockedBuffer{}, done: make(chan struct{})}
	w.cmd = exec.Command(builtCLI(t), append([]string{"worker", "--db", db, "--queues", "icount", "--name", name, "--slots", "1",
		"--cache-dir", w.cache, "--guest", testguest.Path(t)}, args...)...)
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // a test that dies takes its workers along
	stderr, err := w.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatalf("start worker %s: %v", name, err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		started := false
		for sc.Scan() {
			fmt.Fprintln(w.log, sc.Text())
			if !started && strings.Contains(sc.Text(), "worker start name="+name) {
				started = true
				close(ready)
			}
		}
	}()
	go func() {
		w.cmd.Wait()
		w.code = w.cmd.ProcessState.ExitCode()
		close(w.done)
	}()
	t.Cleanup(func() {
		w.stop(t)
		t.Logf("worker %s log:\n%s", name, w.log)
	})
	select {
	case <-ready:
	case <-w.done:
		t.Fatalf("worker %s exited with %d before it started:\n%s", name, w.code, w.log)
	case <-time.After(time.Minute):
		t.Fatalf("worker %s did not start within a minute:\n%s", name, w.log)
	}
	return w
}

// stop ends the worker with SIGTERM, as systemd does, and checks that it
// says so in its exit code.
func (w *cliWorker) stop(t *testing.T) {
	select {
	case <-w.done:
		return
	default:
	}
	w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.done:
		if w.code != exitSIGTERM {
			t.Errorf("worker %s stopped by SIGTERM: exit %d; want %d", w.name, w.code, exitSIGTERM)
		}
	case <-time.After(time.Minute):
		w.cmd.Process.Kill()
		<-w.done
		t.Errorf("worker %s did not stop within a minute of SIGTERM", w.name)
	}
}

// kill ends the worker with SIGKILL, as the OOM killer or a power cut
// would.
func (w *cliWorker) kill() {
	w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.done
}

// running says whether the worker's log shows job started and not done.
func (w *cliWorker) running(job int64) bool {
	log := w.log.String()
	return strings.Contains(log, fmt.Sprintf("job start job=%d ", job)) && !strings.Contains(log, fmt.Sprintf("boot done job=%d ", job))
}

// qemus lists the QEMU processes that boot from the worker's cache.
func (w *cliWorker) qemus() string {
	out, _ := exec.Command("pgrep", "-a", "-f", "qemu-system-x86_64 .*"+regexp.QuoteMeta(w.cache)).Output()
	return strings.TrimSpace(string(out))
}

// migratedFleet starts PostgreSQL, migrates it with `lpmbisect fleet
// migrate` and returns its URL and password.
func migratedFleet(t *testing.T) (db, password string) {
	t.Helper()
	db = testpg.Start(t)
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	password, _ = u.User.Password()
	code, stdout, stderr := runCLI(t, "fleet", "migrate", "--db", db)
	t.Logf("lpmbisect fleet migrate: %s", strings.TrimSpace(stdout))
	if code != exitOK || !strings.Contains(stdout, "River schema version 0 → ") || !strings.Contains(stdout, "fleet schema version 0 → ") {
		t.Fatalf("lpmbisect fleet migrate: exit %d; want 0 and the versions\n%s\n%s", code, stdout, stderr)
	}
	noSecret(t, password, "fleet migrate", stdout, stderr)
	return db, password
}

// noSecret checks that a command's output does not show the password.
func noSecret(t *testing.T, password, what string, outputs ...string) {
	t.Helper()
	for _, out := range outputs {
		if password != "" && strings.Contains(out, password) {
			t.Errorf("%s shows the database password", what)
		}
	}
}

// fleetStatus reads `lpmbisect fleet --format json`.
func fleetStatus(t *testing.T, db, password string) *fleet.Status {
	t.Helper()
	code, stdout, stderr := runCLI(t, "fleet", "--db", db, "--format", "json")
	if code != exitOK {
		t.Fatalf("lpmbisect fleet --format json: exit %d\n%s", code, stderr)
	}
	noSecret(t, password, "fleet --format json", stdout, stderr)
	var st fleet.Status
	if err := json.Unmarshal([]byte(stdout), &st); err != nil {
		t.Fatalf("lpmbisect fleet --format json: %v\n%s", err, stdout)
	}
	return &st
}

// bootsPerWorker is what `lpmbisect fleet` says each worker ran.
func bootsPerWorker(st *fleet.Status) map[string]int {
	out := map[string]int{}
	for _, w := range st.Workers {
		out[w.Name] = w.Boots
	}
	return out
}

// compareArgs is compare of Debian 6.1 against 6.12 with the small plan,
// one benchmark, a JSON report and a fixed order, plus args.
func compareArgs(t *testing.T, args ...string) []string {
	t.Helper()
	line := append([]string{"compare", "--format", "json", "--no-controls", "--seed", "1"}, fleetPlan...)
	line = append(append(line, vmArgs(t)...), args...)
	return append(line, testkernels.Deb(t, testkernels.Debian61), testkernels.Deb(t, testkernels.Debian612))
}

// lookupRow returns the random lookup's row of compare's JSON report.
func lookupRow(t *testing.T, what string, code int, stdout, stderr string, took time.Duration) *report.Row {
	t.Helper()
	var doc report.Document
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("%s: exit %d, %v\n%s\n%s", what, code, err, stdout, stderr)
	}
	for i, r := range doc.Rows {
		if r.Benchmark == "LPMTrie/op=lookup/keys=random/entries=1000" && !r.Exact && r.DeltaPct != nil {
			row := &doc.Rows[i]
			t.Logf("%s (%s): exit %d, random lookup %.1f → %.1f %s (%+.2f%%), %s after %d+%d boots", what, took.Round(100*time.Millisecond),
				code, row.A.Center, row.B.Center, row.Unit, *row.DeltaPct, row.Verdict, row.A.Boots, row.B.Boots)
			return row
		}
	}
	t.Fatalf("%s: no random lookup row with a change in %+v\n%s", what, doc.Rows, stderr)
	return nil
}

// runLookupCompare runs compare with args and returns the random lookup's row,
// the exit code and stderr.
func runLookupCompare(t *testing.T, what string, args ...string) (*report.Row, int, string) {
	t.Helper()
	start := time.Now()
	code, stdout, stderr := runCLI(t, compareArgs(t, args...)...)
	return lookupRow(t, what, code, stdout, stderr, time.Since(start)), code, stderr
}

// knownLookup checks a compare's random lookup row against what a local
// compare of the same plan says (TestCompareDebianKernels' plan with 1000
// entries: 777.5 → 650.5 insn/op, −16.3 %, DIFFERENT after 2+2 boots under
// the documented jitter bounds): the same verdict from the same boots, the
// same change within the icount jitter.
//
// After the fleet's calibration, which the test takes from 2 boots to
// save time, the bound may fall short of a later boot (the calibrate
// package's documentation: few boots often underestimate the jitter);
// the row then says its boots disagree by more than the bound and falls
// back to the statistical rule, as designed. That is accepted only when
// the disagreement is icount's own boot-to-boot jitter (at most 0.2 %;
// boots of one image were seen 0.08 % apart): a boot whose result was
// lost, doubled or taken from another run is far outside it.
func knownLookup(t *testing.T, what string, code int, row *report.Row) {
	t.Helper()
	if code != exitOK || row.Verdict != compare.Different {
		t.Errorf("%s: exit %d, %s; want exit 0 and DIFFERENT, as locally", what, code, row.Verdict)
	}
	switch fallback := bootsDisagree(row.Notes); {
	case row.Rule == compare.RuleDeterministic && row.A.Boots == compare.DeterministicBoots && row.B.Boots == compare.DeterministicBoots:
	case row.Rule == compare.RuleStatistical && fallback > 0 && fallback <= 0.2:
		t.Logf("%s: the calibration's bound fell short: %q; decided by the statistical rule after %d+%d boots",
			what, strings.Join(row.Notes, "; "), row.A.Boots, row.B.Boots)
	default:
		t.Errorf("%s: %s rule after %d+%d boots (notes %q); want the deterministic rule after %d+%d, as locally, or its fallback for boots within icount's jitter",
			what, row.Rule, row.A.Boots, row.B.Boots, row.Notes, compare.DeterministicBoots, compare.DeterministicBoots)
	}
	if d := *row.DeltaPct; d < -16.6 || d > -16.0 {
		t.Errorf("%s: change %+.2f%%; want −16.3 %% ± 0.3 as locally (6.12 runs fewer instructions per lookup)", what, d)
	}
}

// bootsDisagree returns by how many percent a row's note says a side's
// boots disagree when the deterministic rule fell back (0: no such note).
func bootsDisagree(notes []string) float64 {
	for _, n := range notes {
		if m := disagreeNote.FindStringSubmatch(n); m != nil {
			if pct, err := strconv.ParseFloat(m[1], 64); err == nil {
				return pct
			}
		}
	}
	return 0
}

var disagreeNote = regexp.MustCompile(`boots of [AB] disagree by ([0-9.e+-]+)%, more than the jitter bound`)

// fleetBootsLikeLocal checks that the fleet's icount boots are a local
// compare's: the kernels travel as their ELF and boot through PVH (no
// blob that is a bzImage was booted), and every stored boot kept its
// phases for the results files.
func fleetBootsLikeLocal(t *testing.T, db string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var boots, withPhases, elfs, bzImages int
	if err := conn.QueryRow(context.Background(), `
SELECT count(*), count(*) FILTER (WHERE phases LIKE 'lpmbisect-phase: to-init %'),
	(SELECT count(*) FROM lpmbisect_fleet_blob_chunks WHERE n = 0 AND substr(data, 1, 4) = '\x7f454c46'::bytea),
	(SELECT count(*) FROM lpmbisect_fleet_blob_chunks WHERE n = 0 AND substr(data, 515, 4) = 'HdrS'::bytea)
FROM lpmbisect_fleet_boot_results`).Scan(&boots, &withPhases, &elfs, &bzImages); err != nil {
		t.Fatal(err)
	}
	t.Logf("fleet: %d boots stored, %d with phases; %d ELF kernel blobs, %d bzImage blobs", boots, withPhases, elfs, bzImages)
	if boots == 0 || withPhases != boots {
		t.Errorf("%d of %d stored icount boots kept their phases; want all", withPhases, boots)
	}
	if elfs != 2 || bzImages != 0 {
		t.Errorf("%d ELF and %d bzImage kernel blobs; want the two kernels' ELF, booted through PVH as locally", elfs, bzImages)
	}
}

func TestFleetCompare(t *testing.T) {
	bootsInParallel(t)
	vmArgs(t) // skips (or fails under CI) without QEMU
	db, password := migratedFleet(t)
	w1, w2 := startWorker(t, db, "w1"), startWorker(t, db, "w2")
	remote, code, stderr := runLookupCompare(t, "compare on two workers", "--db", db, "--queue", "icount")
	knownLookup(t, "compare on two workers", code, remote)
	noSecret(t, password, "compare --db", stderr)
	for _, want := range []string{"boots go to queue icount", "job start job=", "worker=w1", "worker=w2", "boot done job=",
		"statistics from no calibration of fleet queue icount for icount on fleet queue icount, QEMU ", "the documented defaults"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("compare --db --queue: progress lacks %q:\n%s", want, stderr)
		}
	}
	per := bootsPerWorker(fleetStatus(t, db, password))
	t.Logf("boots per worker on two workers: %v", per)
	if per["w1"] == 0 || per["w2"] == 0 || per["w1"]+per["w2"] != remote.A.Boots+remote.B.Boots {
		t.Errorf("boots per worker = %v; want the %d boots spread over w1 and w2", per, remote.A.Boots+remote.B.Boots)
	}
	fleetBootsLikeLocal(t, db)
	fleetCalibrate(t, db, password)

	// Again, with w1 killed two seconds into a boot of its own: once the
	// database has not heard from w1 for three heartbeats, w2 or the
	// client hands its job back and w2 runs it. River's rescuer would take
	// --stuck-after, 10 minutes by default: the job's errors say whose
	// doing the re-attempt was, and the log the time from kill to it.
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var maxJob int64
	conn.QueryRow(context.Background(), "SELECT COALESCE(max(id), 0) FROM river_job").Scan(&maxJob)
	type outcome struct {
		code           int
		stdout, stderr string
	}
	finished := make(chan outcome, 1)
	start := time.Now()
	// No insight pass this time: the first compare ran it through the fleet.
	line := compareArgs(t, "--no-insight", "--db", db, "--queue", "icount")
	go func() {
		code, stdout, stderr := runCLI(t, line...)
		finished <- outcome{code, stdout, stderr}
	}()
	// w1 is stopped (SIGSTOP) while a boot of the compare runs on it, and
	// killed only when that boot is still under way once it is stopped: a
	// boot of 2 s on a quiet host may end between a look and the kill.
	var killed int64
	for deadline := time.Now().Add(2 * time.Minute); killed == 0 && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var running int64
		conn.QueryRow(context.Background(), `
SELECT id FROM river_job WHERE id > $1 AND state = 'running' AND split_part(attempted_by[array_upper(attempted_by, 1)], '/', 1) = 'w1'
	AND attempted_at < now() - interval '1 second' LIMIT 1`, maxJob).Scan(&running)
		if running == 0 {
			continue
		}
		w1.cmd.Process.Signal(syscall.SIGSTOP)
		time.Sleep(100 * time.Millisecond) // for the log lines it wrote before
		if w1.running(running) && w1.qemus() != "" {
			killed = running
			break
		}
		w1.cmd.Process.Signal(syscall.SIGCONT)
	}
	if killed == 0 {
		t.Fatal("w1 ran no boot of the second compare within 2 minutes")
	}
	w1.kill()
	var killedAt time.Time // on the database's clock, as the jobs' timestamps
	conn.QueryRow(context.Background(), "SELECT now()").Scan(&killedAt)
	t.Logf("killed w1 (SIGKILL) during job %d, %s into the compare", killed, time.Since(start).Round(100*time.Millisecond))
	time.Sleep(time.Second)
	if q := w1.qemus(); q != "" {
		t.Errorf("QEMU of the killed worker left behind:\n%s", q)
	}
	var res outcome
	select {
	case res = <-finished:
	case <-time.After(15 * time.Minute):
		// Generous: on a busy host w2 alone runs the rest of the boots.
		// That the hand-back, not River's rescuer, sent the job back is
		// checked below from the job's errors, not from the time.
		t.Fatal("compare did not finish within 15 minutes of w1's kill (was the job not handed back?)")
	}
	row := lookupRow(t, "compare with w1 killed", res.code, res.stdout, res.stderr, time.Since(start))
	knownLookup(t, "compare with w1 killed", res.code, row)
	if want := "statistics from calibration of 6.12"; !strings.Contains(res.stderr, want) || !strings.Contains(res.stderr, " for fleet queue icount\n") {
		t.Errorf("compare --db --queue icount after calibrate does not say it used the fleet's calibration (%q … for fleet queue icount):\n%s", want, res.stderr)
	}
	if *row.DeltaPct != *remote.DeltaPct || row.A.Center != remote.A.Center || row.B.Center != remote.B.Center {
		t.Logf("compare with w1 killed: %.2f → %.2f (%+.3f%%); on two workers %.2f → %.2f (%+.3f%%): within the jitter", row.A.Center, row.B.Center,
			*row.DeltaPct, remote.A.Center, remote.B.Center, *remote.DeltaPct)
	}
	if !strings.Contains(res.stderr, fmt.Sprintf("job retry job=%d", killed)) && !strings.Contains(res.stderr, fmt.Sprintf("job start job=%d boots=", killed)) {
		t.Errorf("compare's progress does not say job %d ran again:\n%s", killed, res.stderr)
	}
	if want := regexp.MustCompile(`worker w1 stopped answering at \S+ \(no heartbeat for \S+\); its (boot runs|\d+ boots run) again jobs=`); !want.MatchString(res.stderr) {
		t.Errorf("compare's progress does not say when w1 stopped answering and that its boots run again (%s):\n%s", want, res.stderr)
	}
	// The killed attempt went back by the hand-back, not River's rescuer;
	// from the jobs' own timestamps: w1's last sign of life, the kill, the
	// hand-back and the start of the next attempt.
	var lastSeen, handedAt, restarted time.Time
	var handBacks int
	var errs string
	conn.QueryRow(context.Background(), `
SELECT (e->'lpmbisect_handed_back'->>'last_seen')::timestamptz, (e->>'at')::timestamptz, j.attempted_at,
	(SELECT count(*) FROM unnest(j.errors) x WHERE x ? 'lpmbisect_handed_back'), array_to_string(ARRAY(SELECT x->>'error' FROM unnest(j.errors) x), '; ')
FROM river_job j, unnest(j.errors) e WHERE j.id = $1 AND e ? 'lpmbisect_handed_back' LIMIT 1`, killed).Scan(&lastSeen, &handedAt, &restarted, &handBacks, &errs)
	t.Logf("job %d: w1 last heard from %s, killed %s, handed back %s, ran again %s: kill to re-attempt %s (errors: %s)", killed,
		lastSeen.Format("15:04:05.000"), killedAt.Format("15:04:05.000"), handedAt.Format("15:04:05.000"), restarted.Format("15:04:05.000"),
		restarted.Sub(killedAt).Round(100*time.Millisecond), errs)
	if handBacks != 1 || strings.Contains(errs, "Stuck job rescued") || !strings.Contains(errs, "worker w1 stopped answering at ") {
		t.Errorf("job %d: errors %q; want one hand-back from w1 and no rescue by River's rescuer", killed, errs)
	}
	// Every boot job of the run has its results stored once: one attempt
	// with a result, each boot of it once; the killed attempt has none.
	rows, err := conn.Query(context.Background(), `
SELECT j.id, j.attempt, count(r.job_id), count(DISTINCT r.attempt), COALESCE(min(r.attempt), 0), COALESCE(min(r.worker), '')
FROM river_job j LEFT JOIN lpmbisect_fleet_boot_results r ON r.job_id = j.id
WHERE j.id > $1 AND j.kind = $2 GROUP BY j.id, j.attempt ORDER BY j.id`, maxJob, fleet.KindBoot)
	if err != nil {
		t.Fatal(err)
	}
	jobs := 0
	for rows.Next() {
		var id int64
		var attempts, results, attemptsStored, attempt int
		var worker string
		if err := rows.Scan(&id, &attempts, &results, &attemptsStored, &attempt, &worker); err != nil {
			t.Fatal(err)
		}
		jobs++
		if results != 1 || attemptsStored != 1 {
			t.Errorf("job %d (%d attempts): %d results of %d attempts stored; want one result", id, attempts, results, attemptsStored)
		}
		if id == killed {
			t.Logf("job %d: result of attempt %d on %s", id, attempt, worker)
			if attempt < 2 || worker != "w2" {
				t.Errorf("killed job %d: result of attempt %d on %s; want a later attempt on w2", id, attempt, worker)
			}
		}
	}
	rows.Close()
	if want := row.A.Boots + row.B.Boots; jobs != want {
		t.Errorf("%d boot jobs in the second compare; want %d", jobs, want)
	}
	t.Logf("compare with w1 killed: %s; boots per worker so far %v", time.Since(start).Round(100*time.Millisecond), bootsPerWorker(fleetStatus(t, db, password)))

	// Ctrl-C of a client cancels its outstanding jobs: the running boot on
	// w2 ends, the queued ones never start.
	conn.QueryRow(context.Background(), "SELECT COALESCE(max(id), 0) FROM river_job").Scan(&maxJob)
	// A process of its own, so that its SIGINT reaches no other test.
	line = compareArgs(t, "--db", db, "--queue", "icount")
	client := exec.Command(builtCLI(t), line...)
	var clientOut, clientErr bytes.Buffer
	client.Stdout, client.Stderr = &clientOut, &clientErr
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		client.Wait()
		finished <- outcome{client.ProcessState.ExitCode(), clientOut.String(), clientErr.String()}
	}()
	running := 0
	for deadline := time.Now().Add(time.Minute); running == 0 && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		conn.QueryRow(context.Background(), "SELECT count(*) FROM river_job WHERE id > $1 AND state = 'running'", maxJob).Scan(&running)
	}
	if running == 0 {
		t.Fatal("no job of the third compare ran within a minute")
	}
	client.Process.Signal(syscall.SIGINT)
	select {
	case res = <-finished:
	case <-time.After(time.Minute):
		t.Fatal("compare did not end within a minute of SIGINT")
	}
	if res.code != exitSIGINT {
		t.Errorf("compare interrupted by SIGINT: exit %d; want %d\n%s", res.code, exitSIGINT, res.stderr)
	}
	var open int
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		conn.QueryRow(context.Background(), "SELECT count(*) FROM river_job WHERE id > $1 AND state NOT IN ('cancelled', 'completed', 'discarded')", maxJob).Scan(&open)
		if open == 0 && w2.qemus() == "" {
			break
		}
	}
	if open != 0 || w2.qemus() != "" {
		t.Errorf("after SIGINT of the client: %d of its jobs not ended, QEMU of w2: %q; want every job canceled and no boot left", open, w2.qemus())
	}
	w2.stop(t)
	assertNoQEMULeft(t)
}

// fleetCalibrate calibrates the fleet's icount host class with boots on
// its workers, stored in the fleet database, for the compares after it
// (which must read that calibration, not this host's, and say so).
func fleetCalibrate(t *testing.T, db, password string) {
	t.Helper()
	start := time.Now()
	line := append(append(append([]string{"calibrate", "--format", "json", "--boots", "2", "--db", db, "--queue", "icount"}, fleetPlan...), vmArgs(t)...),
		testkernels.Deb(t, testkernels.Debian612))
	code, stdout, stderr := runCLI(t, line...)
	t.Logf("calibrate --db --queue icount (%s): exit %d\n%s", time.Since(start).Round(time.Second), code, stderr)
	if code != exitOK || !strings.Contains(stderr, "boots go to queue icount") || !strings.Contains(stderr, "calibration stored in fleet postgres://") {
		t.Fatalf("calibrate --db --queue icount: exit %d; want 0, its boots on the queue and the calibration in the fleet\n%s", code, stderr)
	}
	noSecret(t, password, "calibrate --db", stdout, stderr)
	var cal struct {
		Key struct {
			Host struct{ Name string } `json:"host"`
			QEMU string                `json:"qemu"`
		} `json:"key"`
	}
	if err := json.Unmarshal([]byte(stdout), &cal); err != nil || cal.Key.Host.Name != "fleet queue icount" || cal.Key.QEMU == "" {
		t.Errorf("calibrate --format json = %+v, %v; want the key of host class \"fleet queue icount\" with its QEMU", cal, err)
	}
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var rows int
	var host string
	conn.QueryRow(context.Background(), "SELECT count(*), max(key->'host'->>'name') FROM lpmbisect_fleet_calibrations").Scan(&rows, &host)
	if rows != 1 || host != "fleet queue icount" {
		t.Errorf("fleet calibrations: %d rows, host %q; want 1 of \"fleet queue icount\"", rows, host)
	}
}

// fakeMake is the make of the fleet's build worker in TestFleetBisect: it
// "builds" a commit of the test repository with its build.sh (the Debian
// kernel the commit names, a compiler error, or a truncated image) and
// puts the image where kbuild leaves a bzImage. Config targets leave an
// empty .config.
const fakeMake = testkbuild.MakeArgs + `for t in $targets; do
  case "$t" in
    *config) touch "$out/.config" ;;
    bzImage)
      built=$(cd "$src" && LPMBISECT_BUILD_DIR="$out/fake" ./build.sh) || exit 2
      mkdir -p "$out/arch/x86/boot"
      cp "$built"/boot/vmlinuz-* "$out/arch/x86/boot/bzImage" ;;
  esac
done
`

// TestFleetBisect is the throwaway-repository bisection of
// TestBisectRepoOnRealKernelsResumes on the fleet: boots on two workers,
// builds as build jobs on the first (whose make copies the Debian image the
// commit names, see fakeMake). It must name the local culprit, skip the
// commit that does not build, and leave every build to the worker. It
// takes 4 to 8 minutes on a 2-core machine,
// which the suite's 20-minute budget cannot spare beside the local
// bisections, so it runs with LPMBISECT_FLEET_BISECT=1:
//
//	LPMBISECT_FLEET_BISECT=1 LPMBISECT_REQUIRE_VM=1 go test -run TestFleetBisect -v ./cmd/lpmbisect
func TestFleetBisect(t *testing.T) {
	if os.Getenv("LPMBISECT_FLEET_BISECT") != "1" {
		t.Skip("set LPMBISECT_FLEET_BISECT=1 to bisect on two workers, builds on one (4 to 8 minutes)")
	}
	args := vmArgs(t)
	dir, commits, db, password := buildingFleet(t)
	state := t.TempDir()
	start := time.Now()
	code, stdout, stderr := runCLI(t, append(append([]string{"bisect", "--repo", dir, "--good", commits[0], "--bad", commits[8], "--reverse",
		"--state", state, "--db", db, "--queue", "icount", "--build-queue", "build", "--tree", "culprit"}, bisectArgs...), args...)...)
	t.Logf("bisect --db --queue icount --build-queue build (%s):\n%s", time.Since(start).Round(time.Second), stdout)
	if code != exitOK {
		t.Fatalf("bisect --db --queue icount --build-queue build: exit %d; want 0 as locally\n%s", code, stderr)
	}
	// The culprit of the local bisection (TestBisectRepoOnRealKernelsResumes).
	if !strings.Contains(stdout, "first improved commit: "+commits[6]) || !strings.Contains(stdout, "confirmed") {
		t.Errorf("bisect on the fleet does not name commit 6 (%s) as confirmed:\n%s", commits[6][:12], stderr)
	}
	noSecret(t, password, "bisect --db", stdout, stderr)
	st := readState(t, state, "git")
	skips := map[string]string{}
	for _, s := range st.Steps {
		if s.Verdict.Class == campaign.Skip {
			skips[s.Commit] = s.Verdict.Reason
		}
	}
	if !strings.Contains(skips[commits[4]], "build failed") || !strings.Contains(skips[commits[4]], "expected ';'") {
		t.Errorf("skipped steps = %v; want commit 4 (build failed, with the compiler's error)", skips)
	}
	per := bootsPerWorker(fleetStatus(t, db, password))
	t.Logf("boots per worker: %v", per)
	if per["w1"] == 0 || per["w2"] == 0 {
		t.Errorf("boots per worker = %v; want both workers to have booted", per)
	}
	// Every commit the bisection built was a build job of w1's.
	built := buildJobs(t, db)
	for commit := range st.Kernels {
		if want := fmt.Sprintf("w1 ok=%v", commit != commits[4]); built[commit] != want {
			t.Errorf("build job of %s = %q; want %q", commit[:12], built[commit], want)
		}
	}
	if len(st.Kernels) < 3 || len(built) != len(st.Kernels) {
		t.Errorf("%d build jobs for the %d commits the bisection built; want one each, at least 3", len(built), len(st.Kernels))
	}
	assertNoQEMULeft(t)
}

func TestFleetUsage(t *testing.T) {
	guest := fakeGuest(t)
	deb := filepath.Join(t.TempDir(), "vmlinuz") // never read: every case fails first
	const db = "postgres://lpmbisect:s3cret@127.0.0.1:1/fleet"
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"queue without db", []string{"compare", "--accel", "icount", "--queue", "icount", "--guest", guest, deb, deb}, exitUsage, "--queue icount needs the fleet database"},
		{"db without queue", []string{"compare", "--db", db, "--guest", guest, deb, deb}, exitUsage, "give both"},
		{"not postgres", []string{"compare", "--accel", "icount", "--db", "/tmp/history.db", "--queue", "icount", "--guest", guest, deb, deb}, exitUsage, "not a postgres:// URL"},
		{"build queue", []string{"compare", "--accel", "icount", "--db", db, "--queue", "build", "--guest", guest, deb, deb}, exitUsage, "is a build queue"},
		{"bad queue", []string{"compare", "--accel", "icount", "--db", db, "--queue", "gpu", "--guest", guest, deb, deb}, exitUsage, "not a queue name"},
		{"other accel", []string{"compare", "--accel", "tcg", "--db", db, "--queue", "icount", "--guest", guest, deb, deb}, exitUsage, "give --accel icount"},
		{"stuck too short", []string{"compare", "--accel", "icount", "--db", db, "--queue", "icount", "--stuck-after", "1s", "--guest", guest, deb, deb}, exitUsage, "--stuck-after 1s"},
		{"database down", []string{"compare", "--accel", "icount", "--db", db, "--queue", "icount", "--guest", guest, deb, deb}, exitInfra, "is the server up"},
		{"bisect without db", []string{"bisect", "--images", deb, "--queue", "icount", "--guest", guest}, exitUsage, "--queue icount needs the fleet database"},
		{"build queue without db", []string{"bisect", "--repo", t.TempDir(), "--good", "a", "--bad", "b", "--build-queue", "build", "--tree", "linux", "--guest", guest}, exitUsage, "--build-queue build needs the fleet database"},
		{"build queue without tree", []string{"bisect", "--repo", t.TempDir(), "--good", "a", "--bad", "b", "--db", db, "--build-queue", "build", "--guest", guest}, exitUsage, "needs --tree NAME"},
		{"build queue of boots", []string{"bisect", "--repo", t.TempDir(), "--good", "a", "--bad", "b", "--db", db, "--build-queue", "icount", "--tree", "linux", "--guest", guest}, exitUsage, "is a boot queue"},
		{"build queue and command", []string{"bisect", "--repo", t.TempDir(), "--good", "a", "--bad", "b", "--db", db, "--build-queue", "build", "--tree", "linux", "--build-command", "make", "--guest", guest}, exitUsage, "build jobs carry no commands"},
		{"build queue down", []string{"bisect-run", "--db", db, "--build-queue", "build", "--tree", "linux", "--guest", guest}, exitRunAbort, "is the server up"},
		{"calibrate without db", []string{"calibrate", "--accel", "icount", "--queue", "icount", "--guest", guest, deb}, exitUsage, "--queue icount needs the fleet database"},
		{"fleet without db", []string{"fleet"}, exitUsage, "fleet needs the fleet database"},
		{"fleet format", []string{"fleet", "--db", db, "--format", "html"}, exitUsage, "use text or json"},
		{"fleet down", []string{"fleet", "--db", db}, exitInfra, "is the server up"},
		{"migrate without db", []string{"fleet", "migrate"}, exitUsage, "fleet migrate needs the fleet database"},
		{"worker without queues", []string{"worker", "--db", db, "--guest", guest}, exitUsage, "worker needs --queues"},
		{"worker bad queue", []string{"worker", "--db", db, "--queues", "icount,gpu", "--guest", guest}, exitUsage, "not a queue name"},
		{"worker build without trees", []string{"worker", "--db", db, "--queues", "build", "--guest", guest}, exitUsage, "--tree NAME=DIR"},
		{"worker bad tree", []string{"worker", "--db", db, "--queues", "build", "--tree", "linux", "--guest", guest}, exitUsage, "give NAME=DIR"},
		// A build queue: its probe needs no QEMU, so the database is the
		// first thing the worker finds missing, on any machine.
		{"worker down", []string{"worker", "--db", db, "--queues", "build", "--tree", "linux=" + t.TempDir(), "--guest", guest, "--cache-dir", t.TempDir()}, exitInfra, "is the server up"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, c.args...)
			if code != c.code || !strings.Contains(stderr, c.want) {
				t.Errorf("lpmbisect %s = exit %d, %q; want exit %d and %q", strings.Join(c.args, " "), code, stderr, c.code, c.want)
			}
			noSecret(t, "s3cret", c.name, stdout, stderr)
		})
	}
}

// TestNeedsMigrationHint checks that the commands name the migration an
// unmigrated database needs, once: the libraries' errors name no command.
func TestNeedsMigrationHint(t *testing.T) {
	db := testpg.Start(t)
	cfg := filepath.Join(t.TempDir(), "nightly.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[nightly]\ndb = %q\n", db)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		hint string
	}{
		{[]string{"fleet", "--db", db}, "fleet database needs migrating (run lpmbisect fleet migrate --db URL, as the fleet's operator)"},
		{[]string{"worker", "--db", db, "--queues", "icount", "--guest", fakeGuest(t), "--cache-dir", t.TempDir()}, "(run lpmbisect fleet migrate --db URL"},
		{[]string{"history", "--config", cfg}, "history database needs migrating (lpmbisect history migrate --config " + cfg + ")"},
	} {
		code, _, stderr := runCLI(t, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.hint) || strings.Count(stderr, "migrate") != 1 {
			t.Errorf("lpmbisect %s on an unmigrated database = exit %d, %q; want exit %d and the hint %q once", c.args[0], code, stderr, exitUsage, c.hint)
		}
	}
}

// TestFleetSeries measures the series of TestSeriesOnRealKernels on the
// fleet: every patch is a build job of the first worker (see fakeMake),
// boots go to both, and patch N+1's build job runs while patch N boots.
// It must give the local series' statuses and verdicts. Like
// TestFleetBisect it takes minutes on a 2-core machine, so it runs with
// LPMBISECT_FLEET_SERIES=1:
//
//	LPMBISECT_FLEET_SERIES=1 LPMBISECT_REQUIRE_VM=1 go test -run TestFleetSeries -v ./cmd/lpmbisect
func TestFleetSeries(t *testing.T) {
	if os.Getenv("LPMBISECT_FLEET_SERIES") != "1" {
		t.Skip("set LPMBISECT_FLEET_SERIES=1 to measure a series on two workers, builds on one (minutes)")
	}
	args := vmArgs(t)
	dir, commits, db, password := buildingFleet(t)
	state := t.TempDir()
	start := time.Now()
	code, stdout, stderr := runCLI(t, append(append([]string{"series", "--repo", dir, "--state", state, "--format", "json",
		"--db", db, "--queue", "icount", "--build-queue", "build", "--tree", "culprit"}, bisectArgs...), append(args, "--boot-timeout", "4m", commits[1]+".."+commits[7])...)...)
	t.Logf("series --db --queue icount --build-queue build (%s):\n%s", time.Since(start).Round(time.Second), stderr)
	if code != exitInconclusive {
		t.Fatalf("series on the fleet: exit %d; want %d as locally (a patch did not build, one did not boot)", code, exitInconclusive)
	}
	checkRealSeries(t, stdout)
	noSecret(t, password, "series --db", stdout, stderr)
	// Every commit of the series and its base was a build job of w1's.
	built := buildJobs(t, db)
	for i := 1; i <= 7; i++ {
		if want := fmt.Sprintf("w1 ok=%v", i != 4); built[commits[i]] != want {
			t.Errorf("build job of commit %d = %q; want %q", i, built[commits[i]], want)
		}
	}
	per := bootsPerWorker(fleetStatus(t, db, password))
	t.Logf("boots per worker: %v", per)
	if per["w1"] == 0 || per["w2"] == 0 {
		t.Errorf("boots per worker = %v; want both workers to have booted", per)
	}
	assertNoQEMULeft(t)
}

// buildingFleet is the fleet of TestFleetBisect and TestFleetSeries: the
// bisection tests' repository (culpritRepoWith, with what package build
// looks for in a kernel tree beside build.sh), worker w1 on the icount
// and build queues, which builds it as tree "culprit" with fakeMake, and
// worker w2 on the icount queue.
func buildingFleet(t *testing.T) (dir string, commits []string, db, password string) {
	t.Helper()
	dir, commits = culpritRepoWith(t, map[string]string{"Makefile": "# not a kernel: build.sh builds\n", "Kconfig": "# not a kernel: build.sh builds\n"})
	db, password = migratedFleet(t)
	tools := t.TempDir()
	mk := filepath.Join(tools, "make")
	cfg := filepath.Join(tools, "worker.toml")
	if err := os.WriteFile(mk, []byte(fakeMake), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[build]\nmake = %q\n", mk)), 0o644); err != nil {
		t.Fatal(err)
	}
	startWorker(t, db, "w1", "--queues", "icount,build", "--tree", "culprit="+dir, "--config", cfg)
	startWorker(t, db, "w2")
	return dir, commits, db, password
}

// buildJobs reads the fleet's build results: commit → "worker ok=bool".
func buildJobs(t *testing.T, db string) map[string]string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	built := map[string]string{}
	rows, err := conn.Query(context.Background(), "SELECT commit, worker, ok FROM lpmbisect_fleet_build_results")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var commit, worker string
		var ok bool
		if err := rows.Scan(&commit, &worker, &ok); err != nil {
			t.Fatal(err)
		}
		built[commit] = fmt.Sprintf("%s ok=%v", worker, ok)
	}
	t.Logf("build jobs: %v", built)
	return built
}

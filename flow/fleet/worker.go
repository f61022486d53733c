package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/internal/cachefile"
	"github.com/lpmbisect/lpmbisect/internal/version"
	"github.com/lpmbisect/lpmbisect/internal/words"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Worker works the jobs of some queues on this host: boots under the
// accelerator its queues name, builds for build queues.
type Worker struct {
	// URL is the fleet database (postgres://…); its password never
	// appears in logs or errors.
	URL string
	// Name identifies the worker in the workers table, in River (its
	// client ID) and in the clients' progress; default: the host name.
	// Two workers on one host need two names.
	Name string
	// Queues to work (see parseQueue). Queues whose accelerator does not
	// work here are dropped at start, with the reason in the log.
	Queues []string
	// CacheDir holds fetched blobs, boot run directories and build trees.
	CacheDir string
	// Guest is this lpmbisect's guest binary. Its SHA-256 must be the one
	// a job names: a worker with another guest refuses the job.
	Guest string
	// QEMU is the QEMU binary (default qemu-system-x86_64).
	QEMU string
	// Slots is how many icount boots run at once (0: one per CPU).
	// Wall-clock queues and build queues run one job at a time.
	Slots int
	// KVMProbeKernel is a kernel (a bzImage, a .deb) to probe KVM with
	// at start, when no verdict on this host's KVM is kept in CacheDir
	// (vmrunner.CheckKVM, as every run decides); without a verdict nor a
	// kernel, kvm queues are dropped.
	KVMProbeKernel string
	// KVMDevice is the KVM device (default vmrunner.defaultKVMDevice).
	KVMDevice string
	// Trees are the source trees build jobs name, Builds the build
	// configurations they name.
	Trees  map[string]Tree
	Builds map[string]BuildConfig
	// Heartbeat is how often the workers table hears from this worker
	// (default 5 s); a worker not heard from in three beats is taken for
	// dead and its running jobs are handed back to the queue.
	Heartbeat time.Duration
	// Log gets one line per event (start, each job, database trouble).
	Log *log.Logger
	// Ready, when set, is called once the worker works its queues.
	Ready func(WorkerHost)
}

// WorkerCacheDir is a worker's cache directory when none is given:
// worker-NAME in lpmbisect's cache (measure.DefaultCacheDir), NAME the
// worker's name ("": the host name, as Worker.Name).
func WorkerCacheDir(name string) (string, error) {
	base, err := measure.DefaultCacheDir()
	if err != nil {
		return "", err
	}
	if name == "" {
		name, _ = os.Hostname()
	}
	return filepath.Join(base, "worker-"+name), nil
}

// WorkerHost is what a worker records about its host.
type WorkerHost struct {
	Name string `json:"name"`
	// Instance is the worker process's River client ID (name/random):
	// a restarted worker has a new one.
	Instance    string   `json:"instance"`
	Host        string   `json:"host"`
	PID         int      `json:"pid"`
	CPUModel    string   `json:"cpu_model"` // the host CPU's model name
	Cores       int      `json:"cores"`
	QEMUVersion string   `json:"qemu"`
	IcountCPU   string   `json:"icount_cpu"` // the CPU model icount boots emulate here
	Version     string   `json:"version"`    // lpmbisect
	GuestSHA256 string   `json:"guest_sha256"`
	Accels      []string `json:"accels"`  // accelerators that work here
	Queues      []string `json:"queues"`  // queues worked
	Dropped     []string `json:"dropped"` // "queue: why" for queues not worked
}

// Class is the host class of the worker's icount boots.
func (h WorkerHost) Class() HostClass {
	return HostClass{QEMUVersion: h.QEMUVersion, CPUModel: h.IcountCPU}
}

// Errors of Worker.Run.
var (
	// ErrNoQueues: none of the worker's queues can be worked here.
	ErrNoQueues = errors.New("no queue left to work")
	// ErrWorkerNameTaken: a live worker already has this name.
	ErrWorkerNameTaken = errors.New("a live worker has this name")
	// ErrWorkerReplaced: while this worker did not answer, it was taken
	// for dead and another process registered its name; it stops.
	ErrWorkerReplaced = errors.New("taken for dead and replaced by another process of the same name")
)

// The notification channel of job events: "start <id>" and "done <id>".
const notifyChannel = "lpmbisect_fleet"

// A worker not heard from for deadAfterBeats heartbeats is taken for dead
// (the SQL of register, workers and handBackSQL says so).
const defaultHeartbeat = 5 * time.Second

// snoozeOtherClass is how long a boot for another host class is put back
// before any worker may fetch it again, at least: snoozeFor adds up to
// a second at random.
const snoozeOtherClass = 2 * time.Second

// snoozeFor is the snooze of a boot for another host class. A fixed one
// favours the worker that put the job back: measured here with two idle
// one-slot workers (TestIcountHostClass), the wrong one took the same job
// back 40 to 100 times in a row, for 26 s to 4 min, before the right one
// fetched it. Up to a second of jitter, River's fetch poll interval, cut
// that to 5 to 9 times (9 to 14 s).
func snoozeFor() time.Duration {
	return snoozeOtherClass + rand.N(time.Second)
}

// storeGrace is how long a stopping worker keeps trying to store results
// of boots that ended.
const storeGrace = 30 * time.Second

// runningWorker is a Worker at work.
type runningWorker struct {
	*Worker
	db     *database
	host   WorkerHost
	queues map[string]Queue
	// kvm is what the probe found of KVM (nil when no kvm queue was
	// asked for): a boot that KVM fails is kept in its verdict.
	kvm      *vmrunner.KVMStatus
	blobDir  string
	stopping atomic.Bool
	// storeCtx outlives the jobs' contexts: results of a boot that ended
	// are stored even while the worker stops (for storeGrace).
	storeCtx context.Context
	// since is when (database clock) this worker's current run of
	// heartbeats without a failure began: it judges other workers dead
	// only for silences it could have heard.
	since time.Time
}

// Run works the queues until ctx ends, then stops: running boots are
// killed and their jobs handed back to the queue at once (River's
// JobSnooze(0)), so another worker takes them.
func (w *Worker) Run(ctx context.Context) error {
	rw, err := w.running()
	if err != nil {
		return err
	}
	if err := rw.pickQueues(ctx); err != nil {
		return err
	}
	db, err := open(ctx, w.URL)
	if err != nil {
		return err
	}
	defer db.close()
	rw.db = db
	if err := db.checkSchema(ctx); err != nil {
		return err
	}
	if err := rw.register(ctx); err != nil {
		return err
	}
	logEvent(w.Log, "worker start", "name", w.Name, "db", db.loc, "queues", rw.host.Queues, "accels", rw.host.Accels,
		"qemu", rw.host.QEMUVersion, "cpu", rw.host.CPUModel, "cores", rw.host.Cores, "version", rw.host.Version, "guest", words.ShortHash(rw.host.GuestSHA256))

	client, err := rw.riverClient()
	if err != nil {
		return db.errorf(err, "start River")
	}
	storeCtx, cancelStore := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelStore()
	rw.storeCtx = storeCtx
	if err := client.Start(context.WithoutCancel(ctx)); err != nil {
		return db.errorf(err, "start River")
	}
	if w.Ready != nil {
		w.Ready(rw.host)
	}
	beatErr := rw.heartbeat(ctx)
	return rw.stop(ctx, client, beatErr, cancelStore)
}

// running checks w and fills in its defaults, and returns the worker as
// it runs: its host, by name, guest and QEMU.
func (w *Worker) running() (*runningWorker, error) {
	if w.Log == nil {
		w.Log = log.New(io.Discard, "", 0)
	}
	if w.Heartbeat <= 0 {
		w.Heartbeat = defaultHeartbeat
	}
	if w.QEMU == "" {
		w.QEMU = vmrunner.DefaultQEMU
	}
	if w.CacheDir == "" {
		return nil, errors.New("worker: no cache directory")
	}
	if err := os.MkdirAll(w.CacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("worker: cache directory: %w", err)
	}
	if w.Guest == "" {
		return nil, errors.New("worker: no guest binary (its hash identifies the lpmbisect version jobs need)")
	}
	guestSHA, err := cachefile.SHA256(w.Guest)
	if err != nil {
		return nil, fmt.Errorf("worker: guest: %w", err)
	}
	hostname, _ := os.Hostname()
	if w.Name == "" {
		w.Name = hostname
	}
	if !shortName.MatchString(w.Name) {
		return nil, fmt.Errorf("worker: name %q: letters, digits, '.', '_' or '-', at most 64", w.Name)
	}
	rw := &runningWorker{Worker: w, queues: map[string]Queue{}, blobDir: filepath.Join(w.CacheDir, "blobs")}
	qemuVersion, _ := vmrunner.QEMUVersion(w.QEMU)
	rw.host = WorkerHost{Name: w.Name, Instance: newInstance(w.Name), Host: hostname, PID: os.Getpid(), CPUModel: hostCPUModel(), Cores: runtime.NumCPU(),
		QEMUVersion: qemuVersion, IcountCPU: vmrunner.CPUModel(wire.AccelIcount), Version: version.String(), GuestSHA256: guestSHA}
	return rw, nil
}

// stop stops the worker once its heartbeat ended (with beatErr, or ctx):
// the jobs' contexts end now, and the results of boots that ended get
// storeGrace to reach the database (then cancelStore); the worker's row
// records the stop.
func (rw *runningWorker) stop(ctx context.Context, client *river.Client[pgx.Tx], beatErr error, cancelStore context.CancelFunc) error {
	w, db := rw.Worker, rw.db
	rw.stopping.Store(true)
	why := context.Cause(ctx)
	if beatErr != nil {
		why = beatErr
	}
	logEvent(w.Log, "worker stopping", "name", w.Name, "why", why)
	stopped := make(chan error, 1)
	go func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), storeGrace+10*time.Second)
		defer cancel()
		stopped <- client.StopAndCancel(stopCtx)
	}()
	timer := time.AfterFunc(storeGrace, cancelStore)
	defer timer.Stop()
	stopErr := <-stopped
	endCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := db.pool.Exec(endCtx, "UPDATE lpmbisect_fleet_workers SET stopped_at = now(), last_seen = now() WHERE name = $1 AND instance = $2",
		w.Name, rw.host.Instance); err != nil {
		logEvent(w.Log, "worker stop not recorded", "error", db.scrub.Error(err))
	}
	logEvent(w.Log, "worker stopped", "name", w.Name)
	if beatErr != nil {
		return beatErr
	}
	if stopErr != nil {
		return db.errorf(stopErr, "stop River")
	}
	return nil
}

// pickQueues parses the queues and keeps those that can be worked here.
func (rw *runningWorker) pickQueues(ctx context.Context) error {
	want := map[wire.Accel]bool{}
	var parsed []Queue
	for _, name := range rw.Queues {
		q, err := parseQueue(name)
		if err != nil {
			return fmt.Errorf("worker: %w", err)
		}
		if _, dup := rw.queues[q.Name]; dup || slices.Contains(parsed, q) {
			continue
		}
		parsed = append(parsed, q)
		if !q.Build() {
			want[q.Accel] = true
		}
	}
	if len(parsed) == 0 {
		return fmt.Errorf("worker: %w: none given", ErrNoQueues)
	}
	works, kvm := probe{qemu: rw.QEMU, kvmKernel: rw.KVMProbeKernel, device: rw.KVMDevice, cacheDir: rw.CacheDir}.run(ctx, want)
	rw.kvm = kvm
	for _, a := range slices.Sorted(maps.Keys(works)) {
		if works[a] == nil {
			rw.host.Accels = append(rw.host.Accels, string(a))
		}
	}
	wallClock, icount := []string{}, false
	for _, q := range parsed {
		var why string
		switch {
		case q.Build() && len(rw.Builds) == 0:
			why = "no build configurations"
		case q.Build() && len(rw.Trees) == 0:
			why = "no source trees"
		case !q.Build() && works[q.Accel] != nil:
			why = fmt.Sprintf("%s does not work here: %v", q.Accel, works[q.Accel])
		}
		if why != "" {
			rw.host.Dropped = append(rw.host.Dropped, q.Name+": "+why)
			logEvent(rw.Log, "queue dropped", "queue", q.Name, "why", why)
			continue
		}
		rw.queues[q.Name] = q
		rw.host.Queues = append(rw.host.Queues, q.Name)
		if q.WallClock() {
			wallClock = append(wallClock, q.Name)
		}
		icount = icount || q.Accel == wire.AccelIcount
	}
	if len(rw.queues) == 0 {
		return fmt.Errorf("worker: %w: %s", ErrNoQueues, strings.Join(rw.host.Dropped, "; "))
	}
	if len(wallClock) > 0 && (len(rw.queues) > 1) {
		logEvent(rw.Log, "warning: wall-clock queues share this host with other queues; their boots may overlap other jobs and measure the overlap",
			"wall_clock", wallClock, "queues", rw.host.Queues)
	}
	return nil
}

// register records the worker's host in the workers table; a live worker
// of the same name is an error. A dead one's row is taken over: its jobs
// still running are handed back by whoever looks next (handBackSQL), since
// their process is no longer in the table.
func (rw *runningWorker) register(ctx context.Context) error {
	h := rw.host
	err := rw.db.pool.QueryRow(ctx, `
INSERT INTO lpmbisect_fleet_workers AS w (name, instance, host, pid, cpu_model, cores, qemu_version, icount_cpu, version, guest_sha256,
	accels, queues, dropped, heartbeat_ms, started_at, last_seen)
VALUES ($1, $14, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, now(), now())
ON CONFLICT (name) DO UPDATE SET instance = EXCLUDED.instance, host = EXCLUDED.host, pid = EXCLUDED.pid, cpu_model = EXCLUDED.cpu_model,
	cores = EXCLUDED.cores, qemu_version = EXCLUDED.qemu_version, icount_cpu = EXCLUDED.icount_cpu,
	version = EXCLUDED.version, guest_sha256 = EXCLUDED.guest_sha256, accels = EXCLUDED.accels,
	queues = EXCLUDED.queues, dropped = EXCLUDED.dropped, heartbeat_ms = EXCLUDED.heartbeat_ms, started_at = now(), last_seen = now(), stopped_at = NULL
WHERE w.stopped_at IS NOT NULL OR w.last_seen < now() - `+silence("w.heartbeat_ms")+`
RETURNING now()`,
		h.Name, h.Host, h.PID, h.CPUModel, h.Cores, h.QEMUVersion, h.IcountCPU, h.Version, h.GuestSHA256,
		nonNil(h.Accels), nonNil(h.Queues), nonNil(h.Dropped), rw.Heartbeat.Milliseconds(), h.Instance).Scan(&rw.since)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("worker %s: %w (give this one another name, or stop the other)", h.Name, ErrWorkerNameTaken)
	}
	return rw.db.errorf(err, "register worker %s", h.Name)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// heartbeat updates last_seen until ctx ends, retrying a database that
// went away with backoff and saying so, and after each beat hands back the
// jobs of workers that stopped answering (handBackSQL). It returns
// ErrWorkerReplaced, and the worker stops, when another process has taken
// this worker's name.
func (rw *runningWorker) heartbeat(ctx context.Context) error {
	tick := time.NewTicker(rw.Heartbeat)
	defer tick.Stop()
	failing := false
	wait := retryFirst
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		beatCtx, cancel := context.WithTimeout(ctx, rw.Heartbeat)
		var now time.Time
		err := rw.db.pool.QueryRow(beatCtx, "UPDATE lpmbisect_fleet_workers SET last_seen = now(), stopped_at = NULL WHERE name = $1 AND instance = $2 RETURNING now()",
			rw.Name, rw.host.Instance).Scan(&now)
		cancel()
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return rw.replaced(ctx)
		case err == nil && failing:
			failing, wait = false, retryFirst
			rw.since = now
			logEvent(rw.Log, "database back", "op", "heartbeat")
		case err != nil && ctx.Err() == nil:
			failing = true
			logEvent(rw.Log, "database unreachable", "op", "heartbeat", "retry_in", min(wait, rw.Heartbeat), "error", rw.db.scrub.Text(err.Error()))
			wait = min(2*wait, retryMax)
		}
		if err == nil {
			rw.handBack(ctx)
		}
	}
}

// handBack hands back the jobs of workers that stopped answering, and
// says so.
func (rw *runningWorker) handBack(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, rw.Heartbeat)
	defer cancel()
	handed, err := rw.db.handBack(ctx, nil, &rw.since)
	if err != nil {
		if ctx.Err() == nil {
			logEvent(rw.Log, "hand-back failed", "error", rw.db.scrub.Text(err.Error()))
		}
		return
	}
	var notices handBackNotices
	for _, h := range handed {
		notices.add(h.note, h.id, 1)
		if h.discarded {
			logEvent(rw.Log, "job discarded", "job", h.id, "why", fmt.Sprintf("worker %s stopped answering during its last attempt", h.note.Worker))
		}
	}
	notices.log(rw.Log, "job")
}

// replaced says who took this worker's name and returns ErrWorkerReplaced.
func (rw *runningWorker) replaced(ctx context.Context) error {
	var host string
	var pid int
	rw.db.pool.QueryRow(ctx, "SELECT host, pid FROM lpmbisect_fleet_workers WHERE name = $1", rw.Name).Scan(&host, &pid)
	return fmt.Errorf("worker %s: %w (pid %d on %s) while this one did not answer; its jobs run elsewhere", rw.Name, ErrWorkerReplaced, pid, host)
}

// riverClient is the worker's River client: its queues, one job at a time
// on wall-clock and build queues, Slots icount boots at once.
func (rw *runningWorker) riverClient() (*river.Client[pgx.Tx], error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, &bootWorker{rw: rw})
	river.AddWorker(workers, &roundWorker{rw: rw})
	river.AddWorker(workers, &buildWorker{rw: rw})
	queues := map[string]river.QueueConfig{}
	for name, q := range rw.queues {
		n := 1
		if q.Accel == wire.AccelIcount {
			n = rw.Slots
			if n <= 0 {
				n = runtime.NumCPU()
			}
		}
		queues[name] = river.QueueConfig{MaxWorkers: n}
	}
	return river.NewClient(riverpgxv5.New(rw.db.pool), &river.Config{
		ID:         rw.host.Instance,
		Middleware: []rivertype.Middleware{&fenceMiddleware{}},
		Queues:     queues,
		Workers:    workers,
		// Every kind's stuck time is its job's own (Timeout of the
		// kind's worker, from the job's stuck_after_ms): River's
		// rescuer takes a running job for stuck after the larger of
		// RescueStuckJobsAfter and that, so the floor is the smallest
		// stuck time a job may ask for.
		JobTimeout:           -1,
		RescueStuckJobsAfter: minStuckAfter,
		ErrorHandler:         &errorHandler{rw: rw},
		Logger:               slogTo(rw.Log, rw.db.scrub),
		FetchCooldown:        50 * time.Millisecond,
	})
}

// errorHandler logs every failed attempt and makes permanent what retrying
// cannot fix: a kind this lpmbisect does not know, arguments that do not
// decode.
type errorHandler struct{ rw *runningWorker }

func (h *errorHandler) HandleError(ctx context.Context, job *rivertype.JobRow, err error) *river.ErrorHandlerResult {
	var unknown *rivertype.UnknownJobKindError
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	permanent := errors.As(err, &unknown) || errors.As(err, &syntax) || errors.As(err, &typeErr)
	event := "job failed"
	if permanent {
		event = "job refused"
	}
	logEvent(h.rw.Log, event, "job", job.ID, "kind", job.Kind, "queue", job.Queue, "attempt", job.Attempt, "error", h.rw.db.scrub.Text(err.Error()))
	return &river.ErrorHandlerResult{SetCancelled: permanent}
}

func (h *errorHandler) HandlePanic(ctx context.Context, job *rivertype.JobRow, panicVal any, trace string) *river.ErrorHandlerResult {
	logEvent(h.rw.Log, "job panicked", "job", job.ID, "kind", job.Kind, "attempt", job.Attempt, "panic", fmt.Sprint(panicVal))
	return nil
}

// refuse logs and returns the permanent failure of a job with a message
// (River's JobCancel): bad arguments, a blob that is missing or corrupt.
func (rw *runningWorker) refuse(job *rivertype.JobRow, err error) error {
	logEvent(rw.Log, "job refused", "job", job.ID, "kind", job.Kind, "queue", job.Queue, "attempt", job.Attempt, "error", rw.db.scrub.Text(err.Error()))
	return river.JobCancel(err)
}

// notify sends a job event to the clients waiting for it (best effort:
// clients also poll).
func (rw *runningWorker) notify(ctx context.Context, event string, id int64) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rw.db.pool.Exec(ctx, "SELECT pg_notify($1, $2)", notifyChannel, fmt.Sprintf("%s %d", event, id))
}

// storing returns the context results of job ctx are stored under: it
// ends with the worker's storeCtx, not with the job (whose boots have
// ended), and carries the job's values (River finds its client there to
// complete the job).
func (rw *runningWorker) storing(job context.Context) context.Context {
	return valuesOf{Context: rw.storeCtx, values: job}
}

// valuesOf is a context whose deadline and cancellation are one context's
// and whose values are another's.
type valuesOf struct {
	context.Context
	values context.Context
}

func (c valuesOf) Value(key any) any { return c.values.Value(key) }

// interrupted is what Work returns for a job whose context ended before its
// work did: while the worker stops, the job goes back to the queue at once
// without costing an attempt; otherwise (canceled by its client, or over
// its stuck time) the attempt fails.
func (rw *runningWorker) interrupted(ctx context.Context, job *rivertype.JobRow, what string) error {
	if rw.stopping.Load() {
		logEvent(rw.Log, "job handed back", "job", job.ID, "kind", job.Kind, "attempt", job.Attempt, "why", "the worker stops")
		return river.JobSnooze(0)
	}
	err := fmt.Errorf("%s interrupted: %w", what, context.Cause(ctx))
	logEvent(rw.Log, "job interrupted", "job", job.ID, "kind", job.Kind, "attempt", job.Attempt, "why", err)
	return err
}

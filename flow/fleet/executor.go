package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/internal/cachefile"
	"github.com/lpmbisect/lpmbisect/internal/words"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Executor is the remote policy of the boot executor (measure.Executor):
// it puts a Runner's boots on a queue as jobs and hands back what the
// workers' boots delivered, so compare, bisect and nightly decide with the
// same code whether they boot here or on a fleet.
//
// Under icount each boot is its own job, so the boots of a run spread over
// every worker of the queue whose host class (QEMU version and CPU model,
// which instruction counts depend on) is the run's. Under a wall clock the
// boots of one round (A then B, or a pair side by side) are one job, so
// they run on one host: wall-clock numbers compare only within a host.
type Executor struct {
	Client *Client
	// Queue is the queue the boots go to; its name says the accelerator
	// (see parseQueue), which must be the run's.
	Queue string
	// Guest is the guest binary packed into the run's initramfs images:
	// its SHA-256 goes into every job, and workers of another lpmbisect
	// refuse them.
	Guest string
	// StuckAfter is how long one boot may run before it is taken for
	// stuck and run again elsewhere (default DefaultBootStuckAfter); a
	// round job gets it once per boot.
	StuckAfter time.Duration
	// Class is the host class of icount boots; nil means the one class
	// the queue's live workers share (an error when they have several).
	Class *HostClass
	// Seed draws the turns of paired rounds (as measure.Paired.Seed).
	Seed uint64
	// RunID labels the run's jobs (default: random).
	RunID string
	// PollInterval is the longest wait between looks at the jobs when no
	// notification comes (default 2 s).
	PollInterval time.Duration
	// Log gets a line per job: which worker ran it, how long it waited.
	Log *log.Logger

	once     sync.Once
	initErr  error
	queue    Queue
	guestSHA string
	class    HostClass
	qemus    []string // the QEMU versions of the live workers that can run the boots

	mu    sync.Mutex
	stats []JobStats
}

// JobStats is what one job of an Executor cost.
type JobStats struct {
	ID      int64
	Kind    string
	Worker  string // the worker that stored the result
	Boots   int
	Attempt int // the attempt whose result was read
	// Inserted, Started and Stored are when the job was inserted, its
	// last attempt started and its result was stored (database clock).
	Inserted, Started, Stored time.Time
	Queued                    time.Duration // Inserted until Started
	Ran                       time.Duration // Started until Stored
	Delivery                  time.Duration // Stored until this client had read it (database clock)
}

// Errors of Executor.Run before any job is inserted.
var (
	// ErrNoWorkers: no live worker of the queue runs this lpmbisect (and,
	// under icount, the run's host class).
	ErrNoWorkers = errors.New("no live worker can run the boots")
	// ErrMixedClasses: the queue's live workers have several host
	// classes and the run named none.
	ErrMixedClasses = errors.New("the queue's workers have several host classes")
	// ErrAccelMismatch: the boots' plan names another accelerator than
	// the queue's.
	ErrAccelMismatch = errors.New("the run's accelerator is not the queue's")
)

// Stats returns the cost of every job whose result was read so far.
func (e *Executor) Stats() []JobStats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.stats)
}

func (e *Executor) init(ctx context.Context) error {
	e.once.Do(func() {
		if e.Log == nil {
			e.Log = log.New(io.Discard, "", 0)
		}
		if e.PollInterval <= 0 {
			e.PollInterval = 2 * time.Second
		}
		if e.StuckAfter <= 0 {
			e.StuckAfter = DefaultBootStuckAfter
		}
		if e.StuckAfter < minStuckAfter {
			e.StuckAfter = minStuckAfter
		}
		if e.RunID == "" {
			b := make([]byte, 6)
			rand.Read(b)
			e.RunID = hex.EncodeToString(b)
		}
		if e.Client == nil {
			e.initErr = errors.New("fleet executor: no client")
			return
		}
		if e.queue, e.initErr = parseQueue(e.Queue); e.initErr != nil {
			return
		}
		if e.queue.Build() {
			e.initErr = fmt.Errorf("queue %s: %w: a build queue runs no boots", e.Queue, ErrQueueName)
			return
		}
		if e.guestSHA, e.initErr = cachefile.SHA256(e.Guest); e.initErr != nil {
			return
		}
		e.initErr = e.pickClass(ctx)
	})
	return e.initErr
}

// pickClass checks that a live worker can run the boots and, under
// icount, settles the run's host class.
func (e *Executor) pickClass(ctx context.Context) error {
	live, err := e.Client.liveWorkers(ctx, e.Queue)
	if err != nil {
		return err
	}
	var classes []HostClass
	var others []string
	for _, w := range live {
		if w.GuestSHA256 != e.guestSHA {
			others = append(others, fmt.Sprintf("%s runs lpmbisect %s (guest %s)", w.Name, w.Version, words.ShortHash(w.GuestSHA256)))
			continue
		}
		if e.Class != nil && w.Class() != *e.Class {
			others = append(others, fmt.Sprintf("%s has %s", w.Name, w.Class()))
			continue
		}
		if !slices.Contains(classes, w.Class()) {
			classes = append(classes, w.Class())
		}
		if !slices.Contains(e.qemus, w.QEMUVersion) {
			e.qemus = append(e.qemus, w.QEMUVersion)
		}
	}
	if len(classes) == 0 {
		why := "none is alive"
		if len(others) > 0 {
			why = strings.Join(others, "; ")
		}
		want := "this lpmbisect (guest " + words.ShortHash(e.guestSHA) + ")"
		if e.Class != nil {
			want += " with " + e.Class.String()
		}
		return fmt.Errorf("queue %s: %w: want a worker of %s, but %s (start one)", e.Queue, ErrNoWorkers, want, why)
	}
	if e.queue.Accel != wire.AccelIcount {
		return nil
	}
	if len(classes) > 1 {
		var names []string
		for _, c := range classes {
			names = append(names, c.String())
		}
		return fmt.Errorf("queue %s: %w (%s): icount counts compare only within one; name the class to run on", e.Queue, ErrMixedClasses, strings.Join(names, "; "))
	}
	e.class = classes[0]
	return nil
}

// pendingJob is an inserted job the executor waits for.
type pendingJob struct {
	id      int64
	kind    string
	jobs    []measure.Job // the boots it is, in order
	attempt int           // last attempt seen started
	retries int           // errors seen
}

func (p *pendingJob) what() string {
	var parts []string
	for _, j := range p.jobs {
		parts = append(parts, jobName(j))
	}
	return strings.Join(parts, ", ")
}

func jobName(j measure.Job) string {
	side := "?"
	if j.Side != nil {
		side = j.Side.Name
	}
	return fmt.Sprintf("%s boot %d", side, j.Boot)
}

// Run implements measure.Executor: it stores the jobs' kernels and
// initramfs images as blobs (each once), inserts the jobs, waits for
// their results and calls done for each boot in the order the jobs
// complete, never two at once. When ctx ends, or done or a job fails, the
// jobs still outstanding are canceled before Run returns.
func (e *Executor) Run(ctx context.Context, jobs []measure.Job, done func(measure.Job, *vmrunner.Result) error) error {
	if err := e.init(ctx); err != nil {
		return err
	}
	specs := make([]bootSpec, len(jobs))
	for i, j := range jobs {
		s, err := e.spec(ctx, j)
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return err
		}
		specs[i] = s
	}
	groups := e.group(jobs)
	params := make([]river.InsertManyParams, len(groups))
	stuck := e.StuckAfter.Milliseconds()
	for i, g := range groups {
		var args river.JobArgs
		if e.queue.Accel == wire.AccelIcount {
			args = bootArgs{Version: argsVersion, Accel: e.queue.Accel, Guest: e.guestSHA, Class: e.class, StuckAfterMS: stuck, Boot: specs[g[0]]}
		} else {
			r := roundArgs{Version: argsVersion, Accel: e.queue.Accel, Guest: e.guestSHA, StuckAfterMS: stuck * int64(len(g)),
				Paired: jobs[g[0]].Pair > 0, Seed: e.Seed}
			for _, k := range g {
				r.Boots = append(r.Boots, specs[k])
			}
			args = r
		}
		params[i] = river.InsertManyParams{Args: args, InsertOpts: &river.InsertOpts{Queue: e.Queue, Tags: []string{"run-" + e.RunID}}}
	}
	var inserted []*rivertype.JobInsertResult
	err := e.Client.db.retry(ctx, e.Log, "insert jobs", func(ctx context.Context) error {
		var err error
		inserted, err = e.Client.river.InsertMany(ctx, params)
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return e.Client.db.errorf(err, "insert %d jobs on queue %s", len(params), e.Queue)
	}
	pending := map[int64]*pendingJob{}
	var order []int64
	for i, r := range inserted {
		p := &pendingJob{id: r.Job.ID, kind: r.Job.Kind}
		for _, k := range groups[i] {
			p.jobs = append(p.jobs, jobs[k])
		}
		pending[p.id] = p
		order = append(order, p.id)
	}
	logEvent(e.Log, "jobs queued", "queue", e.Queue, "jobs", len(pending), "boots", len(jobs), "run", e.RunID)
	err = e.wait(ctx, pending, order, done)
	if len(pending) > 0 {
		var ids []int64
		for _, id := range order {
			if pending[id] != nil {
				ids = append(ids, id)
			}
		}
		e.Client.cancelJobs(ids)
	}
	return err
}

// cpuModel is the CPU model a boot of the CPU profile p runs on this
// run's class: the class's own under the default profile, else the
// profile's model.
func (e *Executor) cpuModel(p vmrunner.CPUProfile) string {
	if p.IsDefault() {
		return e.class.CPUModel
	}
	return p.QEMUModel(e.queue.Accel)
}

// spec turns a measure.Job into the boot a worker runs: its files become
// blobs, its settings are copied.
func (e *Executor) spec(ctx context.Context, j measure.Job) (bootSpec, error) {
	c := j.Config
	for _, a := range c.KernelArgs {
		if v, ok := strings.CutPrefix(a, string(wire.ParamAccel)+"="); ok && v != string(e.queue.Accel) {
			return bootSpec{}, fmt.Errorf("%w: the guest is told %s, queue %s runs %s", ErrAccelMismatch, v, e.Queue, e.queue.Accel)
		}
	}
	kernel, err := e.Client.PutBlob(ctx, c.Kernel)
	if err != nil {
		return bootSpec{}, err
	}
	initrd, err := e.Client.PutBlob(ctx, c.Initramfs)
	if err != nil {
		return bootSpec{}, err
	}
	side := "X"
	if j.Side != nil {
		side = j.Side.Name
	}
	s := bootSpec{Kernel: kernel, Initramfs: initrd, KernelArgs: c.KernelArgs, MemoryMB: c.MemoryMB, CPUs: c.CPUs, CPUProfile: c.CPU.Name,
		BootDeadlineMS: c.BootDeadline.Milliseconds(), ProgressDeadlineMS: c.ProgressDeadline.Milliseconds(),
		StartDeadlineMS: c.StartDeadline.Milliseconds(), MaxLine: c.Limits.MaxLine, MaxBytes: c.Limits.MaxBytes,
		Labels: labels{Run: e.RunID, Side: side, Boot: j.Boot, Pair: j.Pair}}
	if err := s.Validate("boot", e.queue.Accel); err != nil {
		return bootSpec{}, err
	}
	return s, nil
}

// group returns the jobs of each fleet job, as indexes into jobs: one boot
// each under icount; under a wall clock the boots of each round (a pair, or
// the boots up to the next boot of a side already in the round).
func (e *Executor) group(jobs []measure.Job) [][]int {
	var groups [][]int
	if e.queue.Accel == wire.AccelIcount {
		for i := range jobs {
			groups = append(groups, []int{i})
		}
		return groups
	}
	var cur []int
	seen := map[string]bool{}
	for i, j := range jobs {
		key := fmt.Sprint(i)
		if j.Side != nil {
			key = j.Side.Name
		}
		newRound := seen[key] || len(cur) == maxRoundBoots
		if j.Pair > 0 {
			newRound = len(cur) > 0 && jobs[cur[0]].Pair != j.Pair
		}
		if newRound {
			groups, cur, seen = append(groups, cur), nil, map[string]bool{}
		}
		cur = append(cur, i)
		seen[key] = true
	}
	if len(cur) > 0 {
		groups = append(groups, cur)
	}
	return groups
}

// wait hands the results of pending jobs to done as they complete. It
// removes each job it is finished with from pending.
func (e *Executor) wait(ctx context.Context, pending map[int64]*pendingJob, order []int64, done func(measure.Job, *vmrunner.Result) error) error {
	w := e.Client.newWaiter(ctx, e.PollInterval)
	defer w.close()
	var since time.Time // since when this client has reached the database without a break
	for len(pending) > 0 {
		var ids []int64
		for _, id := range order {
			if pending[id] != nil {
				ids = append(ids, id)
			}
		}
		e.Client.handBack(ctx, ids, &since)
		var states map[int64]*jobState
		tries := 0
		err := e.Client.db.retry(ctx, e.Log, "poll jobs", func(ctx context.Context) error {
			tries++
			var err error
			states, err = e.Client.pollJobs(ctx, ids, "lpmbisect_fleet_boot_results")
			return err
		})
		if tries > 1 {
			since = time.Time{} // the database went away: a silence from then on is not a death
		}
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return e.Client.db.errorf(err, "poll jobs")
		}
		var notices handBackNotices
		for _, id := range ids {
			if s := states[id]; s != nil {
				e.progress(pending[id], s, &notices)
			}
		}
		notices.log(e.Log, "boot")
		for _, id := range ids {
			p, s := pending[id], states[id]
			if s == nil {
				delete(pending, id)
				return &JobError{ID: id, Kind: p.kind, What: p.what(), State: "deleted", Reason: "the job is gone from the queue (deleted by hand?)"}
			}
			switch {
			case s.hasResult:
				results, st, err := e.read(ctx, p)
				if err != nil {
					if ctx.Err() != nil {
						return context.Cause(ctx)
					}
					return err
				}
				delete(pending, id)
				e.mu.Lock()
				e.stats = append(e.stats, st)
				e.mu.Unlock()
				for i, j := range p.jobs {
					if err := done(j, results[i]); err != nil {
						return err
					}
				}
			case s.state == rivertype.JobStateCancelled || s.state == rivertype.JobStateDiscarded:
				delete(pending, id)
				return &JobError{ID: id, Kind: p.kind, What: p.what(), State: string(s.state), Worker: s.worker, Reason: e.Client.db.scrub.Text(s.lastError)}
			}
		}
		if len(pending) == 0 {
			return nil
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		w.wait(ctx)
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
	}
	return nil
}

// progress logs a job's new attempts and failed attempts, adds a job
// handed back from a worker that stopped answering to notices, and tells
// the runner when a job's boots start (measure.Job.Start), once: when its
// first attempt is seen running.
func (e *Executor) progress(p *pendingJob, s *jobState, notices *handBackNotices) {
	if s.errorsCount > p.retries {
		p.retries = s.errorsCount
		switch {
		case s.state == rivertype.JobStateCancelled || s.state == rivertype.JobStateDiscarded || s.hasResult:
		case s.handedBack != nil:
			notices.add(*s.handedBack, p.id, len(p.jobs))
		default:
			logEvent(e.Log, "job retry", "job", p.id, "boots", p.what(), "worker", s.worker, "attempt", s.attempt, "error", e.Client.db.scrub.Text(s.lastError))
		}
	}
	if s.state == rivertype.JobStateRunning && s.attempt > p.attempt {
		if p.attempt == 0 { // the first attempt seen running: its boots start
			for _, j := range p.jobs {
				j.Start()
			}
		}
		p.attempt = s.attempt
		queued := time.Duration(0)
		if s.attempted != nil {
			queued = s.attempted.Sub(s.created)
		}
		logEvent(e.Log, "job start", "job", p.id, "boots", p.what(), "worker", s.worker, "attempt", s.attempt, "queued", queued)
	}
}

// read fetches the result of a job's first completed attempt and turns
// each boot into a vmrunner.Result, writing its console log and results
// capture into the boot's local run directory, so messages that name them
// name real files.
func (e *Executor) read(ctx context.Context, p *pendingJob) ([]*vmrunner.Result, JobStats, error) {
	type row struct {
		attempt, boot                      int
		worker, outcome, detail, channel   string
		accel, qemu, cpu                   string
		duration                           int64
		command                            []string
		raw, console                       []byte
		phases                             string
		started, stored, attempted, queued time.Time
		delivery                           time.Duration
	}
	var rows []row
	err := e.Client.db.retry(ctx, e.Log, "read results", func(ctx context.Context) error {
		rows = rows[:0]
		rs, err := e.Client.db.pool.Query(ctx, `
WITH first AS (
	SELECT attempt FROM lpmbisect_fleet_boot_results WHERE job_id = $1 ORDER BY stored_at, attempt LIMIT 1
)
SELECT r.attempt, r.boot, r.worker, r.outcome, r.detail, r.channel, r.accel, r.qemu_version, r.cpu_model, r.duration_ns,
	r.command, r.results, r.console, r.phases, r.started_at, r.stored_at, clock_timestamp() - r.stored_at,
	COALESCE(j.attempted_at, r.started_at), COALESCE(j.created_at, r.started_at)
FROM lpmbisect_fleet_boot_results r LEFT JOIN river_job j ON j.id = r.job_id
WHERE r.job_id = $1 AND r.attempt = (SELECT attempt FROM first)
ORDER BY r.boot`, p.id)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			var r row
			if err := rs.Scan(&r.attempt, &r.boot, &r.worker, &r.outcome, &r.detail, &r.channel, &r.accel, &r.qemu, &r.cpu, &r.duration,
				&r.command, &r.raw, &r.console, &r.phases, &r.started, &r.stored, &r.delivery, &r.attempted, &r.queued); err != nil {
				return err
			}
			rows = append(rows, r)
		}
		return rs.Err()
	})
	if err != nil {
		return nil, JobStats{}, e.Client.db.errorf(err, "read results of job %d", p.id)
	}
	if len(rows) != len(p.jobs) {
		return nil, JobStats{}, fmt.Errorf("job %d (%s): %d boot results stored, want %d", p.id, p.what(), len(rows), len(p.jobs))
	}
	out := make([]*vmrunner.Result, len(rows))
	for i, r := range rows {
		j := p.jobs[i]
		limit := j.Config.Limits.MaxBytes
		if limit == 0 {
			limit = vmrunner.DefaultLimits.MaxBytes
		}
		switch {
		case r.boot != i:
			return nil, JobStats{}, fmt.Errorf("job %d: boot results out of order", p.id)
		case len(r.raw) > limit || len(r.console) > maxConsole:
			return nil, JobStats{}, fmt.Errorf("job %d (%s): worker %s stored more than the limits allow", p.id, jobName(j), r.worker)
		case !vmrunner.Outcome(r.outcome).Known():
			return nil, JobStats{}, fmt.Errorf("job %d (%s): worker %s stored outcome %q, which this lpmbisect does not know (run one lpmbisect version across the fleet)", p.id, jobName(j), r.worker, r.outcome)
		case wire.Accel(r.accel) != e.queue.Accel:
			return nil, JobStats{}, fmt.Errorf("job %d (%s): worker %s booted under %s, the queue's accelerator is %s", p.id, jobName(j), r.worker, r.accel, e.queue.Accel)
		case e.queue.Accel == wire.AccelIcount && (r.qemu != e.class.QEMUVersion || r.cpu != e.cpuModel(j.Config.CPU)):
			return nil, JobStats{}, fmt.Errorf("job %d (%s): worker %s booted with QEMU %s and CPU model %s, the run's class is %s and the boot's model %s",
				p.id, jobName(j), r.worker, r.qemu, r.cpu, e.class, e.cpuModel(j.Config.CPU))
		}
		res := &vmrunner.Result{Outcome: vmrunner.Outcome(r.outcome), Detail: r.detail, Stream: vmrunner.DecodeStream(r.raw, j.Config), Channel: r.channel,
			Accel: wire.Accel(r.accel), Duration: time.Duration(r.duration), Command: r.command, CPUModel: r.cpu, QEMUVersion: r.qemu,
			Phases: wire.ParseMarks(r.phases)}
		if res.Outcome == vmrunner.OK && !res.Stream.Complete {
			// The worker said ok; what it stored does not prove it.
			res.Outcome, res.Detail = vmrunner.Corrupt, "the stored results are not a complete stream, though worker "+r.worker+" reported the boot ok"
		}
		if dir := j.Config.RunDir; dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, JobStats{}, fmt.Errorf("run directory: %w", err)
			}
			res.ConsoleLog = filepath.Join(dir, "console.log")
			for name, data := range map[string][]byte{"console.log": r.console, "results.out": r.raw,
				"worker.txt": []byte(fmt.Sprintf("job %d attempt %d on worker %s\n", p.id, r.attempt, r.worker))} {
				if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
					return nil, JobStats{}, fmt.Errorf("run directory: %w", err)
				}
			}
		}
		out[i] = res
		logEvent(e.Log, "boot done", "job", p.id, "boot", jobName(j), "worker", r.worker, "attempt", r.attempt,
			"outcome", r.outcome, "took", res.Duration, "delivered", r.delivery)
	}
	r := rows[0]
	st := JobStats{ID: p.id, Kind: p.kind, Worker: r.worker, Boots: len(rows), Attempt: r.attempt,
		Inserted: r.queued, Started: r.attempted, Stored: r.stored,
		Queued: r.attempted.Sub(r.queued), Ran: r.stored.Sub(r.attempted), Delivery: r.delivery}
	return out, st, nil
}

package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// A worker's running jobs go back to the queue when the database stops
// hearing from it (see the package doc, "Dead workers"). River has no call
// for this (its rescuer acts on elapsed time only), so it is one statement
// of ours on river_job, and the attempt fence keeps a worker that was only
// slow from storing or reporting what it no longer holds.

// deadAfterBeats is how many heartbeats a worker may miss before it is
// taken for dead.
const deadAfterBeats = 3

// silence is the SQL of how long a worker whose heartbeat interval (ms) is
// the SQL expression beat may be silent before it is taken for dead.
func silence(beat string) string {
	return fmt.Sprintf("%d * %s * interval '1 millisecond'", deadAfterBeats, beat)
}

// Our job kinds: the hand-back touches no other program's jobs.
var ourKinds = []string{KindBoot, kindRound, kindBuild}

// newInstance returns the River client ID of one worker process: its name,
// '/', and random hex. A restarted worker gets a new one, so no attempt of
// its predecessor is taken for its own.
func newInstance(name string) string {
	b := make([]byte, 6)
	rand.Read(b)
	return name + "/" + hex.EncodeToString(b)
}

// workerOf is the worker name of a River client ID ("w1/3fa2…" → "w1").
func workerOf(clientID string) string {
	name, _, _ := strings.Cut(clientID, "/")
	return name
}

// handBackSQL sets back to available, in one statement, our running jobs
// whose last attempt's worker process has given no sign of life (a
// heartbeat, or the fetch of the attempt itself) for deadAfterBeats of its
// heartbeats, and whose observer ($3: since when the caller has reached the
// database without a break) has been able to hear it all that time, so
// that a database outage is not taken for every worker's death. A job out
// of attempts is discarded instead, as River's rescuer does. An attempt of
// a process whose name another process has since taken (a restart) has no
// worker row: its last sign of life is its fetch. Attempts in a completing
// transaction are locked and skipped (SKIP LOCKED): they are storing.
// $1 our kinds, $2 the only jobs to look at (NULL: all), $4 the heartbeat
// (ms) assumed of a process without a row.
var handBackSQL = `
WITH lost AS (
	SELECT j.id, split_part(j.attempted_by[array_upper(j.attempted_by, 1)], '/', 1) AS worker,
		GREATEST(j.attempted_at, w.last_seen) AS last_seen, w.instance IS NULL AS replaced
	FROM river_job j
	LEFT JOIN lpmbisect_fleet_workers w ON w.instance = j.attempted_by[array_upper(j.attempted_by, 1)]
	WHERE j.state = 'running' AND j.kind = ANY($1) AND ($2::bigint[] IS NULL OR j.id = ANY($2))
		AND GREATEST(j.attempted_at, w.last_seen, $3) < now() - ` + silence("COALESCE(w.heartbeat_ms, $4)") + `
	FOR UPDATE OF j SKIP LOCKED
)
UPDATE river_job j SET
	state = (CASE WHEN j.attempt >= j.max_attempts THEN 'discarded' ELSE 'available' END)::river_job_state,
	finalized_at = CASE WHEN j.attempt >= j.max_attempts THEN now() END,
	errors = array_append(j.errors, jsonb_build_object('at', now(), 'attempt', j.attempt, 'trace', '',
		'error', format('worker %s stopped answering at %s%s: %s', lost.worker,
			to_char(lost.last_seen AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS "UTC"'),
			CASE WHEN lost.replaced THEN ' (a new process has its name)' ELSE '' END,
			CASE WHEN j.attempt >= j.max_attempts THEN 'no attempt left' ELSE 'job handed back to the queue' END),
		'lpmbisect_handed_back', jsonb_build_object('worker', lost.worker, 'last_seen', lost.last_seen, 'replaced', lost.replaced)))
FROM lost WHERE j.id = lost.id
RETURNING j.id, lost.worker, lost.last_seen, now(), j.state = 'discarded'`

// handedBack is a job the hand-back returned to the queue (or discarded).
type handedBack struct {
	id        int64
	note      handBackNote
	discarded bool
}

// handBackNote is what the hand-back records in the error it appends to
// the job's errors (key lpmbisect_handed_back), for clients to say.
type handBackNote struct {
	Worker   string    `json:"worker"`
	LastSeen time.Time `json:"last_seen"` // its last sign of life
	Replaced bool      `json:"replaced"`  // another process took its name
	At       time.Time `json:"-"`         // when it was handed back (the error's "at")
}

// handBack hands back the jobs of workers that stopped answering (all of
// ours, or only those of ids), judged by a caller that has reached the
// database without a break since *since (database clock). A zero *since
// starts the caller's watch: it is set to the database's now and nothing
// is handed back this time.
func (db *database) handBack(ctx context.Context, ids []int64, since *time.Time) ([]handedBack, error) {
	if since.IsZero() {
		return nil, db.pool.QueryRow(ctx, "SELECT now()").Scan(since)
	}
	var only []int64
	if ids != nil {
		only = ids
		if len(only) == 0 {
			return nil, nil
		}
	}
	rows, err := db.pool.Query(ctx, handBackSQL, ourKinds, only, *since, defaultHeartbeat.Milliseconds())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (handedBack, error) {
		var h handedBack
		err := row.Scan(&h.id, &h.note.Worker, &h.note.LastSeen, &h.note.At, &h.discarded)
		return h, err
	})
}

// silent is how long the worker had been silent when its job was handed
// back.
func (n handBackNote) silent() time.Duration { return n.At.Sub(n.LastSeen).Round(time.Second) }

// handBackNotices groups the hand-backs a poll found, so that a client or
// worker says once per dead worker what happened to its jobs.
type handBackNotices struct {
	order  []handBackNote
	jobs   map[handBackNote][]int64
	counts map[handBackNote]int // boots, or builds
}

func (n *handBackNotices) add(note handBackNote, id int64, count int) {
	if n.jobs == nil {
		n.jobs, n.counts = map[handBackNote][]int64{}, map[handBackNote]int{}
	}
	key := note
	key.At = time.Time{} // one line per dead worker process, whoever handed back which job
	if _, ok := n.jobs[key]; !ok {
		n.order = append(n.order, note)
	}
	n.jobs[key] = append(n.jobs[key], id)
	n.counts[key] += count
}

// log writes one line per dead worker: when it stopped answering, why it is
// taken for dead, and how many of what (noun, "boot" or "build") run again:
// "worker w1 stopped answering at 15:04:05 (no heartbeat for 16s); its 2
// boots run again".
func (n *handBackNotices) log(lg *log.Logger, noun string) {
	for _, note := range n.order {
		key := note
		key.At = time.Time{}
		why := fmt.Sprintf("no heartbeat for %s", note.silent())
		if note.Replaced {
			why = "a new process has its name"
		}
		what := fmt.Sprintf("its %s runs again", noun)
		if c := n.counts[key]; c != 1 {
			what = fmt.Sprintf("its %d %ss run again", c, noun)
		}
		var jobs []string
		for _, id := range slices.Sorted(slices.Values(n.jobs[key])) {
			jobs = append(jobs, fmt.Sprint(id))
		}
		logEvent(lg, fmt.Sprintf("worker %s stopped answering at %s (%s); %s", note.Worker, note.LastSeen.Local().Format(time.TimeOnly), why, what),
			"jobs", strings.Join(jobs, ","))
	}
	n.order, n.jobs, n.counts = nil, nil, nil
}

// attemptToken names one attempt of a job as River's fetch left it in the
// job row: the attempt number, when it was fetched and by which worker
// process. Every report of an attempt carries it (River's RecordOutput,
// stored in the job's metadata as its output), and the fence trigger of
// river_job (our schema version 3) drops a report whose token is not the
// row's: an attempt that was handed back, or rescued, cannot complete,
// fail, snooze or cancel the attempt that holds the job now.
type attemptToken struct {
	Worker      string    `json:"worker"`
	Instance    string    `json:"instance"`
	Attempt     int       `json:"attempt"`
	AttemptedAt time.Time `json:"attempted_at"`
}

// fenceMiddleware records each attempt's token as its output before the
// attempt runs (see attemptToken).
type fenceMiddleware struct{ river.MiddlewareDefaults }

// Work implements rivertype.WorkerMiddleware.
func (*fenceMiddleware) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	if job.AttemptedAt != nil && len(job.AttemptedBy) > 0 {
		by := job.AttemptedBy[len(job.AttemptedBy)-1]
		if err := river.RecordOutput(ctx, attemptToken{Worker: workerOf(by), Instance: by, Attempt: job.Attempt, AttemptedAt: *job.AttemptedAt}); err != nil {
			return err
		}
	}
	return doInner(ctx)
}

// LostAttemptError is the store of an attempt that no longer holds its
// job: it was handed back (or rescued) while its worker did not answer,
// and another attempt holds it or has finished it. Nothing was stored.
type LostAttemptError struct {
	ID      int64
	Attempt int
	// The job as the database has it now.
	State       string
	HeldAttempt int
	HeldBy      string // worker of the last attempt
}

func (e *LostAttemptError) Error() string {
	if e.State == "" {
		return fmt.Sprintf("job %d attempt %d: the job is gone from the queue; results not stored", e.ID, e.Attempt)
	}
	return fmt.Sprintf("job %d attempt %d no longer holds the job (it is %s, attempt %d on worker %s): handed back while this worker did not answer; results not stored",
		e.ID, e.Attempt, e.State, e.HeldAttempt, e.HeldBy)
}

// holdJob locks the job's row in tx and checks that the attempt job still
// holds it: running, with the attempt number, fetch time and worker process
// River's fetch gave it. Results are stored only after it, in the same
// transaction, so a store and a hand-back of one attempt exclude each
// other: whichever locks the row first wins, and the other finds the row
// changed (the hand-back requires state running; this requires the fetch).
func holdJob(ctx context.Context, tx pgx.Tx, job *rivertype.JobRow) error {
	var state, by string
	var attempt int
	var at *time.Time
	err := tx.QueryRow(ctx, `SELECT state::text, attempt, attempted_at, COALESCE(attempted_by[array_upper(attempted_by, 1)], '')
FROM river_job WHERE id = $1 FOR UPDATE`, job.ID).Scan(&state, &attempt, &at, &by)
	if errors.Is(err, pgx.ErrNoRows) {
		return &LostAttemptError{ID: job.ID, Attempt: job.Attempt}
	}
	if err != nil {
		return err
	}
	mine := ""
	if len(job.AttemptedBy) > 0 {
		mine = job.AttemptedBy[len(job.AttemptedBy)-1]
	}
	if state != string(rivertype.JobStateRunning) || attempt != job.Attempt || by != mine ||
		at == nil || job.AttemptedAt == nil || !at.Equal(*job.AttemptedAt) {
		return &LostAttemptError{ID: job.ID, Attempt: job.Attempt, State: state, HeldAttempt: attempt, HeldBy: workerOf(by)}
	}
	return nil
}

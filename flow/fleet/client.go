package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/lpmbisect/lpmbisect/internal/words"
)

// Client is a connection to the fleet database for programs that put jobs
// on queues and wait for their results: compare, bisect, nightly. It does
// not work jobs (that is Worker) and runs none of River's maintenance.
// It is safe for concurrent use.
type Client struct {
	db    *database
	river *river.Client[pgx.Tx]
	log   *log.Logger

	mu             sync.Mutex
	blobs          map[fileKey]string // files this client stored, by path and version
	handBackWarned bool               // a failed hand-back was said
}

type fileKey struct {
	path  string
	size  int64
	mtime int64
}

// connect opens the fleet database at url, whose schema must be current
// (see Migrate). Log gets progress and database trouble (nil: silent).
func connect(ctx context.Context, url string, lg *log.Logger) (*Client, error) {
	if lg == nil {
		lg = log.New(io.Discard, "", 0)
	}
	db, err := open(ctx, url)
	if err != nil {
		return nil, err
	}
	if err := db.checkSchema(ctx); err != nil {
		db.close()
		return nil, err
	}
	rc, err := river.NewClient(riverpgxv5.New(db.pool), &river.Config{Logger: slogTo(lg, db.scrub)})
	if err != nil {
		db.close()
		return nil, db.errorf(err, "River client")
	}
	return &Client{db: db, river: rc, log: lg, blobs: map[fileKey]string{}}, nil
}

// Close closes the connection.
func (c *Client) Close() { c.db.close() }

// Shared is one fleet connection that every setup of a command uses
// (nightly makes one per series): the first Connect opens it, Close ends
// it. Its zero value is ready.
type Shared struct {
	mu     sync.Mutex
	client *Client
}

// connect returns the shared client, connecting to url (see Connect) on
// the first call, or on the first after a failed one.
func (s *Shared) Connect(ctx context.Context, url string, lg *log.Logger) (*Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == nil {
		c, err := connect(ctx, url, lg)
		if err != nil {
			return nil, err
		}
		s.client = c
	}
	return s.client, nil
}

// Close closes the connection, if one was opened.
func (s *Shared) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client != nil {
		s.client.Close()
		s.client = nil
	}
}

// Location is the database URL with its password hidden.
func (c *Client) Location() string { return c.db.loc }

// PutBlob stores the file at path in the blob table, unless a blob of its
// content is there already, and returns its SHA-256. A file this client
// stored before is not hashed again while its size and modification time
// stay the same.
func (c *Client) PutBlob(ctx context.Context, path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("upload %s: %w", path, err)
	}
	key := fileKey{path, st.Size(), st.ModTime().UnixNano()}
	c.mu.Lock()
	sum, ok := c.blobs[key]
	c.mu.Unlock()
	if ok {
		return sum, nil
	}
	var sent bool
	err = c.db.retry(ctx, c.log, "upload blob", func(ctx context.Context) error {
		var err error
		sum, sent, err = c.db.putBlob(ctx, path)
		return err
	})
	if err != nil {
		return "", err
	}
	if sent {
		logEvent(c.log, "blob stored", "sha256", words.ShortHash(sum), "bytes", st.Size(), "file", path)
	}
	c.mu.Lock()
	c.blobs[key] = sum
	c.mu.Unlock()
	return sum, nil
}

// FetchBlob returns the path of blob sum in dir, fetching and checking it
// when it is not there (see the package doc).
func (c *Client) FetchBlob(ctx context.Context, sum, dir string) (string, error) {
	return c.db.fetchBlob(ctx, sum, dir)
}

// JobError is a job that ended without a result: canceled by a worker
// (bad arguments, a blob that does not match its hash, another lpmbisect
// version), or discarded after its last attempt failed.
type JobError struct {
	ID     int64
	Kind   string
	What   string // the boots or build it was, for messages
	State  string // cancelled, discarded
	Worker string // the worker of the last attempt
	Reason string // the last attempt's error
}

func (e *JobError) Error() string {
	on := ""
	if e.Worker != "" {
		on = " on worker " + e.Worker
	}
	reason := e.Reason
	if reason == "" {
		reason = "no reason recorded"
	}
	return fmt.Sprintf("job %d (%s) %s%s: %s", e.ID, e.What, e.State, on, reason)
}

func (e *JobError) Unwrap() error { return ErrJobFailed }

// ErrJobFailed is wrapped by JobError.
var ErrJobFailed = errors.New("job ended without a result")

// jobState is what a client polls of a job.
type jobState struct {
	id          int64
	kind        string
	state       rivertype.JobState
	attempt     int
	worker      string // of the last attempt
	lastError   string
	handedBack  *handBackNote // the last error was a hand-back
	created     time.Time
	attempted   *time.Time
	hasResult   bool
	errorsCount int
}

// pollJobs reads the state of the jobs ids and whether each has a result
// stored.
func (c *Client) pollJobs(ctx context.Context, ids []int64, results string) (map[int64]*jobState, error) {
	rows, err := c.db.pool.Query(ctx, `
SELECT j.id, j.kind, j.state::text, j.attempt, split_part(COALESCE(j.attempted_by[array_upper(j.attempted_by, 1)], ''), '/', 1),
	COALESCE(j.errors[array_upper(j.errors, 1)], '{}'), COALESCE(array_length(j.errors, 1), 0),
	j.created_at, j.attempted_at,
	EXISTS (SELECT 1 FROM `+results+` r WHERE r.job_id = j.id)
FROM river_job j WHERE j.id = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	out := map[int64]*jobState{}
	for rows.Next() {
		s := &jobState{}
		var state string
		var last struct {
			At         time.Time     `json:"at"`
			Error      string        `json:"error"`
			HandedBack *handBackNote `json:"lpmbisect_handed_back"`
		}
		if err := rows.Scan(&s.id, &s.kind, &state, &s.attempt, &s.worker, &last, &s.errorsCount, &s.created, &s.attempted, &s.hasResult); err != nil {
			rows.Close()
			return nil, err
		}
		s.state = rivertype.JobState(state)
		s.lastError = last.Error
		if s.handedBack = last.HandedBack; s.handedBack != nil {
			s.handedBack.At = last.At
		}
		out[s.id] = s
	}
	return out, rows.Err()
}

// waiter wakes a client when a worker notifies a job event, and at least
// every poll interval: notifications make results arrive at once, polling
// makes them arrive when a notification was missed (a reconnect) and
// shows what workers do not announce (rescues, cancellations, discards).
type waiter struct {
	c        *Client
	interval time.Duration
	conn     *pgx.Conn
	release  func()
	warned   bool
}

func (c *Client) newWaiter(ctx context.Context, interval time.Duration) *waiter {
	w := &waiter{c: c, interval: interval}
	w.listen(ctx)
	return w
}

func (w *waiter) listen(ctx context.Context) {
	pc, err := w.c.db.pool.Acquire(ctx)
	if err == nil {
		if _, err = pc.Exec(ctx, "LISTEN "+notifyChannel); err == nil {
			w.conn, w.release = pc.Conn(), pc.Release
			if w.warned {
				logEvent(w.c.log, "database back", "op", "listen")
				w.warned = false
			}
			return
		}
		pc.Release()
	}
	if ctx.Err() == nil && !w.warned {
		w.warned = true
		logEvent(w.c.log, "database unreachable", "op", "listen", "fallback", "polling every "+w.interval.String(), "error", w.c.db.scrub.Text(err.Error()))
	}
}

// wait returns after a notification or the poll interval.
func (w *waiter) wait(ctx context.Context) {
	if w.conn == nil {
		w.listen(ctx)
	}
	if w.conn == nil {
		select {
		case <-ctx.Done():
		case <-time.After(w.interval):
		}
		return
	}
	wctx, cancel := context.WithTimeout(ctx, w.interval)
	defer cancel()
	_, err := w.conn.WaitForNotification(wctx)
	if err != nil && wctx.Err() == nil {
		// The connection broke: listen again on the next wait.
		w.conn.Close(context.Background())
		w.close()
	}
}

func (w *waiter) close() {
	if w.release != nil {
		w.release()
	}
	w.conn, w.release = nil, nil
}

// handBack hands back those of the jobs ids whose worker stopped
// answering (see handBackSQL), judged from *since; a failure only costs the
// watch (since starts again) and is said once.
func (c *Client) handBack(ctx context.Context, ids []int64, since *time.Time) {
	if _, err := c.db.handBack(ctx, ids, since); err != nil {
		*since = time.Time{}
		c.mu.Lock()
		defer c.mu.Unlock()
		if !transient(err) && ctx.Err() == nil && !c.handBackWarned {
			c.handBackWarned = true
			logEvent(c.log, "hand-back failed", "error", c.db.scrub.Text(err.Error()), "then", "jobs of dead workers wait for River's rescuer (--stuck-after)")
		}
	}
}

// cancelJobs cancels jobs (River's JobCancel: queued ones at once, running
// ones by canceling their workers' contexts), with a context of its own:
// the caller's has usually ended (Ctrl-C).
func (c *Client) cancelJobs(ids []int64) {
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	n := 0
	for _, id := range ids {
		if _, err := c.river.JobCancel(ctx, id); err != nil && !errors.Is(err, rivertype.ErrNotFound) {
			logEvent(c.log, "cancel failed", "job", id, "error", c.db.scrub.Text(err.Error()))
			continue
		}
		n++
	}
	logEvent(c.log, "jobs canceled", "count", n)
}

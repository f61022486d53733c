package fleet

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Status is what the fleet is doing: for a listing such as lpmbisect fleet.
// Its JSON form (lpmbisect fleet --format json) uses the tags' names.
type Status struct {
	Location string         `json:"location"` // the database, password hidden
	Now      time.Time      `json:"now"`      // the database's clock when read
	Workers  []WorkerStatus `json:"workers"`
	Queues   []QueueStatus  `json:"queues"`
	Running  []JobStatus    `json:"running"`
	Failed   []JobStatus    `json:"failed"` // cancelled or discarded within failedWithin, newest first
	Blobs    int            `json:"blobs"`
	BlobSize int64          `json:"blob_bytes"`
}

// failedWithin is how far back Status lists failed jobs.
const failedWithin = 24 * time.Hour

// WorkerStatus is a worker as its row in the workers table says.
type WorkerStatus struct {
	WorkerHost
	Started  time.Time `json:"started"`
	LastSeen time.Time `json:"last_seen"`
	Stopped  bool      `json:"stopped"` // stopped cleanly
	Alive    bool      `json:"alive"`   // heard from within three heartbeats
	// Boots counts the boot results this worker stored within
	// failedWithin: what it did lately, and how a run spread.
	Boots int `json:"boots"`
}

// QueueStatus counts a queue's jobs by state.
type QueueStatus struct {
	Name      string `json:"name"`
	Available int    `json:"available"`
	Running   int    `json:"running"`
	Retrying  int    `json:"retrying"`
	Workers   int    `json:"workers"` // live workers working it
}

// JobStatus is a running or failed job.
type JobStatus struct {
	ID       int64     `json:"id"`
	Kind     string    `json:"kind"`
	Queue    string    `json:"queue"`
	State    string    `json:"state"`
	Attempt  int       `json:"attempt"`
	Worker   string    `json:"worker"` // of the last attempt
	Since    time.Time `json:"since"`
	LastErr  string    `json:"last_error"`
	Describe string    `json:"job"` // run, side and boot of boot jobs; tree and commit of builds
}

// ReadStatus reads the fleet's state from the database at url.
func ReadStatus(ctx context.Context, url string) (*Status, error) {
	db, err := open(ctx, url)
	if err != nil {
		return nil, err
	}
	defer db.close()
	if err := db.checkSchema(ctx); err != nil {
		return nil, err
	}
	c := &Client{db: db}
	return c.Status(ctx)
}

// Status reads the fleet's state.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	db := c.db
	s := &Status{Location: db.loc}
	if err := db.pool.QueryRow(ctx, "SELECT now()").Scan(&s.Now); err != nil {
		return nil, db.errorf(err, "status")
	}
	var err error
	if s.Workers, err = c.workers(ctx, ""); err != nil {
		return nil, err
	}
	rows, err := db.pool.Query(ctx, `
SELECT queue, count(*) FILTER (WHERE state = 'available'), count(*) FILTER (WHERE state = 'running'),
	count(*) FILTER (WHERE state = 'retryable')
FROM river_job WHERE state IN ('available', 'running', 'retryable') GROUP BY queue ORDER BY queue`)
	if err != nil {
		return nil, db.errorf(err, "status: queues")
	}
	for rows.Next() {
		var q QueueStatus
		if err := rows.Scan(&q.Name, &q.Available, &q.Running, &q.Retrying); err != nil {
			rows.Close()
			return nil, db.errorf(err, "status: queues")
		}
		s.Queues = append(s.Queues, q)
	}
	rows.Close()
	// Queues that live workers serve are listed even when empty.
	for _, w := range s.Workers {
		if !w.Alive {
			continue
		}
		for _, name := range w.Queues {
			i := indexQueue(s.Queues, name)
			if i < 0 {
				s.Queues = append(s.Queues, QueueStatus{Name: name})
				i = len(s.Queues) - 1
			}
			s.Queues[i].Workers++
		}
	}
	if s.Running, err = c.jobs(ctx, "state = 'running'", "attempted_at"); err != nil {
		return nil, err
	}
	if s.Failed, err = c.jobs(ctx, fmt.Sprintf("state IN ('cancelled', 'discarded') AND finalized_at > now() - interval '%d seconds'", int(failedWithin.Seconds())), "finalized_at"); err != nil {
		return nil, err
	}
	if err := db.pool.QueryRow(ctx, "SELECT count(*), COALESCE(sum(size), 0) FROM lpmbisect_fleet_blobs").Scan(&s.Blobs, &s.BlobSize); err != nil {
		return nil, db.errorf(err, "status: blobs")
	}
	return s, nil
}

func indexQueue(qs []QueueStatus, name string) int {
	for i, q := range qs {
		if q.Name == name {
			return i
		}
	}
	return -1
}

// workers reads the workers table; with queue set, only live workers that
// work it.
func (c *Client) workers(ctx context.Context, queue string) ([]WorkerStatus, error) {
	alive := "stopped_at IS NULL AND last_seen > now() - " + silence("heartbeat_ms")
	where := ""
	var args []any
	if queue != "" {
		where = "WHERE $1 = ANY(queues) AND " + alive
		args = append(args, queue)
	}
	rows, err := c.db.pool.Query(ctx, `
SELECT name, instance, host, pid, cpu_model, cores, qemu_version, icount_cpu, version, guest_sha256, accels, queues, dropped,
	started_at, last_seen, stopped_at IS NOT NULL, `+alive+`,
	(SELECT count(*) FROM lpmbisect_fleet_boot_results r WHERE r.worker = w.name AND r.stored_at > now() - $`+fmt.Sprint(len(args)+1)+` * interval '1 second')
FROM lpmbisect_fleet_workers w `+where+` ORDER BY name`, append(args, int(failedWithin.Seconds()))...)
	if err != nil {
		return nil, c.db.errorf(err, "read workers")
	}
	defer rows.Close()
	var out []WorkerStatus
	for rows.Next() {
		var w WorkerStatus
		if err := rows.Scan(&w.Name, &w.Instance, &w.Host, &w.PID, &w.CPUModel, &w.Cores, &w.QEMUVersion, &w.IcountCPU, &w.Version, &w.GuestSHA256,
			&w.Accels, &w.Queues, &w.Dropped, &w.Started, &w.LastSeen, &w.Stopped, &w.Alive, &w.Boots); err != nil {
			return nil, c.db.errorf(err, "read workers")
		}
		out = append(out, w)
	}
	return out, c.db.errorf(rows.Err(), "read workers")
}

// liveWorkers returns the live workers of a queue.
func (c *Client) liveWorkers(ctx context.Context, queue string) ([]WorkerStatus, error) {
	var out []WorkerStatus
	err := c.db.retry(ctx, c.log, "read workers", func(ctx context.Context) error {
		var err error
		out, err = c.workers(ctx, queue)
		return err
	})
	return out, err
}

func (c *Client) jobs(ctx context.Context, where, since string) ([]JobStatus, error) {
	rows, err := c.db.pool.Query(ctx, `
SELECT id, kind, queue, state::text, attempt, split_part(COALESCE(attempted_by[array_upper(attempted_by, 1)], ''), '/', 1),
	COALESCE(`+since+`, created_at), COALESCE(errors[array_upper(errors, 1)]->>'error', ''),
	CASE WHEN kind = 'lpmbisect.build' THEN concat_ws(' ', args->>'tree', left(args->>'commit', 12), args->>'config')
	     WHEN kind = 'lpmbisect.boot' THEN concat_ws(' ', 'run', args->'boot'->'labels'->>'run', args->'boot'->'labels'->>'side', 'boot', args->'boot'->'labels'->>'boot')
	     WHEN kind = 'lpmbisect.round' THEN concat_ws(' ', 'run', args->'boots'->0->'labels'->>'run', 'round of', jsonb_array_length(CASE WHEN jsonb_typeof(args->'boots') = 'array' THEN args->'boots' ELSE '[]'::jsonb END), 'boots')
	     ELSE '' END
FROM river_job WHERE `+where+` ORDER BY `+since+` DESC NULLS LAST LIMIT 100`)
	if err != nil {
		return nil, c.db.errorf(err, "read jobs")
	}
	defer rows.Close()
	var out []JobStatus
	for rows.Next() {
		var j JobStatus
		if err := rows.Scan(&j.ID, &j.Kind, &j.Queue, &j.State, &j.Attempt, &j.Worker, &j.Since, &j.LastErr, &j.Describe); err != nil {
			return nil, c.db.errorf(err, "read jobs")
		}
		j.LastErr = c.db.scrub.Text(j.LastErr)
		out = append(out, j)
	}
	return out, c.db.errorf(rows.Err(), "read jobs")
}

// WriteText renders the status as plain text tables.
func (s *Status) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "fleet %s at %s\n\n", s.Location, s.Now.Format(time.DateTime))
	fmt.Fprintln(tw, "WORKER\tSTATE\tLAST SEEN\tBOOTS 24H\tHOST\tCPU\tCORES\tQEMU\tACCELS\tQUEUES\tVERSION")
	for _, wk := range s.Workers {
		state := "alive"
		switch {
		case wk.Stopped:
			state = "stopped"
		case !wk.Alive:
			state = "dead"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s ago\t%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", wk.Name, state, ago(s.Now, wk.LastSeen), wk.Boots, wk.Host, wk.CPUModel, wk.Cores,
			wk.QEMUVersion, strings.Join(wk.Accels, ","), strings.Join(wk.Queues, ","), wk.Version)
		for _, d := range wk.Dropped {
			fmt.Fprintf(tw, "\t\tdropped %s\n", d)
		}
	}
	if len(s.Workers) == 0 {
		fmt.Fprintln(tw, "(no workers)")
	}
	fmt.Fprintln(tw, "\nQUEUE\tWORKERS\tAVAILABLE\tRUNNING\tRETRYING")
	for _, q := range s.Queues {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", q.Name, q.Workers, q.Available, q.Running, q.Retrying)
	}
	if len(s.Queues) == 0 {
		fmt.Fprintln(tw, "(no queues)")
	}
	for _, part := range []struct {
		title string
		jobs  []JobStatus
	}{{"RUNNING", s.Running}, {"FAILED (last 24h)", s.Failed}} {
		fmt.Fprintf(tw, "\n%s\tKIND\tQUEUE\tATTEMPT\tWORKER\tSINCE\tJOB\tERROR\n", part.title)
		for _, j := range part.jobs {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s ago\t%s\t%s\n", j.ID, j.Kind, j.Queue, j.Attempt, j.Worker, ago(s.Now, j.Since), j.Describe, clip(j.LastErr))
		}
		if len(part.jobs) == 0 {
			fmt.Fprintln(tw, "(none)")
		}
	}
	fmt.Fprintf(tw, "\nblobs: %d, %.1f MiB\n", s.Blobs, float64(s.BlobSize)/(1<<20))
	return tw.Flush()
}

func ago(now, t time.Time) string {
	return now.Sub(t).Round(time.Second).String()
}

package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/lpmbisect/lpmbisect/host/kbuild"
	"github.com/lpmbisect/lpmbisect/internal/words"
)

// BuildRequest asks a build worker for a kernel image.
type BuildRequest struct {
	// Queue is a build queue (default buildQueue).
	Queue string
	// Tree and Config are names the build workers know (Worker.Trees,
	// Worker.Builds); Commit is a full commit id.
	Tree, Commit, Config string
	// StuckAfter is how long the build may take before it is taken for
	// stuck (default defaultBuildStuckAfter).
	StuckAfter time.Duration
	// Dir is where the image is fetched to (a blob cache directory).
	Dir string
	// PollInterval is the longest wait between looks at the job (default
	// 2 s).
	PollInterval time.Duration
}

// BuildResult is a finished build.
type BuildResult struct {
	JobID  int64
	Worker string
	// Shared is set when another client had asked for the same build
	// (River's unique jobs), whose job this is.
	Shared bool
	OK     bool
	// Detail says why a build failed.
	Detail string
	// Image is the fetched bzImage (under Dir); "" when the build failed.
	Image       string
	ImageSHA256 string
	Release     string
	Compiler    string
	ConfigHash  string
	Dropped     []string // fragment options that did not keep their value
	LogTail     []byte   // the end of the build log
	Duration    time.Duration
}

// Build puts a build job on a queue, waits for it and fetches the image.
// A build that failed (the compiler's error) returns its result and an
// error wrapping kbuild.ErrBuildFailed, as a local build does. When ctx
// ends, the job is canceled unless another client shares it.
func (c *Client) Build(ctx context.Context, req BuildRequest) (*BuildResult, error) {
	if req.Queue == "" {
		req.Queue = buildQueue
	}
	if req.StuckAfter <= 0 {
		req.StuckAfter = defaultBuildStuckAfter
	}
	if req.PollInterval <= 0 {
		req.PollInterval = 2 * time.Second
	}
	q, err := parseQueue(req.Queue)
	if err != nil {
		return nil, err
	}
	if !q.Build() {
		return nil, fmt.Errorf("queue %s: %w: builds go to a build queue", req.Queue, ErrQueueName)
	}
	args := buildArgs{Version: argsVersion, Tree: req.Tree, Commit: req.Commit, Config: req.Config, StuckAfterMS: req.StuckAfter.Milliseconds()}
	if err := args.Validate(); err != nil {
		return nil, err
	}
	if req.Dir == "" {
		return nil, errors.New("build: no directory to fetch the image to")
	}
	live, err := c.liveWorkers(ctx, req.Queue)
	if err != nil {
		return nil, err
	}
	if len(live) == 0 {
		return nil, fmt.Errorf("queue %s: %w: none is alive (start one)", req.Queue, ErrNoWorkers)
	}
	var ins *rivertype.JobInsertResult
	err = c.db.retry(ctx, c.log, "insert build job", func(ctx context.Context) error {
		var err error
		ins, err = c.river.Insert(ctx, args, &river.InsertOpts{Queue: req.Queue})
		return err
	})
	if err != nil {
		return nil, c.db.errorf(err, "insert build job")
	}
	id := ins.Job.ID
	what := fmt.Sprintf("build %s %s %s", req.Tree, words.ShortHash(req.Commit), req.Config)
	logEvent(c.log, "job queued", "job", id, "kind", kindBuild, "queue", req.Queue, "build", what, "shared", ins.UniqueSkippedAsDuplicate)
	res, err := c.waitBuild(ctx, id, what, req)
	if err != nil && ctx.Err() != nil && !ins.UniqueSkippedAsDuplicate {
		c.cancelJobs([]int64{id})
	}
	if res != nil {
		res.Shared = ins.UniqueSkippedAsDuplicate
	}
	return res, err
}

func (c *Client) waitBuild(ctx context.Context, id int64, what string, req BuildRequest) (*BuildResult, error) {
	w := c.newWaiter(ctx, req.PollInterval)
	defer w.close()
	p := &pendingJob{id: id, kind: kindBuild}
	started := 0
	var since time.Time // since when this client has reached the database without a break
	for {
		c.handBack(ctx, []int64{id}, &since)
		var states map[int64]*jobState
		tries := 0
		err := c.db.retry(ctx, c.log, "poll jobs", func(ctx context.Context) error {
			tries++
			var err error
			states, err = c.pollJobs(ctx, []int64{id}, "lpmbisect_fleet_build_results")
			return err
		})
		if tries > 1 {
			since = time.Time{}
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			return nil, c.db.errorf(err, "poll jobs")
		}
		s := states[id]
		switch {
		case s == nil:
			return nil, &JobError{ID: id, Kind: kindBuild, What: what, State: "deleted", Reason: "the job is gone from the queue (deleted by hand?)"}
		case s.hasResult:
			return c.readBuild(ctx, id, req)
		case s.state == rivertype.JobStateCancelled || s.state == rivertype.JobStateDiscarded:
			return nil, &JobError{ID: id, Kind: kindBuild, What: what, State: string(s.state), Worker: s.worker, Reason: c.db.scrub.Text(s.lastError)}
		}
		if s.errorsCount > p.retries {
			p.retries = s.errorsCount
			if s.handedBack != nil {
				var notices handBackNotices
				notices.add(*s.handedBack, id, 1)
				notices.log(c.log, "build")
			} else {
				logEvent(c.log, "job retry", "job", id, "build", what, "worker", s.worker, "attempt", s.attempt, "error", c.db.scrub.Text(s.lastError))
			}
		}
		if s.state == rivertype.JobStateRunning && s.attempt > started {
			started = s.attempt
			logEvent(c.log, "job start", "job", id, "build", what, "worker", s.worker, "attempt", s.attempt)
		}
		w.wait(ctx)
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
	}
}

func (c *Client) readBuild(ctx context.Context, id int64, req BuildRequest) (*BuildResult, error) {
	r := &BuildResult{JobID: id}
	var dur int64
	err := c.db.retry(ctx, c.log, "read build result", func(ctx context.Context) error {
		return c.db.pool.QueryRow(ctx, `
SELECT worker, ok, detail, image_sha256, release, compiler, config_hash, dropped, log_tail, duration_ns
FROM lpmbisect_fleet_build_results WHERE job_id = $1 ORDER BY stored_at, attempt LIMIT 1`, id).Scan(
			&r.Worker, &r.OK, &r.Detail, &r.ImageSHA256, &r.Release, &r.Compiler, &r.ConfigHash, &r.Dropped, &r.LogTail, &dur)
	})
	if err != nil {
		return nil, c.db.errorf(err, "read result of build job %d", id)
	}
	r.Duration = time.Duration(dur)
	if len(r.LogTail) > maxBuildLog {
		r.LogTail = r.LogTail[len(r.LogTail)-maxBuildLog:]
	}
	if !r.OK {
		logEvent(c.log, "build failed", "job", id, "worker", r.Worker, "detail", r.Detail)
		// The worker's detail is its build's error, which says the build failed itself.
		detail := strings.TrimPrefix(r.Detail, kbuild.ErrBuildFailed.Error()+": ")
		return r, fmt.Errorf("build %s of tree %s on worker %s: %w: %s", words.ShortHash(req.Commit), req.Tree, r.Worker, kbuild.ErrBuildFailed, detail)
	}
	if r.Image, err = c.FetchBlob(ctx, r.ImageSHA256, req.Dir); err != nil {
		return nil, err
	}
	logEvent(c.log, "build done", "job", id, "worker", r.Worker, "image", words.ShortHash(r.ImageSHA256), "release", r.Release, "took", r.Duration)
	return r, nil
}

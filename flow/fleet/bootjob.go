package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/internal/logtail"
	"github.com/lpmbisect/lpmbisect/internal/words"
	"github.com/lpmbisect/lpmbisect/wire"
)

// maxConsole bounds the console log a boot result carries: its end, where
// a panic or the last words of a hung guest are.
const maxConsole = 256 << 10

type bootWorker struct {
	river.WorkerDefaults[bootArgs]
	rw *runningWorker
}

// Timeout implements river.Worker: a boot's stuck time is its job's.
func (w *bootWorker) Timeout(job *river.Job[bootArgs]) time.Duration {
	return stuckAfter(job.Args.StuckAfterMS, DefaultBootStuckAfter)
}

// Work implements river.Worker.
func (w *bootWorker) Work(ctx context.Context, job *river.Job[bootArgs]) error {
	a := job.Args
	if err := a.Validate(); err != nil {
		return w.rw.refuse(job.JobRow, err)
	}
	if a.Accel == wire.AccelIcount && a.Class != w.rw.host.Class() {
		// Another worker of the queue has the class; this one puts the
		// job back without spending an attempt.
		logEvent(w.rw.Log, "job for another host class", "job", job.ID, "wants", a.Class, "here", w.rw.host.Class(), "snooze", snoozeOtherClass)
		return river.JobSnooze(snoozeFor())
	}
	return w.rw.workBoots(ctx, job.JobRow, bootJob{accel: a.Accel, guest: a.Guest, boots: []bootSpec{a.Boot}},
		completeIn(job))
}

type roundWorker struct {
	river.WorkerDefaults[roundArgs]
	rw *runningWorker
}

// Timeout implements river.Worker: a round's stuck time is its job's.
func (w *roundWorker) Timeout(job *river.Job[roundArgs]) time.Duration {
	return stuckAfter(job.Args.StuckAfterMS, DefaultBootStuckAfter)
}

// Work implements river.Worker.
func (w *roundWorker) Work(ctx context.Context, job *river.Job[roundArgs]) error {
	a := job.Args
	if err := a.Validate(); err != nil {
		return w.rw.refuse(job.JobRow, err)
	}
	return w.rw.workBoots(ctx, job.JobRow, bootJob{accel: a.Accel, guest: a.Guest, boots: a.Boots, paired: a.Paired, seed: a.Seed},
		completeIn(job))
}

// completeIn returns what completes job inside the transaction that stores
// its results (River's JobCompleteTx): a result lands with its job's
// completion, or not at all. It is the attempt fence of results: only the
// attempt that still holds the job completes it (holdJob; River's
// JobCompleteTx checks the state, not the attempt), else a
// *LostAttemptError rolls the results back.
func completeIn[T river.JobArgs](job *river.Job[T]) func(context.Context, pgx.Tx) error {
	return func(ctx context.Context, tx pgx.Tx) error {
		if err := holdJob(ctx, tx, job.JobRow); err != nil {
			return err
		}
		done, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		if err == nil && done.State != rivertype.JobStateCompleted {
			err = fmt.Errorf("job %d attempt %d: completion left the job %s", job.ID, job.Attempt, done.State)
		}
		return err
	}
}

// bootJob is what boot and round jobs have in common.
type bootJob struct {
	accel  wire.Accel
	guest  string
	boots  []bootSpec
	paired bool
	seed   uint64
}

// bootResult is one finished boot as a worker stores it.
type bootResult struct {
	res     *vmrunner.Result
	raw     []byte // the results channel, as the guest sent it
	console []byte // the end of the console log
	started time.Time
}

// workBoots runs the boots of a job on this host and stores their results
// with the job's completion in one transaction.
func (rw *runningWorker) workBoots(ctx context.Context, job *rivertype.JobRow, bj bootJob, complete func(context.Context, pgx.Tx) error) error {
	if err := rw.checkBootJob(job, bj); err != nil {
		return err
	}
	paths, err := rw.fetchBlobs(ctx, job, bj)
	if err != nil {
		return err
	}
	l := bj.boots[0].Labels
	logEvent(rw.Log, "job start", "job", job.ID, "kind", job.Kind, "queue", job.Queue, "attempt", job.Attempt, "boots", len(bj.boots), "run", l.Run, "side", l.Side, "boot", l.Boot)
	rw.notify(ctx, "start", job.ID)

	runDir := filepath.Join(rw.CacheDir, "runs", fmt.Sprintf("job-%d-%d", job.ID, job.Attempt))
	defer os.RemoveAll(runDir)
	results, err := rw.runBoots(ctx, job, bj, rw.bootConfigs(bj, paths, runDir))
	if err != nil {
		return err
	}
	return rw.storeBootJob(ctx, job, bj, results, complete)
}

// checkBootJob refuses a job this worker cannot run: its accelerator is
// not its queue's here, or its guest is not this worker's.
func (rw *runningWorker) checkBootJob(job *rivertype.JobRow, bj bootJob) error {
	q, ok := rw.queues[job.Queue]
	if !ok || q.Accel != bj.accel {
		return rw.refuse(job, &ArgsError{Kind: job.Kind, Field: "accel", Err: fmt.Errorf("%w: a %s boot on queue %s, whose boots run under %s", ErrBadArgs, bj.accel, job.Queue, orBuild(q))})
	}
	if bj.guest != rw.host.GuestSHA256 {
		return rw.refuse(job, &ArgsError{Kind: job.Kind, Field: "guest", Err: fmt.Errorf("%w: the job's guest is sha256 %s, worker %s runs %s (lpmbisect %s): run one lpmbisect version across the fleet",
			ErrGuestMismatch, words.ShortHash(bj.guest), rw.Name, words.ShortHash(rw.host.GuestSHA256), rw.host.Version)})
	}
	return nil
}

// fetchBlobs fetches and checks every blob of the job before the first
// boot, and returns their paths by SHA-256.
func (rw *runningWorker) fetchBlobs(ctx context.Context, job *rivertype.JobRow, bj bootJob) (map[string]string, error) {
	paths := map[string]string{}
	for _, b := range bj.boots {
		for _, sum := range []string{b.Kernel, b.Initramfs} {
			if paths[sum] != "" {
				continue
			}
			p, err := rw.db.fetchBlob(ctx, sum, rw.blobDir)
			var be *BlobError
			switch {
			case errors.As(err, &be):
				return nil, rw.refuse(job, err)
			case err != nil && ctx.Err() != nil:
				return nil, rw.interrupted(ctx, job, "fetch")
			case err != nil:
				return nil, err
			}
			paths[sum] = p
		}
	}
	return paths, nil
}

// bootConfigs are the job's boots as this worker runs them, from the
// fetched blobs (paths) and in run directories below runDir.
func (rw *runningWorker) bootConfigs(bj bootJob, paths map[string]string, runDir string) []measure.Job {
	jobs := make([]measure.Job, len(bj.boots))
	for i, b := range bj.boots {
		cpu, _ := vmrunner.LookupCPUProfile(b.CPUProfile) // Validate checked the name
		jobs[i] = measure.Job{Boot: i + 1, Pair: b.Labels.Pair, Config: vmrunner.Config{
			CPU:  cpu,
			QEMU: rw.QEMU, Accel: bj.accel, Kernel: paths[b.Kernel], Initramfs: paths[b.Initramfs], KernelArgs: b.KernelArgs,
			MemoryMB: b.MemoryMB, CPUs: b.CPUs, RunDir: filepath.Join(runDir, fmt.Sprint(i)),
			BootDeadline:     time.Duration(b.BootDeadlineMS) * time.Millisecond,
			ProgressDeadline: time.Duration(b.ProgressDeadlineMS) * time.Millisecond,
			StartDeadline:    time.Duration(b.StartDeadlineMS) * time.Millisecond,
			Limits:           vmrunner.Limits{MaxLine: b.MaxLine, MaxBytes: b.MaxBytes},
		}}
		if jobs[i].Config.Limits.MaxLine == 0 || jobs[i].Config.Limits.MaxBytes == 0 {
			jobs[i].Config.Limits = vmrunner.DefaultLimits
		}
	}
	return jobs
}

// runBoots runs the jobs, in pairs when the job asks, and returns every
// boot's result. Every boot runs under the job's accelerator, its queue's
// (checkBootJob): never another. A boot that KVM fails ends the job with
// the error, and no result, and the next start of this worker drops its
// kvm queues.
func (rw *runningWorker) runBoots(ctx context.Context, job *rivertype.JobRow, bj bootJob, jobs []measure.Job) ([]*bootResult, error) {
	var exec measure.Executor = measure.Local{Boot: vmrunner.Boot, Workers: 1}
	if bj.paired {
		exec = &measure.Paired{Boot: vmrunner.Boot, Seed: bj.seed}
	}
	results := make([]*bootResult, len(jobs))
	err := exec.Run(ctx, jobs, func(j measure.Job, res *vmrunner.Result) error {
		i := j.Boot - 1
		if res.Outcome == vmrunner.Canceled {
			return context.Canceled
		}
		br, err := collect(res, j.Config)
		if err != nil {
			return err
		}
		br.started = time.Now().Add(-res.Duration)
		results[i] = br
		return nil
	})
	var tooLong *vmrunner.CommandLineTooLongError
	var kvm *vmrunner.KVMUnusableError
	if errors.As(err, &kvm) && rw.kvm != nil {
		// Until KVM is probed again (lpmbisect host --reprobe).
		if merr := rw.kvm.MarkBroken(kvm.Reason); merr != nil {
			logEvent(rw.Log, "KVM failure not kept", "error", merr)
		}
	}
	switch {
	case errors.As(err, &tooLong):
		return nil, rw.refuse(job, &ArgsError{Kind: job.Kind, Field: "kernel_args", Err: fmt.Errorf("%w: %w", ErrBadArgs, err)})
	case ctx.Err() != nil:
		return nil, rw.interrupted(ctx, job, "boot")
	case err != nil:
		return nil, fmt.Errorf("boot on %s: %w", rw.Name, err)
	}
	for i, r := range results {
		if r == nil {
			return nil, fmt.Errorf("boot %d of job %d ended without a result", i+1, job.ID)
		}
	}
	return results, nil
}

// storeBootJob stores the boots' results with the job's completion, and
// logs each boot; an attempt that lost the job drops them.
func (rw *runningWorker) storeBootJob(ctx context.Context, job *rivertype.JobRow, bj bootJob, results []*bootResult, complete func(context.Context, pgx.Tx) error) error {
	err := rw.db.retry(rw.storing(ctx), rw.Log, "store boot results", func(ctx context.Context) error {
		return rw.storeBoots(ctx, job, bj.boots, results, complete)
	})
	var lost *LostAttemptError
	if errors.As(err, &lost) {
		logEvent(rw.Log, "results dropped", "job", job.ID, "attempt", job.Attempt, "why", lost)
		return lost
	}
	if err != nil {
		return rw.db.errorf(err, "store results of job %d", job.ID)
	}
	for i, r := range results {
		l := bj.boots[i].Labels
		logEvent(rw.Log, "boot done", "job", job.ID, "attempt", job.Attempt, "run", l.Run, "side", l.Side, "boot", l.Boot,
			"outcome", r.res.Outcome, "took", r.res.Duration, "detail", r.res.Detail)
	}
	return nil
}

func orBuild(q Queue) string {
	if q.Name == "" {
		return "nothing (not one of this worker's queues)"
	}
	if q.Build() {
		return "no accelerator (a build queue)"
	}
	return string(q.Accel)
}

// collect reads what a boot left in its run directory: the raw results
// channel (vmrunner bounds it by the boot's limits) and the end of the
// console log.
func collect(res *vmrunner.Result, cfg vmrunner.Config) (*bootResult, error) {
	raw, err := readHead(filepath.Join(cfg.RunDir, "results.out"), int64(cfg.Limits.MaxBytes))
	if err != nil {
		return nil, fmt.Errorf("read results of the boot: %w", err)
	}
	// vmrunner writes what both channels carried into results.out; a
	// guest uses one of them, so this is the stream vmrunner decoded.
	// Should both have spoken, the client would decode another stream
	// than the worker saw: say so rather than send it.
	if got := vmrunner.DecodeStream(raw, cfg); got.Complete != res.Stream.Complete || len(got.Results) != len(res.Stream.Results) {
		return nil, fmt.Errorf("results capture of the boot does not decode as its stream did (%d results, complete %v; want %d, %v)",
			len(got.Results), got.Complete, len(res.Stream.Results), res.Stream.Complete)
	}
	console, err := logtail.Read(res.ConsoleLog, maxConsole)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read console log of the boot: %w", err)
	}
	return &bootResult{res: res, raw: raw, console: console}, nil
}

// readHead reads at most limit bytes from the start of a file.
func readHead(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// storeBoots writes the results of a job's boots under (job, attempt,
// boot) and completes the job, in one transaction: a result is stored
// exactly when its job completes. A second try of the same attempt (the
// commit's answer was lost) stores nothing twice.
func (rw *runningWorker) storeBoots(ctx context.Context, job *rivertype.JobRow, boots []bootSpec, results []*bootResult, complete func(context.Context, pgx.Tx) error) error {
	tx, err := rw.db.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	for i, r := range results {
		l := boots[i].Labels
		res := r.res
		if _, err := tx.Exec(ctx, `
INSERT INTO lpmbisect_fleet_boot_results (job_id, attempt, boot, worker, run, side, side_boot, pair, outcome, detail,
	channel, accel, qemu_version, cpu_model, duration_ns, command, results, console, started_at, phases)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
ON CONFLICT (job_id, attempt, boot) DO NOTHING`,
			job.ID, job.Attempt, i, rw.Name, l.Run, l.Side, l.Boot, l.Pair, string(res.Outcome), res.Detail,
			res.Channel, string(res.Accel), res.QEMUVersion, res.CPUModel, res.Duration.Nanoseconds(), nonNil(res.Command),
			r.raw, r.console, r.started, wire.MarksText(res.Phases)); err != nil {
			return err
		}
	}
	if err := complete(ctx, tx); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", notifyChannel, fmt.Sprintf("done %d", job.ID)); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

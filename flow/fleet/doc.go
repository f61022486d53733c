// Package fleet runs lpmbisect's builds and boots as River jobs
// (github.com/riverqueue/river) on PostgreSQL, worked by workers on build
// and test hosts, so that a comparison, a bisection or a night's tracking
// can use more than one machine. One machine needs none of it.
//
// # Pieces
//
//   - Worker runs on each host and works the jobs of its queues. A queue
//     names its host class: the part before the first '-' is the
//     accelerator its boots run under ("icount", "tcg", "kvm-zen4") or
//     "build". At start the worker probes the accelerators (QEMU must
//     implement them; icount needs the CPU model its boots emulate; KVM
//     must really run real kernels, which the verdict kept for this host
//     says, or else a boot of a probe kernel shows: vmrunner.CheckKVM, the
//     probe and the cache of every run), drops the queues whose
//     accelerator does not work here, saying why,
//     and records its host (CPU model, cores, QEMU version, working
//     accelerators, queues) in a workers table with a heartbeat, under
//     its name and an instance: the process's River client ID (name/random
//     hex), new at every start.
//   - Executor is the remote policy of measure.Executor: a measure.Runner
//     with it puts its boots on a queue instead of booting them, and
//     compare, bisect and nightly decide with the same code as locally.
//   - Client.Build asks a build worker for a kernel image.
//   - Migrate creates and upgrades River's tables and ours; nothing else
//     changes a schema. ReadStatus lists workers, queues, running and
//     failed jobs.
//
// # Jobs
//
// Three kinds, each with small versioned arguments that the worker
// validates (argsVersion; a job of another version, an unknown kind, a
// value out of bounds is canceled with a message, not retried):
//
//   - lpmbisect.boot: one icount boot. Instruction counts do not depend on
//     the host, only on the QEMU version and the emulated CPU model, so
//     icount boots spread over every worker of the queue: the job names the
//     host class (HostClass) and a worker of another class hands it back
//     (River's JobSnooze, which costs no attempt) for one that has it. The
//     Executor settles the class from the queue's live workers, and refuses
//     to start when they disagree. A queue per class would do the same
//     without snoozes, but every QEMU upgrade would rename queues, and a
//     fleet half way through an upgrade could not run at all.
//   - lpmbisect.round: the boots of one round of a wall-clock comparison,
//     on one host: A and B one after the other, or a pair side by side with
//     paced guests (measure.Paired). Wall-clock numbers compare only within
//     a host, so A and B of a round never run on two.
//   - lpmbisect.build: a tree and a commit the worker knows, and the name
//     of one of its build configurations. Jobs carry no commands: what runs
//     is the worker's configuration (package build). A failed compile is a
//     result, not a failed job. Build jobs are unique by their arguments,
//     so clients that ask for the same build share one.
//
// Every job names the SHA-256 of the guest binary the client packed; a
// worker whose own guest differs runs another lpmbisect and refuses it.
//
// # One accelerator per run
//
// No boot of a run is planned for one accelerator and run under another:
// the client decides its run's accelerator before anything is planned, as
// the queue's (ResolveAccel for auto; CheckBootQueue refuses another);
// every job carries it (bootArgs.Accel, roundArgs.Accel: never auto) and
// names only boots whose guest is told it (Executor.spec); a worker works
// only queues whose accelerator runs guests on its host, refuses a job
// whose accelerator is not its queue's, and boots each job under the
// job's accelerator, never falling back: a boot that KVM fails fails the
// job (and is kept in the worker's verdict, so its next start drops its
// kvm queues); the client refuses a result of another accelerator than
// its queue's.
//
// # Blobs
//
// Kernel images and initramfs archives travel content-addressed in the
// database itself (lpmbisect_fleet_blobs and _blob_chunks, 1 MiB bytea
// chunks), not in a shared directory: the fleet needs the database anyway,
// every host that reaches it reaches the blobs, a blob appears in one
// transaction or not at all, and there is no network file system to mount,
// secure and keep consistent across hosts. The price is database size
// (about 10 MiB a kernel) and bytes through the server, small beside a
// boot. A worker hashes everything it fetches and refuses a job whose blob
// does not hash to its name; files in its cache are hashed again before
// use.
//
// # Results exactly once
//
// A worker stores a job's results in the transaction that completes the
// job (River's JobCompleteTx), under the key (job, attempt, boot), and
// only if its attempt still holds the job (the attempt fence, below). A
// job may run twice: handed back from a worker that stopped answering, or
// rescued by River after its stuck time, while the first attempt was only
// slow. The fence keeps the late attempt's results out; the key makes an
// attempt's results land once even when a commit is retried after its
// answer was lost. So the boots of a wall-clock round are always those of
// one attempt on one host.
//
// # Dead workers
//
// Every worker beats in the workers table every Worker.Heartbeat (5 s by
// default). One the database has not heard from for three beats (15 s),
// neither by a beat nor by fetching a job, is taken for dead, and its
// running jobs go back to the queue (or are discarded, as River's rescuer
// does, when that was their last attempt). River has no call for this (its
// rescuer acts on elapsed time only; JobCancel of a running job only flags
// it, JobRetry leaves running jobs alone), so it is one UPDATE of ours on
// river_job (handBackSQL), which appends an error saying which worker
// stopped answering at what time. Attempt counts as for a failure.
//
// Who hands back: both every live worker, after each of its beats, for all
// dead workers' jobs, and every waiting client, at each poll, for its own
// jobs. The workers cover jobs whose client is gone or not waiting (a
// bisection between steps, a crashed client); the client is the one that
// loses time and must say why, and hands back even when no worker of the
// queue survived, so a worker started later takes the jobs at once. The
// statement is idempotent and row-locked: each attempt goes back once,
// whoever runs it.
//
// Why it cannot race a worker that is merely slow:
//
//   - Liveness is the database's own clock (now() against last_seen, which
//     now() wrote), so host clocks play no part, and the heartbeat runs
//     apart from the boots: a slow boot does not stop it.
//   - A database outage is not a death: whoever hands back must itself
//     have reached the database without a break for the whole silence
//     (its own beats or polls), else it waits that long first.
//   - A worker that was stalled or cut off (SIGSTOP, a paused VM, a
//     partition) and comes back may hold attempts that were handed back.
//     Its results are fenced: the transaction that stores them locks the
//     job's row and checks that it is still running with this attempt's
//     number, fetch time and worker process, as River's fetch left them;
//     otherwise nothing is stored (LostAttemptError, "results dropped" in
//     its log). The hand-back needs the row running and unlocked, so the
//     two exclude each other. Its reports to River are fenced too:
//     River's completer updates a job by id, checking its state and not
//     its attempt, so a late "failed" or "completed" would land on the
//     attempt that holds the job now. Every attempt records its token
//     (attemptToken: attempt, fetch time, worker process) as its output
//     (River's RecordOutput), and a trigger on river_job (schema version
//     3) drops any report whose token is not the row's. The worker, heard
//     again, is alive and takes new jobs.
//   - A restarted worker of the same name is a new instance: River's
//     attempts name the process, not the name, so it neither inherits nor
//     is confused with its predecessor's attempts, whose process is no
//     longer in the table and whose jobs go back after the silence. A
//     process that finds its name taken by another (it was taken for dead
//     while it did not answer) stops with ErrWorkerReplaced.
//
// From a worker's death to the next attempt's start: its last beat is at
// most one heartbeat before the death; the hand-back may act three beats
// after that beat, and does at the next poll of a waiting client (2 s) or
// beat of a live worker (5 s); a worker with a free slot fetches within
// River's fetch interval (1 s). So 10 to 18 s with a client waiting, 21 s
// at worst without one, plus any wait for a free slot.
//
// What detection costs: per worker, one beat every heartbeat (an UPDATE
// of its one row in the workers table: 0.2 writes a second, 0.1 before the
// heartbeat went from 10 s to 5 s) and one hand-back statement after it
// (reads the running jobs through River's state index; writes only when it
// hands back); per waiting client one hand-back statement, over its own
// jobs by id, per poll (every 2 s), beside the poll itself. Twenty workers
// and five waiting clients: 4 row writes and 6.5 small queries a second.
//
// River's rescuer stays as the backstop for an attempt that is stuck on a
// live worker: a job is stuck when it has run longer than
// RescueStuckJobsAfter and than its kind's worker Timeout. Workers set the
// former to minStuckAfter and take the latter from the job
// (stuck_after_ms: by default 10 minutes a boot, 2 hours a build); the
// job's context is canceled at the same time. QEMU dies with its worker
// (parent-death signal).
//
// # Waiting
//
// Workers announce job starts and completions with pg_notify; clients
// LISTEN and also poll every few seconds (Executor.PollInterval), so
// results arrive at once and a missed notification (a reconnect) costs at
// most one poll. Polling also shows what nobody announces: rescues,
// cancellations, discarded jobs.
//
// # Faults
//
// A database that goes away is retried with backoff (0.5 s doubling to
// 30 s) by workers and clients, and said in the log; results of a boot that
// ended are kept in memory and stored when the database is back. A worker
// that stops (its context ends) kills its boots and hands their jobs back
// at once (JobSnooze(0)); a client whose context ends (Ctrl-C) cancels its
// outstanding jobs. The database URL's password never appears in a log
// line or an error (history.Redact).
//
// # Logs
//
// Workers and clients log to a *log.Logger, one line per event with
// key=value fields ("job start job=12 kind=lpmbisect.boot worker=w1 …"),
// no colours: what a systemd journal reads.
package fleet

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
//     must really run a guest, which only a boot of a probe kernel shows),
//     drops the queues whose accelerator does not work here, saying why,
//     and records its host (CPU model, cores, QEMU version, working
//     accelerators, queues) in a workers table with a heartbeat.
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
// validates (ArgsVersion; a job of another version, an unknown kind, a
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
// job (River's JobCompleteTx), under the key (job, attempt, boot). River
// may run a job twice: its rescuer gives a job that ran longer than its
// stuck time to another worker, whether the first is dead or only slow.
// The key makes each attempt's results land once even when a commit is
// retried after its answer was lost, and the client reads the first
// completed attempt's.
//
// River's rescuer acts on elapsed time, not on heartbeats: a job is stuck
// when it has run longer than RescueStuckJobsAfter and than its kind's
// worker Timeout. Workers set the former to MinStuckAfter and take the
// latter from the job (stuck_after_ms: by default 10 minutes a boot, 2
// hours a build), so each kind, and each client, has its own stuck time;
// the job's context is canceled at the same time. The rescuer looks every
// 30 seconds, so a job of a killed worker runs again within its stuck time
// plus half a minute. QEMU dies with its worker (parent-death signal).
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

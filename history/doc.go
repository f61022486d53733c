// Package history stores what lpmbisect nightly measures, night after night,
// so that any night can be analysed again later: every boot's raw benchfmt
// results, their per-boot summaries, the per-night estimates and verdicts
// that alerts and the change-point pass use, and the change points found,
// with their mail and bisection.
//
// # Backends
//
// A location is either a file path, a SQLite database (embedded, pure Go:
// modernc.org/sqlite, no cgo, no server: the default, one file in the
// cache directory), or a postgres:// (postgresql://) URL, a PostgreSQL
// database that a team shares. Both have the same schema and run the same
// queries: they are written once with ? placeholders in the SQL both
// understand (ON CONFLICT … DO UPDATE/NOTHING, RETURNING, partial unique
// indexes), and a small dialect rebinds placeholders and spells the two
// column types that differ (surrogate keys and timestamps).
//
// # Schema
//
// All tables are named lpmbisect_*, so the history can share a PostgreSQL
// database with others (River's job tables, say); none of them is touched.
//
//	lpmbisect_history_schema  version, description, applied_at, applied_by: one row per migration
//	lpmbisect_series          name (unique), kind (git | images), source, branch, reference,
//	                          bench, accel; last tip seen (commit, image SHA-256)
//	lpmbisect_nights          series, night (YYYY-MM-DD; unique per series), status, reason, note;
//	                          the tip's and the reference's commit, subject, image SHA-256,
//	                          release, compiler, config hash; accel, QEMU version, CPU model,
//	                          host, lpmbisect version; started, finished
//	lpmbisect_boots           night, role (tip | reference | rebuilt-previous | …), boot index
//	                          (unique together), outcome, raw benchfmt results
//	lpmbisect_boot_summaries  boot, benchmark, unit (the key); median, samples, min, max
//	lpmbisect_night_rows      night, benchmark, unit (the key); tip and reference centre,
//	                          interval and boots; tip/reference ratio; verdict, change and p
//	                          against the last measured tip and against the reference
//	lpmbisect_change_points   series, benchmark, unit, line (kernel | host), night and index,
//	                          range (night and commit before, commit after), change, p,
//	                          provisional, status
//	                          (open | acknowledged | muted | withdrawn), first reported,
//	                          updated, mailed, bisection (state, culprit, subject, reason);
//	                          one live (not withdrawn) change point per series, metric, line
//	                          and night
//	lpmbisect_excursions      night, benchmark, unit (a night row), line (the key); the level
//	                          the night's value departed from, and by how much: the nights
//	                          the change-point pass leaves out of its statistics (package
//	                          changepoint), replaced by every pass (SetExcursions) and gone
//	                          with their row
//
// The unique keys make every write idempotent: a night run again after
// being killed half way adds no second boot (PutBoot keeps the first),
// replaces the night's rows (SetNightRows), and finds the change points it
// detects again instead of adding them (PutChangePoint); a pass's
// excursions replace the last pass's (SetExcursions). A NaN is stored as
// NULL, because SQLite would store NULL for it anyway; it reads back as NaN.
//
// # Transactions
//
// Write runs a function in one transaction: a night's write is one Write, so
// a kill, a crash or an error leaves the night as it was before, never half
// written. In SQLite (journal mode WAL, so readers run beside the writer)
// transactions begin IMMEDIATE: they take the write lock at once, waiting up
// to 30 s for another writer, and cannot fail half way on a lock upgrade.
//
// # Migrations
//
// The schema is versioned: lpmbisect_history_schema records each migration
// applied, and Migrate applies the missing ones, each in its own
// transaction, under a lock so two processes migrating at once apply each
// once. Open never changes an existing schema. A database migrated by a newer
// lpmbisect (ErrNewerSchema) or that is not ours (ErrForeignDatabase: a file
// that is not SQLite, a SQLite file with other tables, our table names
// without our version table) is refused and left as it was. A database that
// needs migrating (ErrNeedsMigration) is left too, because a shared team
// database must not be upgraded behind its users' backs (the older
// lpmbisect on the next host could no longer open it), and an upgrade of a
// personal file is a moment to take a copy. The one exception is a SQLite
// file that does not exist yet, or is empty: Open creates it at the current
// version, so the default history needs no setup step.
//
// # Locking
//
// Two nightly processes on one database would boot the same kernels twice
// and race to report the same change points. DB.Lock gives an exclusive
// named lock that the second process waits for, up to a timeout, or is
// refused with ErrLocked and who holds it (host, pid, since). The lock dies
// with its holder however it dies, so a killed nightly leaves no stale lock
// to clean up by hand: in PostgreSQL it is a session advisory lock (gone
// when the session ends, on any host), in SQLite an flock on a file beside
// the database (gone when the process ends; like SQLite itself it needs a
// local file system). The lock orders work; it does not guard data: writes
// are consistent without it.
//
// # Credentials
//
// A PostgreSQL URL may carry a password. Redact hides it, every error of
// this package shows the redacted location, and the password is scrubbed
// from the text of errors that the driver returns.
package history

package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/lpmbisect/lpmbisect/internal/version"
)

// Errors of Connect, Worker.Run and Migrate.
var (
	// ErrNeedsMigration: River's tables or ours are missing or older than
	// this lpmbisect needs (Migrate brings them up). Nothing was changed.
	ErrNeedsMigration = errors.New("fleet database needs migrating")
	// ErrNewerSchema: the database was migrated by a newer lpmbisect.
	ErrNewerSchema = errors.New("fleet database is newer than this lpmbisect (upgrade lpmbisect)")
)

// schemaTable records our migrations, one row per applied version.
const schemaTable = "lpmbisect_fleet_schema"

// migrations are our tables, in order; each runs in its own transaction.
// River's tables (river_job, river_queue, …) are River's and migrated by
// rivermigrate.
var migrations = []struct {
	description string
	sql         string
}{
	{"blobs, workers, boot and build results", `
CREATE TABLE lpmbisect_fleet_blobs (
	sha256     text PRIMARY KEY CHECK (sha256 ~ '^[0-9a-f]{64}$'),
	size       bigint NOT NULL CHECK (size >= 0),
	chunks     integer NOT NULL CHECK (chunks >= 0),
	created_at timestamptz NOT NULL DEFAULT now(),
	used_at    timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE lpmbisect_fleet_blob_chunks (
	sha256 text NOT NULL REFERENCES lpmbisect_fleet_blobs ON DELETE CASCADE,
	n      integer NOT NULL CHECK (n >= 0),
	data   bytea NOT NULL,
	PRIMARY KEY (sha256, n)
);
CREATE TABLE lpmbisect_fleet_workers (
	name         text PRIMARY KEY,
	host         text NOT NULL,
	pid          integer NOT NULL,
	cpu_model    text NOT NULL,
	cores        integer NOT NULL,
	qemu_version text NOT NULL,
	icount_cpu   text NOT NULL,
	version      text NOT NULL,
	guest_sha256 text NOT NULL,
	accels       text[] NOT NULL,
	queues       text[] NOT NULL,
	dropped      text[] NOT NULL,
	heartbeat_ms integer NOT NULL,
	started_at   timestamptz NOT NULL,
	last_seen    timestamptz NOT NULL,
	stopped_at   timestamptz
);
CREATE TABLE lpmbisect_fleet_boot_results (
	job_id       bigint NOT NULL,
	attempt      integer NOT NULL,
	boot         integer NOT NULL,
	worker       text NOT NULL,
	run          text NOT NULL,
	side         text NOT NULL,
	side_boot    integer NOT NULL,
	pair         integer NOT NULL,
	outcome      text NOT NULL,
	detail       text NOT NULL,
	channel      text NOT NULL,
	accel        text NOT NULL,
	qemu_version text NOT NULL,
	cpu_model    text NOT NULL,
	duration_ns  bigint NOT NULL,
	command      text[] NOT NULL,
	results      bytea NOT NULL,
	console      bytea NOT NULL,
	started_at   timestamptz NOT NULL,
	stored_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
	PRIMARY KEY (job_id, attempt, boot)
);
CREATE TABLE lpmbisect_fleet_build_results (
	job_id       bigint NOT NULL,
	attempt      integer NOT NULL,
	worker       text NOT NULL,
	tree         text NOT NULL,
	commit       text NOT NULL,
	config       text NOT NULL,
	ok           boolean NOT NULL,
	detail       text NOT NULL,
	image_sha256 text NOT NULL,
	release      text NOT NULL,
	compiler     text NOT NULL,
	config_hash  text NOT NULL,
	dropped      text[] NOT NULL,
	log_tail     bytea NOT NULL,
	duration_ns  bigint NOT NULL,
	stored_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
	PRIMARY KEY (job_id, attempt)
);
`},
	{"calibrations of host classes", `
CREATE TABLE lpmbisect_fleet_calibrations (
	key_id    text PRIMARY KEY CHECK (key_id ~ '^[0-9a-f]{16}$'),
	key       jsonb NOT NULL,
	data      bytea NOT NULL,
	stored_at timestamptz NOT NULL DEFAULT now(),
	stored_by text NOT NULL
);
`},
	{"worker instances and the attempt fence", `
ALTER TABLE lpmbisect_fleet_workers ADD COLUMN instance text NOT NULL DEFAULT '';
-- The attempt fence (see attemptToken): a report of an attempt (River's
-- completer or JobCompleteTx, by job id) whose token is not the attempt
-- that holds the row is dropped, the row left as it is.
CREATE FUNCTION lpmbisect_fleet_fence() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	token jsonb := NEW.metadata->'output';
BEGIN
	IF jsonb_typeof(token) = 'object' AND token ? 'attempted_at' AND (
		(token->>'attempt')::integer IS DISTINCT FROM OLD.attempt
		OR (token->>'attempted_at')::timestamptz IS DISTINCT FROM OLD.attempted_at
		OR token->>'instance' IS DISTINCT FROM OLD.attempted_by[array_upper(OLD.attempted_by, 1)]) THEN
		RETURN NULL;
	END IF;
	RETURN NEW;
END $$;
CREATE TRIGGER lpmbisect_fleet_fence BEFORE UPDATE ON river_job FOR EACH ROW
	WHEN (OLD.kind LIKE 'lpmbisect.%' AND NEW.metadata->'output' IS DISTINCT FROM OLD.metadata->'output')
	EXECUTE FUNCTION lpmbisect_fleet_fence();
`},
	{"the phases of each boot", `
-- Where an icount boot's guest clock went (wire.MarksText); empty for
-- other boots and for rows stored before this column.
ALTER TABLE lpmbisect_fleet_boot_results ADD COLUMN phases text NOT NULL DEFAULT '';
`},
	{"calibrations keyed by twelve-digit IDs", `
-- A calibration's ID is words.ShortHash's twelve hex digits (calibrate.Key.ID);
-- it was sixteen. Rows stored under the old IDs are kept, though no key
-- finds them any more.
ALTER TABLE lpmbisect_fleet_calibrations DROP CONSTRAINT lpmbisect_fleet_calibrations_key_id_check;
ALTER TABLE lpmbisect_fleet_calibrations ADD CONSTRAINT lpmbisect_fleet_calibrations_key_id_check
	CHECK (key_id ~ '^[0-9a-f]{12}([0-9a-f]{4})?$');
`},
}

// MigrateResult says what Migrate did: River's schema version and ours,
// before and after.
type MigrateResult struct {
	RiverFrom, RiverTo int
	FleetFrom, FleetTo int
}

// Migrate brings River's tables and ours in the database at url up to
// what this lpmbisect needs. It changes nothing that is current, so it may
// run any number of times, and concurrent runs apply each step once.
// Nothing else in this package migrates: a database is changed only when
// its operator asks.
func Migrate(ctx context.Context, url string) (*MigrateResult, error) {
	db, err := open(ctx, url)
	if err != nil {
		return nil, err
	}
	defer db.close()
	res := &MigrateResult{}
	migrator, err := rivermigrate.New(riverpgxv5.New(db.pool), nil)
	if err != nil {
		return nil, db.errorf(err, "migrate River's tables")
	}
	res.RiverFrom, err = riverVersion(ctx, migrator)
	if err != nil {
		return nil, db.errorf(err, "read River's schema version")
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, db.errorf(err, "migrate River's tables")
	}
	if res.RiverTo, err = riverVersion(ctx, migrator); err != nil {
		return nil, db.errorf(err, "read River's schema version")
	}
	if res.FleetFrom, err = db.fleetVersion(ctx, db.pool); err != nil {
		return nil, err
	}
	if res.FleetFrom > len(migrations) {
		return nil, fmt.Errorf("fleet database %s: our schema is at version %d, this lpmbisect knows %d: %w", db.loc, res.FleetFrom, len(migrations), ErrNewerSchema)
	}
	for {
		done, v, err := db.migrateStep(ctx)
		if err != nil {
			return nil, err
		}
		res.FleetTo = v
		if done {
			return res, nil
		}
	}
}

func riverVersion(ctx context.Context, m *rivermigrate.Migrator[pgx.Tx]) (int, error) {
	vs, err := m.ExistingVersions(ctx)
	if err != nil {
		return 0, err
	}
	v := 0
	for _, m := range vs {
		v = max(v, m.Version)
	}
	return v, nil
}

type queryer interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// fleetVersion returns our schema version, 0 when our tables do not exist.
func (db *database) fleetVersion(ctx context.Context, q queryer) (int, error) {
	var exists bool
	if err := q.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", schemaTable).Scan(&exists); err != nil {
		return 0, db.errorf(err, "read our schema version")
	}
	if !exists {
		return 0, nil
	}
	var v int
	if err := q.QueryRow(ctx, "SELECT COALESCE(MAX(version), 0) FROM "+schemaTable).Scan(&v); err != nil {
		return 0, db.errorf(err, "read our schema version")
	}
	return v, nil
}

// migrateStep applies our next migration, if any, in one transaction that
// holds a lock for the duration, and reports whether the schema is current.
func (db *database) migrateStep(ctx context.Context) (bool, int, error) {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return false, 0, db.errorf(err, "migrate: begin")
	}
	defer tx.Rollback(ctx)
	// One lock for every lpmbisect migrating this database: "lpmbfleet".
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(7812711455712519540)"); err != nil {
		return false, 0, db.errorf(err, "migrate: lock")
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+schemaTable+` (
	version     integer PRIMARY KEY,
	description text NOT NULL,
	applied_at  timestamptz NOT NULL DEFAULT now(),
	applied_by  text NOT NULL)`); err != nil {
		return false, 0, db.errorf(err, "migrate: create %s", schemaTable)
	}
	v, err := db.fleetVersion(ctx, tx)
	if err != nil {
		return false, 0, err
	}
	if v >= len(migrations) {
		return true, v, tx.Commit(ctx)
	}
	m := migrations[v]
	if _, err := tx.Exec(ctx, m.sql); err != nil {
		return false, v, db.errorf(err, "migrate to version %d (%s)", v+1, m.description)
	}
	host, _ := os.Hostname()
	if _, err := tx.Exec(ctx, "INSERT INTO "+schemaTable+" (version, description, applied_by) VALUES ($1, $2, $3)",
		v+1, m.description, "lpmbisect "+version.String()+" on "+host); err != nil {
		return false, v, db.errorf(err, "migrate: record version %d", v+1)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, v, db.errorf(err, "migrate: commit version %d", v+1)
	}
	return v+1 >= len(migrations), v + 1, nil
}

// checkSchema fails with ErrNeedsMigration unless River's tables and ours
// are current, and with ErrNewerSchema when ours are newer.
func (db *database) checkSchema(ctx context.Context) error {
	migrator, err := rivermigrate.New(riverpgxv5.New(db.pool), nil)
	if err != nil {
		return db.errorf(err, "check River's tables")
	}
	have, err := riverVersion(ctx, migrator)
	if err != nil {
		// No river_migration table yet.
		have = 0
	}
	want := 0
	for _, m := range migrator.AllVersions() {
		want = max(want, m.Version)
	}
	if have < want {
		return fmt.Errorf("fleet database %s: River's schema is at version %d, this lpmbisect needs %d: %w", db.loc, have, want, ErrNeedsMigration)
	}
	v, err := db.fleetVersion(ctx, db.pool)
	if err != nil {
		return err
	}
	switch {
	case v > len(migrations):
		return fmt.Errorf("fleet database %s: our schema is at version %d, this lpmbisect knows %d: %w", db.loc, v, len(migrations), ErrNewerSchema)
	case v < len(migrations):
		return fmt.Errorf("fleet database %s: our schema is at version %d, this lpmbisect needs %d: %w", db.loc, v, len(migrations), ErrNeedsMigration)
	}
	return nil
}

package history

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	_ "modernc.org/sqlite"             // registers "sqlite"
)

// Errors of Open, Migrate and Lock. They are wrapped with the operation and
// the (redacted) location; test them with errors.Is.
var (
	// ErrNeedsMigration: the database has no history tables yet, or older
	// ones than this lpmbisect writes (Migrate brings them up). Nothing
	// was changed.
	ErrNeedsMigration = errors.New("history database needs migrating")
	// ErrNewerSchema: the database was migrated by a newer lpmbisect.
	// Nothing was changed.
	ErrNewerSchema = errors.New("history database is newer than this lpmbisect (upgrade lpmbisect to use it)")
	// ErrForeignDatabase: the file or database belongs to something else.
	// Nothing was changed.
	ErrForeignDatabase = errors.New("not an lpmbisect history database (name a new file or an empty database)")
	// ErrLocked: another process holds the lock; the error is a
	// *LockedError that says who.
	ErrLocked = errors.New("history is locked by another process")
	// ErrNotFound: no such series, night or change point.
	ErrNotFound = errors.New("not found in the history")
)

// DB is an open history database. It is safe for concurrent use.
type DB struct {
	sql      *sql.DB
	d        *dialect
	location string   // as given; never printed: use loc
	loc      string   // Redact(location)
	scrub    Scrubber // hides location's password in every error
	path     string   // SQLite: the database file (for the lock files)
	// counted: the schema has lpmbisect_generation (version 3 on), which
	// every Write counts in.
	counted bool
}

// Open opens the history at location: a postgres:// or postgresql:// URL
// names a PostgreSQL database, anything else a SQLite file.
//
// Open never changes a database's schema, with one exception: a SQLite
// file that does not exist yet (or is empty) is created and migrated to the
// current schema, so the default history in the cache directory needs no
// setup. Every other case that needs a migration (a PostgreSQL database
// without our tables, or an older schema in either backend) fails with
// ErrNeedsMigration and is left as it was; see Migrate.
func Open(ctx context.Context, location string) (*DB, error) {
	return open(ctx, location, migrations)
}

// Migrate brings the schema at location up to the version this lpmbisect
// knows, one migration per transaction, and returns the versions before and
// after. Concurrent Migrate calls on one database are serialised; a
// database that is foreign or newer is refused and left as it was.
func Migrate(ctx context.Context, location string) (from, to int, err error) {
	return migrateWith(ctx, location, migrations)
}

func migrateWith(ctx context.Context, location string, migrations []migration) (from, to int, err error) {
	db, from, err := openForMigration(ctx, location, migrations)
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	to, err = db.migrate(ctx, migrations)
	return from, to, err
}

// Location is the database's location with any password hidden: what
// messages may show.
func (db *DB) Location() string { return db.loc }

// Close closes the database. Locks taken with Lock must be released first.
func (db *DB) Close() error { return db.sql.Close() }

// IsPostgres reports whether location names a PostgreSQL database.
func IsPostgres(location string) bool {
	l := strings.ToLower(location)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// Redact returns location with its password, and any password given as a
// URL parameter, replaced by "xxxxx". File paths are returned unchanged. A
// postgres URL that does not parse is not shown at all.
func Redact(location string) string {
	if !IsPostgres(location) {
		return location
	}
	u, err := url.Parse(location)
	if err != nil {
		scheme, _, _ := strings.Cut(location, ":")
		return scheme + "://(a URL that does not parse, not shown)"
	}
	if q := u.Query(); len(q) > 0 {
		changed := false
		for k := range q {
			if isPasswordKey(k) {
				q.Set(k, hidden)
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
	}
	return u.Redacted()
}

// errorf wraps err with what was done and where; the password never shows.
func (db *DB) errorf(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("history %s: %s: %w", db.loc, fmt.Sprintf(format, args...), db.scrub.Error(err))
}

// sqliteHeader starts every SQLite 3 database file.
var sqliteHeader = []byte("SQLite format 3\x00")

// connect opens the pool, without looking at the schema.
func connect(ctx context.Context, location string) (*DB, error) {
	if strings.TrimSpace(location) == "" {
		return nil, errors.New("open history: no database named (give a file path or a postgres:// URL)")
	}
	db := &DB{location: location, loc: Redact(location), scrub: NewScrubber(location)}
	var dsn string
	if IsPostgres(location) {
		db.d = postgresDialect
		dsn = location
	} else {
		db.d = sqliteDialect
		if strings.ContainsRune(location, '?') {
			return nil, fmt.Errorf("open history %s: a file name with '?' is not supported (rename the file)", location)
		}
		db.path = location
		if err := os.MkdirAll(filepath.Dir(location), 0o755); err != nil {
			return nil, fmt.Errorf("open history %s: %w", location, err)
		}
		if err := checkSQLiteHeader(location); err != nil {
			return nil, err
		}
		// busy_timeout lets a writer wait for another process's
		// transaction; immediate transactions take the write lock at BEGIN,
		// so a transaction never fails half-way on an upgrade to a write
		// lock. Neither changes the file. foreign_keys makes ON DELETE
		// CASCADE and the references hold as in PostgreSQL.
		dsn = location + "?_pragma=busy_timeout(30000)&_pragma=foreign_keys(1)&_txlock=immediate&_time_format=sqlite"
	}
	pool, err := sql.Open(db.d.driver, dsn)
	if err != nil {
		return nil, db.errorf(err, "open")
	}
	db.sql = pool
	if err := pool.PingContext(ctx); err != nil {
		pool.Close()
		if isNotADatabase(err) {
			return nil, fmt.Errorf("open history %s: %w", db.loc, ErrForeignDatabase)
		}
		hint := "can this user read and write the file and its directory?"
		if db.d.postgres {
			hint = "is the server up, and are the URL's user, password and database right?"
		}
		return nil, fmt.Errorf("open history %s: %w (%s)", db.loc, db.scrub.Error(err), hint)
	}
	return db, nil
}

// checkSQLiteHeader refuses a non-empty file that is not a SQLite database
// before SQLite opens it.
func checkSQLiteHeader(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open history %s: %w", path, err)
	}
	defer f.Close()
	head := make([]byte, len(sqliteHeader))
	n, err := io.ReadFull(f, head)
	if n == 0 && (err == io.EOF) {
		return nil // empty: a new database
	}
	if n < len(head) || !bytes.Equal(head, sqliteHeader) {
		return fmt.Errorf("open history %s: not a SQLite database: %w", path, ErrForeignDatabase)
	}
	return nil
}

func isNotADatabase(err error) bool {
	return err != nil && strings.Contains(err.Error(), "file is not a database")
}

// schemaState is what inspect found.
type schemaState struct {
	version int  // highest applied migration; 0 when none
	empty   bool // no tables at all
}

// inspect classifies the database: ours at some version, empty, or
// foreign. q is the pool or a migration's transaction.
func (db *DB) inspect(ctx context.Context, q querier, migs []migration) (schemaState, error) {
	rows, err := q.QueryContext(ctx, db.d.listTables)
	if err != nil {
		if isNotADatabase(err) {
			return schemaState{}, fmt.Errorf("open history %s: %w", db.loc, ErrForeignDatabase)
		}
		return schemaState{}, db.errorf(err, "list tables")
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return schemaState{}, db.errorf(err, "list tables")
		}
		tables = append(tables, strings.ToLower(name))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return schemaState{}, db.errorf(err, "list tables")
	}
	ours := ourTables(migs)
	hasVersionTable := false
	var mine, others []string
	for _, t := range tables {
		switch {
		case t == versionTable:
			hasVersionTable = true
		case ours[t]:
			mine = append(mine, t)
		default:
			others = append(others, t)
		}
	}
	if !hasVersionTable {
		if len(mine) > 0 {
			return schemaState{}, fmt.Errorf("open history %s: table %s exists but no %s: %w", db.loc, mine[0], versionTable, ErrForeignDatabase)
		}
		// A PostgreSQL database may be shared with other applications
		// (River's job tables, say); a SQLite file belongs to one.
		if len(others) > 0 && !db.d.shared {
			return schemaState{}, fmt.Errorf("open history %s: it holds other tables (%s): %w", db.loc, others[0], ErrForeignDatabase)
		}
		return schemaState{empty: len(tables) == 0}, nil
	}
	var version sql.NullInt64
	var n int
	if err := q.QueryRowContext(ctx, "SELECT MAX(version), COUNT(*) FROM "+versionTable+" WHERE description IS NOT NULL AND applied_at IS NOT NULL AND applied_by IS NOT NULL").Scan(&version, &n); err != nil {
		return schemaState{}, fmt.Errorf("open history %s: table %s is not ours (%v): %w", db.loc, versionTable, db.scrub.Error(err), ErrForeignDatabase)
	}
	if !version.Valid || n == 0 {
		return schemaState{}, fmt.Errorf("open history %s: table %s is empty: %w", db.loc, versionTable, ErrForeignDatabase)
	}
	return schemaState{version: int(version.Int64)}, nil
}

func open(ctx context.Context, location string, migs []migration) (*DB, error) {
	db, err := connect(ctx, location)
	if err != nil {
		return nil, err
	}
	st, err := db.inspect(ctx, db.sql, migs)
	if err != nil {
		db.Close()
		return nil, err
	}
	known := latest(migs)
	db.counted = known >= generationVersion
	switch {
	case st.version > known:
		db.Close()
		return nil, fmt.Errorf("open history %s: schema version %d, this lpmbisect knows up to %d: %w", db.loc, st.version, known, ErrNewerSchema)
	case st.version == known:
		return db, nil
	case st.empty && db.d.name == "sqlite":
		if _, err := db.migrate(ctx, migs); err != nil {
			db.Close()
			return nil, err
		}
		return db, nil
	case st.version == 0:
		db.Close()
		return nil, fmt.Errorf("open history %s: no history tables yet: %w", db.loc, ErrNeedsMigration)
	default:
		db.Close()
		return nil, fmt.Errorf("open history %s: schema version %d, this lpmbisect writes %d: %w", db.loc, st.version, known, ErrNeedsMigration)
	}
}

// openForMigration connects and refuses foreign and newer databases.
func openForMigration(ctx context.Context, location string, migs []migration) (*DB, int, error) {
	db, err := connect(ctx, location)
	if err != nil {
		return nil, 0, err
	}
	st, err := db.inspect(ctx, db.sql, migs)
	if err != nil {
		db.Close()
		return nil, 0, err
	}
	if known := latest(migs); st.version > known {
		db.Close()
		return nil, 0, fmt.Errorf("migrate history %s: schema version %d, this lpmbisect knows up to %d: %w", db.loc, st.version, known, ErrNewerSchema)
	}
	return db, st.version, nil
}

// migrate applies the migrations the database lacks, each in its own
// transaction that first takes the migration lock and looks at the version
// again, so two processes migrating at once apply each step once.
func (db *DB) migrate(ctx context.Context, migs []migration) (int, error) {
	if db.d.name == "sqlite" {
		// WAL lets readers (lpmbisect history) run beside the nightly
		// writer. It is a property of the file, set once, outside any
		// transaction, and only on a file that inspect found to be ours or
		// empty.
		var mode string
		if err := db.sql.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode); err != nil {
			return 0, db.errorf(err, "set WAL journal mode")
		}
	}
	version := 0
	for {
		done, v, err := db.migrateStep(ctx, migs)
		if err != nil {
			return v, err
		}
		version = v
		if done {
			return version, nil
		}
	}
}

// migrateStep applies the next migration, if any, and reports whether the
// schema is now current.
func (db *DB) migrateStep(ctx context.Context, migs []migration) (done bool, version int, err error) {
	tx, err := db.sql.BeginTx(ctx, nil) // SQLite: BEGIN IMMEDIATE, the write lock
	if err != nil {
		return false, 0, db.errorf(err, "migrate: begin")
	}
	defer tx.Rollback()
	if db.d.migrationLock != "" {
		if _, err := tx.ExecContext(ctx, db.d.migrationLock); err != nil {
			return false, 0, db.errorf(err, "migrate: take the migration lock")
		}
	}
	st, err := db.inspect(ctx, tx, migs)
	if err != nil {
		return false, 0, err
	}
	known := latest(migs)
	if st.version > known {
		return false, st.version, fmt.Errorf("migrate history %s: schema version %d, this lpmbisect knows up to %d: %w", db.loc, st.version, known, ErrNewerSchema)
	}
	if st.version == known {
		return true, st.version, nil
	}
	var m migration
	for _, m = range migs {
		if m.version == st.version+1 {
			break
		}
	}
	if m.version != st.version+1 {
		return false, st.version, fmt.Errorf("migrate history %s: no migration from version %d", db.loc, st.version)
	}
	for i, stmt := range m.statements {
		if _, err := tx.ExecContext(ctx, db.d.ddl.Replace(stmt)); err != nil {
			return false, st.version, db.errorf(err, "migrate to version %d (%s), statement %d", m.version, m.description, i+1)
		}
	}
	host, _ := os.Hostname()
	if _, err := tx.ExecContext(ctx, db.d.rebind("INSERT INTO "+versionTable+" (version, description, applied_at, applied_by) VALUES (?, ?, ?, ?)"),
		m.version, m.description, dbTime(time.Now()), fmt.Sprintf("pid %d on %s", os.Getpid(), host)); err != nil {
		return false, st.version, db.errorf(err, "migrate to version %d: record the version", m.version)
	}
	if err := tx.Commit(); err != nil {
		return false, st.version, db.errorf(err, "migrate to version %d: commit", m.version)
	}
	return m.version == known, m.version, nil
}

// querier is what *sql.DB, *sql.Tx and *sql.Conn have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// dialect is everything that differs between the backends. Queries are
// written once, with ? placeholders and standard SQL (ON CONFLICT and
// RETURNING are the same in SQLite ≥ 3.35 and PostgreSQL ≥ 9.5); rebind
// turns the placeholders into PostgreSQL's $n, and ddl substitutes the few
// column types that differ.
type dialect struct {
	name, driver string
	// shared: the database may hold other applications' tables.
	shared        bool
	postgres      bool
	ddl           *strings.Replacer
	listTables    string
	migrationLock string // taken inside each migration's transaction
	// lockRows ends a SELECT whose rows the transaction then rewrites
	// from what it read: PostgreSQL's read committed would otherwise let
	// two such transactions read the same row and the second write over
	// the first; SQLite's write transaction already excludes the other.
	lockRows string
}

var sqliteDialect = &dialect{
	name:   "sqlite",
	driver: "sqlite",
	ddl: strings.NewReplacer(
		"{{id}}", "INTEGER PRIMARY KEY", // the rowid
		"{{time}}", "TIMESTAMP", // the driver reads these back as time.Time
	),
	listTables: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
	// BEGIN IMMEDIATE already excludes other writers.
}

var postgresDialect = &dialect{
	name:     "postgres",
	driver:   "pgx",
	shared:   true,
	postgres: true,
	ddl: strings.NewReplacer(
		"{{id}}", "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
		"{{time}}", "TIMESTAMPTZ",
	),
	listTables:    "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()",
	migrationLock: fmt.Sprintf("SELECT pg_advisory_xact_lock(%d, %d)", advisoryClass, advisoryKey("migrate")),
	lockRows:      " FOR UPDATE",
}

// rebind rewrites ? placeholders for the backend. Our queries have no ?
// inside string literals; rebind skips quoted text anyway.
func (d *dialect) rebind(query string) string {
	if !d.postgres {
		return query
	}
	var b strings.Builder
	n := 0
	quoted := false
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case c == '\'':
			quoted = !quoted
			b.WriteByte(c)
		case c == '?' && !quoted:
			n++
			fmt.Fprintf(&b, "$%d", n)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// conn runs rebound queries on a pool or a transaction.
type conn struct {
	q  querier
	db *DB
}

func (c conn) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return c.q.ExecContext(ctx, c.db.d.rebind(query), args...)
}

func (c conn) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return c.q.QueryContext(ctx, c.db.d.rebind(query), args...)
}

func (c conn) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	return c.q.QueryRowContext(ctx, c.db.d.rebind(query), args...)
}

package history

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestSchemaVersionIsTheLastMigration(t *testing.T) {
	if got := latest(migrations); got != schemaVersion {
		t.Errorf("latest(migrations) = %d; want SchemaVersion %d", got, schemaVersion)
	}
	for i, m := range migrations {
		if m.version != i+1 {
			t.Errorf("migrations[%d].version = %d; want %d", i, m.version, i+1)
		}
	}
}

func TestOpenMigratesOnlyANewSQLiteFile(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, location string) {
		db, err := Open(ctx, location)
		if IsPostgres(location) {
			// A shared database is never migrated behind a user's back.
			if !errors.Is(err, ErrNeedsMigration) {
				t.Fatalf("Open(empty PostgreSQL database) = %v; want ErrNeedsMigration", err)
			}
			if strings.Contains(err.Error(), "lpmbisect history") || strings.Contains(err.Error(), "--") {
				t.Errorf("Open error %q names a command or a flag: the CLI adds those", err)
			}
			from, to, err := Migrate(ctx, location)
			if err != nil || from != 0 || to != schemaVersion {
				t.Fatalf("Migrate = %d, %d, %v; want 0, %d, nil", from, to, err, schemaVersion)
			}
			if db, err = Open(ctx, location); err != nil {
				t.Fatalf("Open after Migrate = %v", err)
			}
		} else if err != nil {
			t.Fatalf("Open(new SQLite file) = %v; want it created", err)
		}
		defer db.Close()
		var version int
		var by string
		if err := db.sql.QueryRow("SELECT version, applied_by FROM "+versionTable+" ORDER BY version LIMIT 1").Scan(&version, &by); err != nil || version != 1 {
			t.Errorf("version table = %d, %v; want its first row, version 1", version, err)
		}
		if n := count(t, db, versionTable); n != schemaVersion {
			t.Errorf("%d version rows; want one per migration, %d", n, schemaVersion)
		}
		if !strings.Contains(by, "pid ") {
			t.Errorf("applied_by = %q; want the pid and host that migrated", by)
		}
		// Migrating a current database does nothing.
		from, to, err := Migrate(ctx, location)
		if err != nil || from != schemaVersion || to != schemaVersion {
			t.Errorf("Migrate(current) = %d, %d, %v; want %d, %d, nil", from, to, err, schemaVersion, schemaVersion)
		}
		if n := count(t, db, versionTable); n != schemaVersion {
			t.Errorf("%d version rows after a second Migrate; want %d", n, schemaVersion)
		}
		if !IsPostgres(location) {
			var mode string
			db.sql.QueryRow("PRAGMA journal_mode").Scan(&mode)
			if mode != "wal" {
				t.Errorf("journal_mode = %q; want wal", mode)
			}
		}
	})
}

// newer is the schema as a newer lpmbisect would have it: a test-only
// migration after the last.
var newer = append(append([]migration(nil), migrations...), migration{
	version:     schemaVersion + 1,
	description: "test: a table and a column more",
	statements: []string{
		`CREATE TABLE lpmbisect_test_extra (night_id BIGINT NOT NULL, value TEXT NOT NULL)`,
		`ALTER TABLE lpmbisect_nights ADD COLUMN test_extra TEXT NOT NULL DEFAULT ''`,
	},
})

func TestOlderAndNewerSchema(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, location string) {
		openFresh(t, location).Close() // the current version, with a night in it
		db := openFresh(t, location)
		if _, _, _, err := nightFixture("s", 0).store(ctx, db); err != nil {
			t.Fatal(err)
		}
		db.Close()

		// A binary that knows a newer version finds an older database: it
		// says so and changes nothing, SQLite included (only a new file is
		// created on Open).
		if _, err := open(ctx, location, newer); !errors.Is(err, ErrNeedsMigration) {
			t.Fatalf("open(current database, binary knows a newer version) = %v; want ErrNeedsMigration", err)
		}
		// A migration that fails half way leaves the database as it was:
		// its first statement is rolled back with it.
		broken := append(append([]migration(nil), migrations...), migration{version: schemaVersion + 1, description: "broken",
			statements: []string{newer[schemaVersion].statements[0], "ALTER TABLE lpmbisect_no_such_table ADD COLUMN x TEXT"}})
		if _, _, err := migrateWith(ctx, location, broken); err == nil {
			t.Fatalf("migrateWith(broken newer) = nil; want an error")
		}
		db = openFresh(t, location)
		if n := count(t, db, versionTable); n != schemaVersion {
			t.Errorf("after a failed migration %d version rows; want %d", n, schemaVersion)
		}
		if _, err := db.sql.Exec("SELECT COUNT(*) FROM lpmbisect_test_extra"); err == nil {
			t.Errorf("the failed migration's first table exists; want it rolled back")
		}
		db.Close()

		from, to, err := migrateWith(ctx, location, newer)
		if err != nil || from != schemaVersion || to != schemaVersion+1 {
			t.Fatalf("migrateWith(newer) = %d, %d, %v; want %d, %d, nil", from, to, err, schemaVersion, schemaVersion+1)
		}
		db, err = open(ctx, location, newer)
		if err != nil {
			t.Fatalf("open(newer database, newer binary) = %v", err)
		}
		if nights := count(t, db, "lpmbisect_nights"); nights != 1 {
			t.Errorf("%d nights after migrating; want the 1 stored before", nights)
		}
		db.Close()

		// This binary refuses the newer database, in Open and in Migrate,
		// and leaves it as it was.
		_, err = Open(ctx, location)
		if !errors.Is(err, ErrNewerSchema) {
			t.Fatalf("Open(newer database) = %v; want ErrNewerSchema", err)
		}
		if !strings.Contains(err.Error(), fmt.Sprintf("version %d", schemaVersion+1)) {
			t.Errorf("Open error %q does not give the database's version", err)
		}
		if _, _, err := Migrate(ctx, location); !errors.Is(err, ErrNewerSchema) {
			t.Errorf("Migrate(newer database) = %v; want ErrNewerSchema", err)
		}
		db, _ = open(ctx, location, newer)
		defer db.Close()
		if n := count(t, db, versionTable); n != schemaVersion+1 {
			t.Errorf("%d version rows after the refusals; want %d", n, schemaVersion+1)
		}
	})
}

func TestConcurrentMigrate(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, location string) {
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, errs[i] = Migrate(ctx, location)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("Migrate #%d = %v", i, err)
			}
		}
		db := openFresh(t, location)
		if n := count(t, db, versionTable); n != schemaVersion {
			t.Errorf("%d version rows after 4 concurrent Migrates; want %d", n, schemaVersion)
		}
	})
}

// rawExec runs statements on location without this package's checks.
func rawExec(t *testing.T, location string, stmts ...string) {
	t.Helper()
	driver := "sqlite"
	if IsPostgres(location) {
		driver = "pgx"
	}
	raw, err := sql.Open(driver, location)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, s := range stmts {
		if _, err := raw.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func TestForeignDatabase(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		stmts []string
	}{
		{"our table name without our version table", []string{"CREATE TABLE lpmbisect_nights (id BIGINT)"}},
		{"a version table of that name that is not ours", []string{"CREATE TABLE " + versionTable + " (version BIGINT, owner TEXT)", "INSERT INTO " + versionTable + " VALUES (1, 'someone')"}},
		{"our version table, empty", []string{"CREATE TABLE " + versionTable + " (version BIGINT PRIMARY KEY, description TEXT NOT NULL, applied_at TIMESTAMP NOT NULL, applied_by TEXT NOT NULL)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, location string) {
				rawExec(t, location, c.stmts...)
				if _, err := Open(ctx, location); !errors.Is(err, ErrForeignDatabase) {
					t.Errorf("Open = %v; want ErrForeignDatabase", err)
				}
				if _, _, err := Migrate(ctx, location); !errors.Is(err, ErrForeignDatabase) {
					t.Errorf("Migrate = %v; want ErrForeignDatabase", err)
				}
				assertNoSeriesTable(t, location)
			})
		})
	}

	t.Run("other application's tables", func(t *testing.T) {
		forEachBackend(t, func(t *testing.T, location string) {
			rawExec(t, location, "CREATE TABLE river_job (id BIGINT PRIMARY KEY, kind TEXT)", "INSERT INTO river_job VALUES (7, 'boot')")
			if !IsPostgres(location) {
				// A SQLite file is one application's: refuse it, and do not
				// even switch its journal mode.
				before, _ := os.ReadFile(location)
				if _, err := Open(ctx, location); !errors.Is(err, ErrForeignDatabase) {
					t.Errorf("Open(SQLite file with other tables) = %v; want ErrForeignDatabase", err)
				}
				if _, _, err := Migrate(ctx, location); !errors.Is(err, ErrForeignDatabase) {
					t.Errorf("Migrate(SQLite file with other tables) = %v; want ErrForeignDatabase", err)
				}
				if after, _ := os.ReadFile(location); !bytes.Equal(before, after) {
					t.Errorf("the foreign SQLite file changed")
				}
				assertNoSeriesTable(t, location)
				return
			}
			// A PostgreSQL database is shared: River's tables beside ours.
			db := openFresh(t, location)
			var kind string
			if err := db.sql.QueryRow("SELECT kind FROM river_job WHERE id = 7").Scan(&kind); err != nil || kind != "boot" {
				t.Errorf("the other application's row = %q, %v; want it untouched", kind, err)
			}
		})
	})

	t.Run("not a SQLite file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "notes.txt")
		text := []byte("these are my notes, not a database\n")
		os.WriteFile(path, text, 0o644)
		if _, err := Open(ctx, path); !errors.Is(err, ErrForeignDatabase) {
			t.Errorf("Open(text file) = %v; want ErrForeignDatabase", err)
		}
		if _, _, err := Migrate(ctx, path); !errors.Is(err, ErrForeignDatabase) {
			t.Errorf("Migrate(text file) = %v; want ErrForeignDatabase", err)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(after, text) {
			t.Errorf("text file changed to %q", after)
		}
	})
}

func assertNoSeriesTable(t *testing.T, location string) {
	t.Helper()
	driver := "sqlite"
	if IsPostgres(location) {
		driver = "pgx"
	}
	raw, err := sql.Open(driver, location)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec("SELECT COUNT(*) FROM lpmbisect_series"); err == nil {
		t.Errorf("lpmbisect_series was created in a foreign database")
	}
}

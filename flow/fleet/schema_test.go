package fleet

import (
	"context"
	"errors"
	"testing"

	"github.com/lpmbisect/lpmbisect/testbed/testpg"
)

func TestMigrate(t *testing.T) {
	ctx := context.Background()
	url := testpg.Shared(t)
	if _, err := connect(ctx, url, nil); !errors.Is(err, ErrNeedsMigration) {
		t.Fatalf("Connect(unmigrated) = %v; want ErrNeedsMigration", err)
	}
	first, err := Migrate(ctx, url)
	if err != nil {
		t.Fatalf("Migrate = %v", err)
	}
	if first.RiverFrom != 0 || first.RiverTo == 0 || first.FleetFrom != 0 || first.FleetTo != len(migrations) {
		t.Errorf("Migrate(empty) = %+v; want River from 0 to its latest and ours from 0 to %d", first, len(migrations))
	}
	again, err := Migrate(ctx, url)
	if err != nil {
		t.Fatalf("Migrate again = %v", err)
	}
	if want := (MigrateResult{first.RiverTo, first.RiverTo, first.FleetTo, first.FleetTo}); *again != want {
		t.Errorf("Migrate(current) = %+v; want %+v (nothing to do)", again, want)
	}
	c, err := connect(ctx, url, nil)
	if err != nil {
		t.Fatalf("Connect(migrated) = %v", err)
	}
	c.Close()
	// A database migrated by a newer lpmbisect is refused, not changed.
	db, err := open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.close()
	if _, err := db.pool.Exec(ctx, "INSERT INTO "+schemaTable+" (version, description, applied_by) VALUES (99, 'future', 'test')"); err != nil {
		t.Fatal(err)
	}
	if _, err := Migrate(ctx, url); !errors.Is(err, ErrNewerSchema) {
		t.Errorf("Migrate(newer) = %v; want ErrNewerSchema", err)
	}
	if _, err := connect(ctx, url, nil); !errors.Is(err, ErrNewerSchema) {
		t.Errorf("Connect(newer) = %v; want ErrNewerSchema", err)
	}
}

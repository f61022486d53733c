package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5"

	"github.com/lpmbisect/lpmbisect/flow/calibrate"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/internal/version"
	"github.com/lpmbisect/lpmbisect/wire"
)

// calibrationClassPrefix names a queue's host class in calibration keys.
const calibrationClassPrefix = "fleet queue "

// CalibrationClass implements calibrate.Remote: the queue's host class,
// as a calibration key's host named "fleet queue NAME", with, under
// icount, the run's class (QEMU version, and the CPU model its boots of
// cpu run: see HostClass and cpuModel), and under a wall clock the QEMU
// version the queue's live workers share (the queue's name is the class
// of their hosts; see parseQueue) and cpu's model.
func (e *Executor) CalibrationClass(ctx context.Context, cpu vmrunner.CPUProfile) (calibrate.Host, string, string, error) {
	if err := e.init(ctx); err != nil {
		return calibrate.Host{}, "", "", err
	}
	host := calibrate.Host{Name: calibrationClassPrefix + e.Queue}
	if e.queue.Accel == wire.AccelIcount {
		return host, e.class.QEMUVersion, e.cpuModel(cpu), nil
	}
	if len(e.qemus) != 1 {
		return calibrate.Host{}, "", "", fmt.Errorf("queue %s: %w: QEMU %v: wall-clock calibrations hold for one QEMU", e.Queue, ErrMixedClasses, e.qemus)
	}
	return host, e.qemus[0], cpu.QEMUModel(e.queue.Accel), nil
}

// CalibrationShelf implements calibrate.Remote: the calibrations of the
// fleet's host classes are kept in its database, where every client finds
// them.
func (e *Executor) CalibrationShelf() calibrate.Shelf { return calibrationShelf{e.Client} }

// calibrationShelf keeps calibrations in the fleet database's
// lpmbisect_fleet_calibrations, one row per key.
type calibrationShelf struct{ c *Client }

func (s calibrationShelf) Where(key calibrate.Key) string {
	return fmt.Sprintf("fleet %s (calibration %s of %s)", s.c.Location(), key.ID(), key.Host.Name)
}

func (s calibrationShelf) Read(ctx context.Context, key calibrate.Key) ([]byte, error) {
	var data []byte
	err := s.c.db.retry(ctx, s.c.log, "read calibration", func(ctx context.Context) error {
		err := s.c.db.pool.QueryRow(ctx, "SELECT data FROM lpmbisect_fleet_calibrations WHERE key_id = $1", key.ID()).Scan(&data)
		if errors.Is(err, pgx.ErrNoRows) {
			data = nil
			return nil
		}
		return err
	})
	if err != nil {
		return nil, s.c.db.errorf(err, "read calibration %s", key.ID())
	}
	return data, nil
}

func (s calibrationShelf) Update(ctx context.Context, key calibrate.Key, merge func(old []byte) ([]byte, error)) error {
	keyJSON, err := json.Marshal(key)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	by := "lpmbisect " + version.String() + " on " + host
	var mergeErr error
	err = s.c.db.retry(ctx, s.c.log, "store calibration", func(ctx context.Context) error {
		tx, err := s.c.db.pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		// One writer per key, also while there is no row to lock yet.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "lpmbisect calibration "+key.ID()); err != nil {
			return err
		}
		var old []byte
		err = tx.QueryRow(ctx, "SELECT data FROM lpmbisect_fleet_calibrations WHERE key_id = $1", key.ID()).Scan(&old)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		data, err := merge(old)
		if err != nil {
			mergeErr = err
			return nil
		}
		if _, err := tx.Exec(ctx, `
INSERT INTO lpmbisect_fleet_calibrations (key_id, key, data, stored_by) VALUES ($1, $2, $3, $4)
ON CONFLICT (key_id) DO UPDATE SET key = EXCLUDED.key, data = EXCLUDED.data, stored_at = now(), stored_by = EXCLUDED.stored_by`,
			key.ID(), keyJSON, data, by); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
	if mergeErr != nil {
		return mergeErr
	}
	if err != nil {
		return s.c.db.errorf(err, "store calibration %s", key.ID())
	}
	return nil
}

// interface check: a fleet's queue is a remote host class to calibrate.
var _ calibrate.Remote = (*Executor)(nil)

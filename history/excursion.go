package history

import (
	"context"
	"fmt"
)

// Excursion is a night whose value of a metric, on one line, lay far from
// the nights on both sides of it, and which the change-point pass
// therefore leaves out of its statistics (see package changepoint): under
// wall time a bad night, under instruction counts a kernel that was
// different that night. The night, its boots and its row stay as they
// were, for any later analysis. It belongs to the night's row of the
// metric: storing new rows for the night removes it.
type Excursion struct {
	NightID int64
	// Night is the night's date (YYYY-MM-DD), as read back; SetExcursions
	// goes by NightID.
	Night string
	Metric
	Line Line
	// Level is the level the value departed from, in the line's terms
	// (the tip/reference ratio on the kernel line, the reference's value on
	// the host line), and DeltaPct the departure in percent.
	Level, DeltaPct float64
}

// SetExcursions replaces the excursions of one metric on one line of a
// series with excs, which must be nights of the series with a row for the
// metric: the pass finds them afresh every night, and a night it no longer
// finds to be one is not one any more.
func (tx *Tx) SetExcursions(ctx context.Context, seriesID int64, m Metric, line Line, excs []Excursion) error {
	what := fmt.Sprintf("store the excursions of %s (%s) in series %d", m, line, seriesID)
	if line != LineKernel && line != LineHost {
		return fmt.Errorf("%s: line %q is neither %q nor %q", what, line, LineKernel, LineHost)
	}
	if _, err := tx.c.exec(ctx, `DELETE FROM lpmbisect_excursions WHERE benchmark = ? AND unit = ? AND line = ?
		AND night_id IN (SELECT id FROM lpmbisect_nights WHERE series_id = ?)`, m.Benchmark, m.Unit, string(line), seriesID); err != nil {
		return tx.db.errorf(err, "%s", what)
	}
	for _, e := range excs {
		if e.Metric != m || e.Line != line {
			return fmt.Errorf("%s: the excursion of night %d is of %s (%s)", what, e.NightID, e.Metric, e.Line)
		}
		// Only a night of the series takes it: another series' night is
		// an error, not a silent write.
		res, err := tx.c.exec(ctx, `INSERT INTO lpmbisect_excursions (night_id, benchmark, unit, line, level, delta_pct)
			SELECT id, ?, ?, ?, ?, ? FROM lpmbisect_nights WHERE id = ? AND series_id = ?`,
			m.Benchmark, m.Unit, string(line), float(e.Level), float(e.DeltaPct), e.NightID, seriesID)
		if err != nil {
			return tx.db.errorf(err, "%s (has night %d a row for %s?)", what, e.NightID, m)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("%s: night %d of series %d: %w", what, e.NightID, seriesID, ErrNotFound)
		}
	}
	return nil
}

// Excursions returns the excursions of a series, by night, benchmark, unit
// and line.
func (db *DB) Excursions(ctx context.Context, seriesID int64) ([]Excursion, error) {
	c := conn{q: db.sql, db: db}
	rows, err := c.query(ctx, `SELECT e.night_id, n.night, e.benchmark, e.unit, e.line, e.level, e.delta_pct
		FROM lpmbisect_excursions e JOIN lpmbisect_nights n ON n.id = e.night_id
		WHERE n.series_id = ? ORDER BY n.night, e.benchmark, e.unit, e.line`, seriesID)
	if err != nil {
		return nil, db.errorf(err, "list the excursions of series %d", seriesID)
	}
	return collect(db, rows, func(r scanner) (Excursion, error) {
		var e Excursion
		var line string
		err := r.Scan(&e.NightID, &e.Night, &e.Benchmark, &e.Unit, &line, floatOf(&e.Level), floatOf(&e.DeltaPct))
		e.Line = Line(line)
		return e, err
	}, "list excursions")
}

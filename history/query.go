package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/lpmbisect/lpmbisect/stats/compare"
)

const seriesColumns = `id, name, kind, source, branch, reference, bench, accel, tip_commit, tip_image_sha256, created_at, updated_at`

type scanner interface{ Scan(dest ...any) error }

func scanSeries(r scanner) (Series, error) {
	var s Series
	var kind string
	err := r.Scan(&s.ID, &s.Name, &kind, &s.Source, &s.Branch, &s.Reference, &s.Bench, &s.Accel,
		&s.TipCommit, &s.TipImageSHA256, timeOf(&s.Created), timeOf(&s.Updated))
	s.Kind = SeriesKind(kind)
	return s, err
}

// AllSeries returns every series, by name.
func (db *DB) AllSeries(ctx context.Context) ([]Series, error) {
	c := conn{q: db.sql, db: db}
	rows, err := c.query(ctx, `SELECT `+seriesColumns+` FROM lpmbisect_series ORDER BY name`)
	if err != nil {
		return nil, db.errorf(err, "list series")
	}
	return collect(db, rows, scanSeries, "list series")
}

const nightColumns = `n.id, n.series_id, n.night, n.status, n.reason, n.note,
	n.tip_commit, n.tip_subject, n.tip_image_sha256, n.tip_release, n.tip_compiler, n.tip_config_hash, n.tip_input,
	n.ref_commit, n.ref_subject, n.ref_image_sha256, n.ref_release, n.ref_compiler, n.ref_config_hash, n.ref_input,
	n.accel, n.qemu_version, n.cpu_model, n.host, n.lpmbisect_version, n.started_at, n.finished_at`

func nightFields(n *Night, status *string) []any {
	return []any{&n.ID, &n.SeriesID, &n.Date, status, &n.Reason, &n.Note,
		&n.Tip.Commit, &n.Tip.Subject, &n.Tip.ImageSHA256, &n.Tip.Release, &n.Tip.Compiler, &n.Tip.ConfigHash, &n.Tip.Input,
		&n.Reference.Commit, &n.Reference.Subject, &n.Reference.ImageSHA256, &n.Reference.Release, &n.Reference.Compiler, &n.Reference.ConfigHash, &n.Reference.Input,
		&n.Accel, &n.QEMUVersion, &n.CPUModel, &n.Host, &n.ToolVersion, timeOf(&n.Started), timeOf(&n.Finished)}
}

func scanNight(r scanner) (Night, error) {
	var n Night
	var status string
	err := r.Scan(nightFields(&n, &status)...)
	n.Status = NightStatus(status)
	return n, err
}

// Nights returns a series' nights in date order.
func (db *DB) Nights(ctx context.Context, seriesID int64) ([]Night, error) {
	c := conn{q: db.sql, db: db}
	rows, err := c.query(ctx, `SELECT `+nightColumns+` FROM lpmbisect_nights n WHERE n.series_id = ? ORDER BY n.night`, seriesID)
	if err != nil {
		return nil, db.errorf(err, "list the nights of series %d", seriesID)
	}
	return collect(db, rows, scanNight, "list nights")
}

// Night returns a series' night on date, or ErrNotFound.
func (db *DB) Night(ctx context.Context, seriesID int64, date string) (Night, error) {
	return db.oneNight(ctx, fmt.Sprintf("night %s of series %d", date, seriesID),
		`SELECT `+nightColumns+` FROM lpmbisect_nights n WHERE n.series_id = ? AND n.night = ?`, seriesID, date)
}

// LastMeasured returns the series' last night with status measured before
// the date before (all of them if before is ""), or ErrNotFound: the night
// a new tip is compared with.
func (db *DB) LastMeasured(ctx context.Context, seriesID int64, before string) (Night, error) {
	if before == "" {
		before = "9999-12-31~" // after every date
	}
	return db.oneNight(ctx, fmt.Sprintf("last measured night of series %d before %s", seriesID, before),
		`SELECT `+nightColumns+` FROM lpmbisect_nights n
		WHERE n.series_id = ? AND n.status = ? AND n.night < ? ORDER BY n.night DESC LIMIT 1`,
		seriesID, string(StatusMeasured), before)
}

// MeasuredTip returns the last measured night of the series whose tip had
// the commit or the image SHA-256 (an empty one matches nothing), or
// ErrNotFound: a tip measured already costs no boot.
func (db *DB) MeasuredTip(ctx context.Context, seriesID int64, commit, imageSHA256 string) (Night, error) {
	if commit == "" && imageSHA256 == "" {
		return Night{}, fmt.Errorf("measured tip of series %d: no commit and no image: %w", seriesID, ErrNotFound)
	}
	return db.oneNight(ctx, fmt.Sprintf("measured tip (commit %q or image %q) of series %d", commit, imageSHA256, seriesID),
		`SELECT `+nightColumns+` FROM lpmbisect_nights n
		WHERE n.series_id = ? AND n.status = ?
		  AND ((n.tip_commit = ? AND n.tip_commit <> '') OR (n.tip_image_sha256 = ? AND n.tip_image_sha256 <> ''))
		ORDER BY n.night DESC LIMIT 1`,
		seriesID, string(StatusMeasured), commit, imageSHA256)
}

func (db *DB) oneNight(ctx context.Context, what, query string, args ...any) (Night, error) {
	c := conn{q: db.sql, db: db}
	n, err := scanNight(c.queryRow(ctx, query, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return Night{}, fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	if err != nil {
		return Night{}, db.errorf(err, "read %s", what)
	}
	return n, nil
}

// Boots returns a night's boots with their results and summaries, by role
// and index.
func (db *DB) Boots(ctx context.Context, nightID int64) ([]Boot, error) {
	c := conn{q: db.sql, db: db}
	rows, err := c.query(ctx, `SELECT id, night_id, role, boot, outcome, results, recorded_at
		FROM lpmbisect_boots WHERE night_id = ? ORDER BY role, boot`, nightID)
	if err != nil {
		return nil, db.errorf(err, "list the boots of night %d", nightID)
	}
	boots, err := collect(db, rows, func(r scanner) (Boot, error) {
		var b Boot
		var role string
		err := r.Scan(&b.ID, &b.NightID, &role, &b.Index, &b.Outcome, &b.Results, timeOf(&b.Recorded))
		b.Role = Role(role)
		return b, err
	}, "list boots")
	if err != nil {
		return nil, err
	}
	index := map[int64]*Boot{}
	for i := range boots {
		index[boots[i].ID] = &boots[i]
	}
	rows, err = c.query(ctx, `SELECT s.boot_id, s.benchmark, s.unit, s.median, s.samples, s.min_value, s.max_value
		FROM lpmbisect_boot_summaries s JOIN lpmbisect_boots b ON b.id = s.boot_id
		WHERE b.night_id = ? ORDER BY s.boot_id, s.benchmark, s.unit`, nightID)
	if err != nil {
		return nil, db.errorf(err, "read the boot summaries of night %d", nightID)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var s BootSummary
		if err := rows.Scan(&id, &s.Benchmark, &s.Unit, &s.Median, &s.Samples, &s.Min, &s.Max); err != nil {
			return nil, db.errorf(err, "read the boot summaries of night %d", nightID)
		}
		if b := index[id]; b != nil {
			b.Summaries = append(b.Summaries, s)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, db.errorf(err, "read the boot summaries of night %d", nightID)
	}
	return boots, nil
}

const rowColumns = `r.night_id, r.benchmark, r.unit, r.tip_center, r.tip_lo, r.tip_hi, r.tip_boots,
	r.ref_center, r.ref_lo, r.ref_hi, r.ref_boots, r.ratio,
	r.prev_verdict, r.prev_delta_pct, r.prev_p, r.ref_verdict, r.ref_delta_pct, r.ref_p`

// rowFields scans a night row; finish fills the comparisons after Scan.
func rowFields(r *NightRow) (fields []any, finish func() error) {
	var prev, ref comparisonScan
	fields = []any{&r.NightID, &r.Benchmark, &r.Unit,
		floatOf(&r.Tip.Center), floatOf(&r.Tip.Lo), floatOf(&r.Tip.Hi), &r.Tip.Boots,
		floatOf(&r.Reference.Center), floatOf(&r.Reference.Lo), floatOf(&r.Reference.Hi), &r.Reference.Boots,
		floatOf(&r.Ratio),
		&prev.verdict, floatOf(&prev.c.DeltaPct), floatOf(&prev.c.P),
		&ref.verdict, floatOf(&ref.c.DeltaPct), floatOf(&ref.c.P)}
	return fields, func() error {
		var err error
		if r.VsPrevious, err = prev.result(); err != nil {
			return err
		}
		r.VsReference, err = ref.result()
		return err
	}
}

type comparisonScan struct {
	verdict sql.NullString
	c       Comparison
}

func (s *comparisonScan) result() (*Comparison, error) {
	if !s.verdict.Valid {
		return nil, nil
	}
	var v compare.Verdict
	if err := v.UnmarshalText([]byte(s.verdict.String)); err != nil {
		return nil, err
	}
	c := s.c
	c.Verdict = v
	return &c, nil
}

func scanRow(r scanner) (NightRow, error) {
	var row NightRow
	fields, finish := rowFields(&row)
	if err := r.Scan(fields...); err != nil {
		return row, err
	}
	return row, finish()
}

// NightRows returns a night's rows, by benchmark and unit.
func (db *DB) NightRows(ctx context.Context, nightID int64) ([]NightRow, error) {
	c := conn{q: db.sql, db: db}
	rows, err := c.query(ctx, `SELECT `+rowColumns+` FROM lpmbisect_night_rows r WHERE r.night_id = ? ORDER BY r.benchmark, r.unit`, nightID)
	if err != nil {
		return nil, db.errorf(err, "read the rows of night %d", nightID)
	}
	return collect(db, rows, scanRow, "read night rows")
}

// Metrics returns the benchmarks and units that a series' nights have rows
// for, sorted.
func (db *DB) Metrics(ctx context.Context, seriesID int64) ([]Metric, error) {
	c := conn{q: db.sql, db: db}
	rows, err := c.query(ctx, `SELECT DISTINCT r.benchmark, r.unit FROM lpmbisect_night_rows r
		JOIN lpmbisect_nights n ON n.id = r.night_id WHERE n.series_id = ? ORDER BY r.benchmark, r.unit`, seriesID)
	if err != nil {
		return nil, db.errorf(err, "list the metrics of series %d", seriesID)
	}
	return collect(db, rows, func(r scanner) (Metric, error) {
		var m Metric
		return m, r.Scan(&m.Benchmark, &m.Unit)
	}, "list metrics")
}

// Trend returns the nights of a series that have a row for the metric, in
// date order, each with that row: the values the change-point pass runs on.
// The nights' statuses are there for the caller to filter on.
func (db *DB) Trend(ctx context.Context, seriesID int64, m Metric) ([]TrendPoint, error) {
	c := conn{q: db.sql, db: db}
	rows, err := c.query(ctx, `SELECT `+nightColumns+`, `+rowColumns+`
		FROM lpmbisect_nights n JOIN lpmbisect_night_rows r ON r.night_id = n.id
		WHERE n.series_id = ? AND r.benchmark = ? AND r.unit = ? ORDER BY n.night`, seriesID, m.Benchmark, m.Unit)
	if err != nil {
		return nil, db.errorf(err, "read the trend of %s in series %d", m, seriesID)
	}
	return collect(db, rows, func(r scanner) (TrendPoint, error) {
		var p TrendPoint
		var status string
		rf, finish := rowFields(&p.Row)
		if err := r.Scan(append(nightFields(&p.Night, &status), rf...)...); err != nil {
			return p, err
		}
		p.Night.Status = NightStatus(status)
		return p, finish()
	}, "read trend")
}

const changeColumns = `id, series_id, benchmark, unit, line, night, night_index, before_night, before_commit,
	after_commit, delta_pct, p, provisional, status, first_reported, updated_at, mailed_at,
	bisect_state, culprit_commit, culprit_subject, bisect_reason`

func scanChangePoint(r scanner) (ChangePoint, error) {
	var cp ChangePoint
	var line, status, state string
	err := r.Scan(&cp.ID, &cp.SeriesID, &cp.Benchmark, &cp.Unit, &line, &cp.Night, &cp.NightIndex,
		&cp.BeforeNight, &cp.BeforeCommit, &cp.AfterCommit, floatOf(&cp.DeltaPct), floatOf(&cp.P), &cp.Provisional, &status,
		timeOf(&cp.FirstReported), timeOf(&cp.Updated), timeOf(&cp.Mailed),
		&state, &cp.Bisect.Culprit, &cp.Bisect.Subject, &cp.Bisect.Reason)
	cp.Line, cp.Status, cp.Bisect.State = Line(line), ChangeStatus(status), BisectState(state)
	return cp, err
}

// ChangePoints returns the change points of a series (of every series if
// seriesID is 0) whose status is one of statuses (any status if none are
// given), by series, night, benchmark, unit and line.
func (db *DB) ChangePoints(ctx context.Context, seriesID int64, statuses ...ChangeStatus) ([]ChangePoint, error) {
	var where []string
	var args []any
	if seriesID != 0 {
		where = append(where, "series_id = ?")
		args = append(args, seriesID)
	}
	if len(statuses) > 0 {
		marks := make([]string, len(statuses))
		for i, s := range statuses {
			marks[i] = "?"
			args = append(args, string(s))
		}
		where = append(where, "status IN ("+strings.Join(marks, ", ")+")")
	}
	query := `SELECT ` + changeColumns + ` FROM lpmbisect_change_points`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY series_id, night, benchmark, unit, line, id"
	c := conn{q: db.sql, db: db}
	rows, err := c.query(ctx, query, args...)
	if err != nil {
		return nil, db.errorf(err, "list change points")
	}
	return collect(db, rows, scanChangePoint, "list change points")
}

// ChangePoint returns the change point with the ID, or ErrNotFound.
func (db *DB) ChangePoint(ctx context.Context, id int64) (ChangePoint, error) {
	c := conn{q: db.sql, db: db}
	cp, err := scanChangePoint(c.queryRow(ctx, `SELECT `+changeColumns+` FROM lpmbisect_change_points WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return ChangePoint{}, fmt.Errorf("change point %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return ChangePoint{}, db.errorf(err, "read change point %d", id)
	}
	return cp, nil
}

// collect scans every row with scan and closes rows.
func collect[T any](db *DB, rows *sql.Rows, scan func(scanner) (T, error), what string) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, db.errorf(err, "%s", what)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, db.errorf(err, "%s", what)
	}
	return out, nil
}

// floatOf scans a nullable float: NULL is NaN (see float).
func floatOf(p *float64) sql.Scanner { return (*nanFloat)(p) }

type nanFloat float64

func (f *nanFloat) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*f = nanFloat(math.NaN())
	case float64:
		*f = nanFloat(v)
	case int64:
		*f = nanFloat(v)
	default:
		return fmt.Errorf("a %T is not a number", src)
	}
	return nil
}

// timeOf scans a nullable time: NULL is the zero time; others are UTC.
func timeOf(p *time.Time) sql.Scanner { return (*utcTime)(p) }

type utcTime time.Time

func (t *utcTime) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*t = utcTime{}
	case time.Time:
		*t = utcTime(v.UTC())
	case string:
		// SQLite hands back text when it does not recognise the column's
		// type as a time; parse what the driver writes.
		for _, layout := range []string{"2006-01-02 15:04:05.999999999-07:00", time.RFC3339Nano} {
			if parsed, err := time.Parse(layout, v); err == nil {
				*t = utcTime(parsed.UTC())
				return nil
			}
		}
		return fmt.Errorf("time %q is in no format we write", v)
	default:
		return fmt.Errorf("a %T is not a time", src)
	}
	return nil
}

// Generation counts the writes committed to the history: it changes
// whenever anything a report shows may have changed (every Write adds one
// in its transaction), so a reader can keep what it rendered until then.
func (db *DB) Generation(ctx context.Context) (int64, error) {
	var n int64
	if err := (conn{q: db.sql, db: db}).queryRow(ctx, `SELECT n FROM lpmbisect_generation WHERE id = 1`).Scan(&n); err != nil {
		return 0, db.errorf(err, "read the count of writes")
	}
	return n, nil
}

package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// Tx is one transaction of writes, given to the function passed to Write.
// It is not safe for concurrent use and must not outlive that function.
type Tx struct {
	c  conn
	db *DB
}

// Write runs fn in one transaction: everything fn stored is committed
// together when it returns nil, and nothing is when it returns an error,
// panics or the process dies. A night's write is one Write, so the history
// never holds half a night.
//
// In SQLite the transaction takes the database's write lock when it begins
// (waiting up to 30 s for another writer); in PostgreSQL rows are locked as
// they are written.
func (db *DB) Write(ctx context.Context, fn func(*Tx) error) error {
	sqlTx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return db.errorf(err, "begin a write")
	}
	committed := false
	defer func() {
		if !committed {
			sqlTx.Rollback()
		}
	}()
	tx := &Tx{c: conn{q: sqlTx, db: db}, db: db}
	if err := fn(tx); err != nil {
		return err
	}
	if db.counted {
		if _, err := tx.c.exec(ctx, `UPDATE lpmbisect_generation SET n = n + 1 WHERE id = 1`); err != nil {
			return db.errorf(err, "count the write")
		}
	}
	if err := sqlTx.Commit(); err != nil {
		return db.errorf(err, "commit")
	}
	committed = true
	return nil
}

// PutSeries stores a series' configuration under its name, creating it or
// updating the configured fields, and returns the stored series. The tip
// fields are not written: see SetTip.
func (tx *Tx) PutSeries(ctx context.Context, s Series) (Series, error) {
	if err := checkText("series name", s.Name, 200); err != nil {
		return Series{}, err
	}
	if s.Kind != GitSeries && s.Kind != ImageSeries {
		return Series{}, fmt.Errorf("series %s: kind %q is neither %q nor %q", s.Name, s.Kind, GitSeries, ImageSeries)
	}
	now := dbTime(time.Now())
	row := tx.c.queryRow(ctx, `INSERT INTO lpmbisect_series
		(name, kind, source, branch, reference, bench, accel, tip_commit, tip_image_sha256, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, '', '', ?, ?)
		ON CONFLICT (name) DO UPDATE SET kind = excluded.kind, source = excluded.source,
			branch = excluded.branch, reference = excluded.reference, bench = excluded.bench,
			accel = excluded.accel, updated_at = excluded.updated_at
		RETURNING `+seriesColumns,
		s.Name, string(s.Kind), s.Source, s.Branch, s.Reference, s.Bench, s.Accel, now, now)
	stored, err := scanSeries(row)
	if err != nil {
		return Series{}, tx.db.errorf(err, "store series %s", s.Name)
	}
	return stored, nil
}

// SetTip records the last tip seen on a series.
func (tx *Tx) SetTip(ctx context.Context, seriesID int64, commit, imageSHA256 string) error {
	res, err := tx.c.exec(ctx, `UPDATE lpmbisect_series SET tip_commit = ?, tip_image_sha256 = ?, updated_at = ? WHERE id = ?`,
		commit, imageSHA256, dbTime(time.Now()), seriesID)
	if err != nil {
		return tx.db.errorf(err, "set the tip of series %d", seriesID)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("set the tip of series %d: %w", seriesID, ErrNotFound)
	}
	return nil
}

// PutNight stores a night under its series and date, creating it or
// replacing every field (a night run again overwrites what its first run
// said), and returns its ID. Its boots and rows stay.
func (tx *Tx) PutNight(ctx context.Context, n Night) (int64, error) {
	if err := checkDate("night", n.Date); err != nil {
		return 0, err
	}
	if !nightStatuses[n.Status] {
		return 0, fmt.Errorf("night %s: unknown status %q", n.Date, n.Status)
	}
	var id int64
	err := tx.c.queryRow(ctx, `INSERT INTO lpmbisect_nights
		(series_id, night, status, reason, note,
		 tip_commit, tip_subject, tip_image_sha256, tip_release, tip_compiler, tip_config_hash, tip_input,
		 ref_commit, ref_subject, ref_image_sha256, ref_release, ref_compiler, ref_config_hash, ref_input,
		 accel, qemu_version, cpu_model, host, lpmbisect_version, started_at, finished_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (series_id, night) DO UPDATE SET status = excluded.status, reason = excluded.reason,
			note = excluded.note, tip_commit = excluded.tip_commit, tip_subject = excluded.tip_subject,
			tip_image_sha256 = excluded.tip_image_sha256, tip_release = excluded.tip_release,
			tip_compiler = excluded.tip_compiler, tip_config_hash = excluded.tip_config_hash, tip_input = excluded.tip_input,
			ref_commit = excluded.ref_commit, ref_subject = excluded.ref_subject,
			ref_image_sha256 = excluded.ref_image_sha256, ref_release = excluded.ref_release,
			ref_compiler = excluded.ref_compiler, ref_config_hash = excluded.ref_config_hash, ref_input = excluded.ref_input,
			accel = excluded.accel, qemu_version = excluded.qemu_version, cpu_model = excluded.cpu_model,
			host = excluded.host, lpmbisect_version = excluded.lpmbisect_version,
			started_at = excluded.started_at, finished_at = excluded.finished_at
		RETURNING id`,
		n.SeriesID, n.Date, string(n.Status), n.Reason, n.Note,
		n.Tip.Commit, n.Tip.Subject, n.Tip.ImageSHA256, n.Tip.Release, n.Tip.Compiler, n.Tip.ConfigHash, n.Tip.Input,
		n.Reference.Commit, n.Reference.Subject, n.Reference.ImageSHA256, n.Reference.Release, n.Reference.Compiler, n.Reference.ConfigHash, n.Reference.Input,
		n.Accel, n.QEMUVersion, n.CPUModel, n.Host, n.ToolVersion, dbTime(n.Started), dbTime(n.Finished)).Scan(&id)
	if err != nil {
		return 0, tx.db.errorf(err, "store night %s of series %d", n.Date, n.SeriesID)
	}
	return id, nil
}

// PutBoot stores a boot and its summaries unless a boot with the same
// night, role and index is stored already, in which case it changes nothing
// and reports false: a night run again after a kill never stores a boot
// twice, and what was stored first stays.
func (tx *Tx) PutBoot(ctx context.Context, b Boot) (inserted bool, err error) {
	what := fmt.Sprintf("store boot %s/%d of night %d", b.Role, b.Index, b.NightID)
	if !roleName.MatchString(string(b.Role)) {
		return false, fmt.Errorf("%s: role %q is not a lower-case name", what, b.Role)
	}
	if b.Index < 0 {
		return false, fmt.Errorf("%s: negative boot index", what)
	}
	if len(b.Results) > maxResultsBytes {
		return false, fmt.Errorf("%s: results are %d bytes, more than %d (a runaway guest?)", what, len(b.Results), maxResultsBytes)
	}
	if !utf8.ValidString(b.Results) || strings.ContainsRune(b.Results, 0) {
		return false, fmt.Errorf("%s: results are not text (invalid UTF-8 or NUL bytes)", what)
	}
	for _, s := range b.Summaries {
		if err := checkFinite(s.Median, s.Min, s.Max); err != nil || s.Samples < 0 {
			return false, fmt.Errorf("%s: summary of %s %s: not a finite summary (median %v, min %v, max %v, %d samples)",
				what, s.Benchmark, s.Unit, s.Median, s.Min, s.Max, s.Samples)
		}
	}
	var id int64
	err = tx.c.queryRow(ctx, `INSERT INTO lpmbisect_boots (night_id, role, boot, outcome, results, recorded_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (night_id, role, boot) DO NOTHING
		RETURNING id`,
		b.NightID, string(b.Role), b.Index, b.Outcome, b.Results, dbTime(time.Now())).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, tx.db.errorf(err, "%s", what)
	}
	values := make([][]any, len(b.Summaries))
	for i, s := range b.Summaries {
		values[i] = []any{id, s.Benchmark, s.Unit, s.Median, s.Samples, s.Min, s.Max}
	}
	err = tx.insert(ctx, `INSERT INTO lpmbisect_boot_summaries
		(boot_id, benchmark, unit, median, samples, min_value, max_value) VALUES `, values)
	if err != nil {
		return false, tx.db.errorf(err, "%s: summaries", what)
	}
	return true, nil
}

// SetNightRows replaces a night's rows with rows: analysing a night again
// leaves exactly the new rows.
func (tx *Tx) SetNightRows(ctx context.Context, nightID int64, rows []NightRow) error {
	if _, err := tx.c.exec(ctx, `DELETE FROM lpmbisect_night_rows WHERE night_id = ?`, nightID); err != nil {
		return tx.db.errorf(err, "replace the rows of night %d", nightID)
	}
	values := make([][]any, len(rows))
	for i, r := range rows {
		prev, ref := comparisonArgs(r.VsPrevious), comparisonArgs(r.VsReference)
		values[i] = []any{nightID, r.Benchmark, r.Unit,
			float(r.Tip.Center), float(r.Tip.Lo), float(r.Tip.Hi), r.Tip.Boots,
			float(r.Reference.Center), float(r.Reference.Lo), float(r.Reference.Hi), r.Reference.Boots,
			float(r.Ratio), prev[0], prev[1], prev[2], ref[0], ref[1], ref[2]}
	}
	err := tx.insert(ctx, `INSERT INTO lpmbisect_night_rows
		(night_id, benchmark, unit, tip_center, tip_lo, tip_hi, tip_boots, ref_center, ref_lo, ref_hi, ref_boots,
		 ratio, prev_verdict, prev_delta_pct, prev_p, ref_verdict, ref_delta_pct, ref_p) VALUES `, values)
	if err != nil {
		return tx.db.errorf(err, "store the rows of night %d", nightID)
	}
	return nil
}

// insert runs an INSERT … VALUES with many rows per statement: a night's
// hundred rows are a few round trips to a server, not a hundred.
func (tx *Tx) insert(ctx context.Context, prefix string, rows [][]any) error {
	const perStatement = 50 // × ≤ 20 columns stays far below both backends' parameter limits
	for len(rows) > 0 {
		batch := rows[:min(perStatement, len(rows))]
		rows = rows[len(batch):]
		var b strings.Builder
		b.WriteString(prefix)
		var args []any
		for i, r := range batch {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(" + strings.TrimSuffix(strings.Repeat("?, ", len(r)), ", ") + ")")
			args = append(args, r...)
		}
		if _, err := tx.c.exec(ctx, b.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

// comparisonArgs are the three columns of a comparison; all NULL for nil.
func comparisonArgs(c *Comparison) [3]any {
	if c == nil {
		return [3]any{nil, nil, nil}
	}
	return [3]any{c.Verdict.String(), float(c.DeltaPct), float(c.P)}
}

// PutChangePoint stores a change point and returns its ID.
//
// With ID 0 it is new to the caller: it is added, unless a live change
// point of the same series, metric, line and night is stored already, in
// which case that one's magnitude and range are updated (its status, mail
// and bisection stay) and its ID returned. So detecting a change point
// again never duplicates it.
//
// With an ID it updates that change point in full: a moved night, a new
// magnitude, a new status (withdrawn, acknowledged, muted), the mail, the
// bisection. FirstReported is kept; Updated is set in both cases.
func (tx *Tx) PutChangePoint(ctx context.Context, cp ChangePoint) (int64, error) {
	what := fmt.Sprintf("store change point of %s (%s) at %s", cp.Metric, cp.Line, cp.Night)
	if cp.Status == "" {
		cp.Status = ChangeOpen
	}
	switch {
	case cp.Line != LineKernel && cp.Line != LineHost:
		return 0, fmt.Errorf("%s: line %q is neither %q nor %q", what, cp.Line, LineKernel, LineHost)
	case !changeStatuses[cp.Status]:
		return 0, fmt.Errorf("%s: unknown status %q", what, cp.Status)
	case !bisectStates[cp.Bisect.State]:
		return 0, fmt.Errorf("%s: unknown bisection state %q", what, cp.Bisect.State)
	case cp.Benchmark == "" || cp.Unit == "":
		return 0, fmt.Errorf("%s: no benchmark or unit", what)
	}
	if err := checkDate("change point night", cp.Night); err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	if cp.BeforeNight != "" {
		if err := checkDate("change point's night before", cp.BeforeNight); err != nil {
			return 0, fmt.Errorf("%s: %w", what, err)
		}
	}
	now := dbTime(time.Now())
	if cp.ID == 0 {
		var id int64
		err := tx.c.queryRow(ctx, `INSERT INTO lpmbisect_change_points
			(series_id, benchmark, unit, line, night, night_index, before_night, before_commit, after_commit,
			 delta_pct, p, provisional, status, first_reported, updated_at, mailed_at,
			 bisect_state, culprit_commit, culprit_subject, bisect_reason)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (series_id, benchmark, unit, line, night) WHERE status <> 'withdrawn'
			DO UPDATE SET night_index = excluded.night_index, before_night = excluded.before_night,
				before_commit = excluded.before_commit, after_commit = excluded.after_commit,
				delta_pct = excluded.delta_pct, p = excluded.p, provisional = excluded.provisional,
				updated_at = excluded.updated_at
			RETURNING id`,
			cp.SeriesID, cp.Benchmark, cp.Unit, string(cp.Line), cp.Night, cp.NightIndex, cp.BeforeNight,
			cp.BeforeCommit, cp.AfterCommit, float(cp.DeltaPct), float(cp.P), cp.Provisional, string(cp.Status), now, now,
			dbTime(cp.Mailed), string(cp.Bisect.State), cp.Bisect.Culprit, cp.Bisect.Subject, cp.Bisect.Reason).Scan(&id)
		if err != nil {
			return 0, tx.db.errorf(err, "%s", what)
		}
		return id, nil
	}
	res, err := tx.c.exec(ctx, `UPDATE lpmbisect_change_points SET
		benchmark = ?, unit = ?, line = ?, night = ?, night_index = ?, before_night = ?, before_commit = ?,
		after_commit = ?, delta_pct = ?, p = ?, provisional = ?, status = ?, updated_at = ?, mailed_at = ?,
		bisect_state = ?, culprit_commit = ?, culprit_subject = ?, bisect_reason = ?
		WHERE id = ? AND series_id = ?`,
		cp.Benchmark, cp.Unit, string(cp.Line), cp.Night, cp.NightIndex, cp.BeforeNight, cp.BeforeCommit,
		cp.AfterCommit, float(cp.DeltaPct), float(cp.P), cp.Provisional, string(cp.Status), now, dbTime(cp.Mailed),
		string(cp.Bisect.State), cp.Bisect.Culprit, cp.Bisect.Subject, cp.Bisect.Reason, cp.ID, cp.SeriesID)
	if err != nil {
		return 0, tx.db.errorf(err, "%s (id %d; is another live change point at that night? withdraw one of them)", what, cp.ID)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return 0, fmt.Errorf("%s: change point %d of series %d: %w", what, cp.ID, cp.SeriesID, ErrNotFound)
	}
	return cp.ID, nil
}

// The writes of one part of a stored change point each: a nightly run
// reads its change points, works on them (a change-point pass, a
// bisection of minutes, a mail) and writes back what it found, while a
// person may triage the same change point from a page. Writing the whole
// record it read would undo that triage; each of these writes only what
// its writer owns.

// UpdateChangeRange writes what the change-point pass found again of a
// stored change point (cp.ID): its night and range, its magnitude and p,
// whether it is provisional. Its status, mail and bisection are left as
// the history holds them.
func (tx *Tx) UpdateChangeRange(ctx context.Context, cp ChangePoint) error {
	what := fmt.Sprintf("update change point %d of %s (%s) at %s", cp.ID, cp.Metric, cp.Line, cp.Night)
	if err := checkDate("change point night", cp.Night); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if cp.BeforeNight != "" {
		if err := checkDate("change point's night before", cp.BeforeNight); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return tx.updateChange(ctx, what, cp.ID, `night = ?, night_index = ?, before_night = ?, before_commit = ?, after_commit = ?,
		delta_pct = ?, p = ?, provisional = ?`, cp.Night, cp.NightIndex, cp.BeforeNight, cp.BeforeCommit, cp.AfterCommit,
		float(cp.DeltaPct), float(cp.P), cp.Provisional)
}

// WithdrawChange marks change point id withdrawn: later nights no longer
// show it.
func (tx *Tx) WithdrawChange(ctx context.Context, id int64) error {
	return tx.updateChange(ctx, fmt.Sprintf("withdraw change point %d", id), id, `status = ?`, string(ChangeWithdrawn))
}

// SetChangeBisection records the bisection of change point id.
func (tx *Tx) SetChangeBisection(ctx context.Context, id int64, b Bisection) error {
	what := fmt.Sprintf("record the bisection of change point %d", id)
	if !bisectStates[b.State] {
		return fmt.Errorf("%s: unknown bisection state %q", what, b.State)
	}
	return tx.updateChange(ctx, what, id, `bisect_state = ?, culprit_commit = ?, culprit_subject = ?, bisect_reason = ?`,
		string(b.State), b.Culprit, b.Subject, b.Reason)
}

// SetChangeMailed records when change point id was mailed.
func (tx *Tx) SetChangeMailed(ctx context.Context, id int64, at time.Time) error {
	return tx.updateChange(ctx, fmt.Sprintf("record the mail of change point %d", id), id, `mailed_at = ?`, dbTime(at))
}

// updateChange sets the columns of change point id (set: "col = ?, …",
// with args) and its updated_at.
func (tx *Tx) updateChange(ctx context.Context, what string, id int64, set string, args ...any) error {
	res, err := tx.c.exec(ctx, `UPDATE lpmbisect_change_points SET `+set+`, updated_at = ? WHERE id = ?`,
		append(args, dbTime(time.Now()), id)...)
	if err != nil {
		return tx.db.errorf(err, "%s (is another live change point at that night? withdraw one of them)", what)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return nil
}

// float is how a float is stored: SQLite has no NaN (it would store NULL
// silently), so NaN is NULL in both backends and reads back as NaN.
func float(f float64) any {
	if math.IsNaN(f) {
		return nil
	}
	return f
}

func checkFinite(fs ...float64) error {
	for _, f := range fs {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return errors.New("not finite")
		}
	}
	return nil
}

func checkText(what, s string, max int) error {
	switch {
	case strings.TrimSpace(s) == "":
		return fmt.Errorf("%s is empty", what)
	case len(s) > max:
		return fmt.Errorf("%s is longer than %d bytes", what, max)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s is not UTF-8", what)
	}
	return nil
}

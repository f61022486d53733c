package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxDocumentBytes bounds a stored document (a night's insight block, a
// patch series' report): what a guest sent is untrusted, and a runaway one
// must not fill the database. It is package insight's bound of a saved
// block.
const MaxDocumentBytes = 16 << 20

// NightInsight is the insight block of a night's tip (why it changed: sizes,
// calls, the guests' counts and profiles) against the kernel it was
// compared with, as package insight writes it (JSON). The history keeps it
// opaque: package insight reads it back.
type NightInsight struct {
	NightID int64
	// Against says what side A is: "the tip of 2026-11-03", "the reference".
	Against  string
	Document string
	Recorded time.Time // set when stored
}

// checkDocument validates a document before it is stored.
func checkDocument(what, doc string) error {
	switch {
	case doc == "":
		return fmt.Errorf("%s: empty document", what)
	case len(doc) > MaxDocumentBytes:
		return fmt.Errorf("%s: %d bytes, more than %d (a runaway guest?)", what, len(doc), MaxDocumentBytes)
	case !utf8.ValidString(doc) || strings.ContainsRune(doc, 0):
		return fmt.Errorf("%s: not text (invalid UTF-8 or NUL bytes)", what)
	}
	return nil
}

// PutNightInsight stores a night's insight block, replacing the one a
// previous run of the night stored.
func (tx *Tx) PutNightInsight(ctx context.Context, in NightInsight) error {
	what := fmt.Sprintf("store the insight block of night %d", in.NightID)
	if err := checkDocument(what, in.Document); err != nil {
		return err
	}
	_, err := tx.c.exec(ctx, `INSERT INTO lpmbisect_night_insight (night_id, against, document, recorded_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (night_id) DO UPDATE SET against = excluded.against, document = excluded.document, recorded_at = excluded.recorded_at`,
		in.NightID, in.Against, in.Document, dbTime(time.Now()))
	return tx.db.errorf(err, "%s", what)
}

// NightInsight returns a night's insight block, or ErrNotFound when the
// night has none (a night that measured nothing, one run with insight off,
// one stored before schema version 4).
func (db *DB) NightInsight(ctx context.Context, nightID int64) (NightInsight, error) {
	c := conn{q: db.sql, db: db}
	in := NightInsight{NightID: nightID}
	err := c.queryRow(ctx, `SELECT against, document, recorded_at FROM lpmbisect_night_insight WHERE night_id = ?`, nightID).
		Scan(&in.Against, &in.Document, timeOf(&in.Recorded))
	if errors.Is(err, sql.ErrNoRows) {
		return in, fmt.Errorf("insight block of night %d: %w", nightID, ErrNotFound)
	}
	return in, db.errorf(err, "read the insight block of night %d", nightID)
}

// PatchSeriesRun is one run of lpmbisect series: the series it measured,
// what it concluded and its reports as they were rendered, the JSON
// document (package report's) and the text a terminal got.
type PatchSeriesRun struct {
	ID        int64
	Repo      string
	Base, Tip string // Tip is "" for a series from a mailbox
	Title     string // the cover letter's subject, or the last patch's
	Patches   int
	Outcome   string // the report's outcome (quiet, regression, inconclusive, …)
	Command   string // the command line that ran it
	Host      string
	Document  string // JSON
	Report    string // text
	Recorded  time.Time
}

const patchSeriesColumns = `id, repo, base, tip, title, patches, outcome, command, host, recorded_at`

// PutPatchSeriesRun stores a series run and returns its ID.
func (tx *Tx) PutPatchSeriesRun(ctx context.Context, r PatchSeriesRun) (int64, error) {
	what := fmt.Sprintf("store the patch-series run of %s", r.Base)
	if err := checkText("patch series base", r.Base, 200); err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	if r.Patches < 0 {
		return 0, fmt.Errorf("%s: %d patches", what, r.Patches)
	}
	if err := checkDocument(what+": JSON document", r.Document); err != nil {
		return 0, err
	}
	if err := checkDocument(what+": text report", r.Report); err != nil {
		return 0, err
	}
	var id int64
	err := tx.c.queryRow(ctx, `INSERT INTO lpmbisect_patch_series
		(repo, base, tip, title, patches, outcome, command, host, document, report, recorded_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		r.Repo, r.Base, r.Tip, r.Title, r.Patches, r.Outcome, r.Command, r.Host, r.Document, r.Report, dbTime(time.Now())).Scan(&id)
	return id, tx.db.errorf(err, "%s", what)
}

func scanPatchSeries(r scanner) (PatchSeriesRun, error) {
	var p PatchSeriesRun
	err := r.Scan(&p.ID, &p.Repo, &p.Base, &p.Tip, &p.Title, &p.Patches, &p.Outcome, &p.Command, &p.Host, timeOf(&p.Recorded))
	return p, err
}

// PatchSeriesRuns lists the stored series runs, newest first, without
// their documents (PatchSeriesRun reads one whole).
func (db *DB) PatchSeriesRuns(ctx context.Context) ([]PatchSeriesRun, error) {
	c := conn{q: db.sql, db: db}
	rows, err := c.query(ctx, `SELECT `+patchSeriesColumns+` FROM lpmbisect_patch_series ORDER BY recorded_at DESC, id DESC`)
	if err != nil {
		return nil, db.errorf(err, "list the patch-series runs")
	}
	return collect(db, rows, scanPatchSeries, "list the patch-series runs")
}

// PatchSeriesRun returns a stored series run with its documents, or
// ErrNotFound.
func (db *DB) PatchSeriesRun(ctx context.Context, id int64) (PatchSeriesRun, error) {
	c := conn{q: db.sql, db: db}
	var p PatchSeriesRun
	err := c.queryRow(ctx, `SELECT `+patchSeriesColumns+`, document, report FROM lpmbisect_patch_series WHERE id = ?`, id).
		Scan(&p.ID, &p.Repo, &p.Base, &p.Tip, &p.Title, &p.Patches, &p.Outcome, &p.Command, &p.Host, timeOf(&p.Recorded), &p.Document, &p.Report)
	if errors.Is(err, sql.ErrNoRows) {
		return p, fmt.Errorf("patch-series run %d: %w", id, ErrNotFound)
	}
	return p, db.errorf(err, "read patch-series run %d", id)
}

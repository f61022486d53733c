package history

import (
	"hash/crc32"
	"regexp"
	"strings"
	"time"
)

// schemaVersion is the schema version this package reads and writes: the
// last of its migrations.
const schemaVersion = 4

// generationVersion is the schema version that added lpmbisect_generation.
const generationVersion = 3

// versionTable records every migration applied, one row each. Its name is
// the database's mark of ownership.
const versionTable = "lpmbisect_history_schema"

// migration is one step of the schema. Steps are never edited once
// released: a change is a new step. {{id}} and {{time}} in a statement are
// the dialect's types for a surrogate key and a timestamp; every other type
// is spelled the same in both backends (BIGINT and DOUBLE PRECISION have the
// right affinity in SQLite).
type migration struct {
	version     int
	description string
	statements  []string
}

// migrations is the schema's history. Enumerated columns (kind, status,
// role, line) are checked in Go, not with CHECK constraints: adding a value
// must not need a migration, which in SQLite would mean rebuilding a table.
// The database enforces keys and uniqueness, the rules that keep a re-run
// from storing anything twice.
var migrations = []migration{{
	version:     1,
	description: "nightly history: series, nights, boots, per-night rows, change points",
	statements: []string{
		`CREATE TABLE lpmbisect_history_schema (
			version BIGINT PRIMARY KEY,
			description TEXT NOT NULL,
			applied_at {{time}} NOT NULL,
			applied_by TEXT NOT NULL
		)`,
		`CREATE TABLE lpmbisect_series (
			id {{id}},
			name TEXT NOT NULL UNIQUE,
			kind TEXT NOT NULL,
			source TEXT NOT NULL,
			branch TEXT NOT NULL,
			reference TEXT NOT NULL,
			bench TEXT NOT NULL,
			accel TEXT NOT NULL,
			tip_commit TEXT NOT NULL,
			tip_image_sha256 TEXT NOT NULL,
			created_at {{time}} NOT NULL,
			updated_at {{time}} NOT NULL
		)`,
		`CREATE TABLE lpmbisect_nights (
			id {{id}},
			series_id BIGINT NOT NULL REFERENCES lpmbisect_series (id) ON DELETE CASCADE,
			night TEXT NOT NULL,
			status TEXT NOT NULL,
			reason TEXT NOT NULL,
			note TEXT NOT NULL,
			tip_commit TEXT NOT NULL,
			tip_subject TEXT NOT NULL,
			tip_image_sha256 TEXT NOT NULL,
			tip_release TEXT NOT NULL,
			tip_compiler TEXT NOT NULL,
			tip_config_hash TEXT NOT NULL,
			tip_input TEXT NOT NULL,
			ref_commit TEXT NOT NULL,
			ref_subject TEXT NOT NULL,
			ref_image_sha256 TEXT NOT NULL,
			ref_release TEXT NOT NULL,
			ref_compiler TEXT NOT NULL,
			ref_config_hash TEXT NOT NULL,
			ref_input TEXT NOT NULL,
			accel TEXT NOT NULL,
			qemu_version TEXT NOT NULL,
			cpu_model TEXT NOT NULL,
			host TEXT NOT NULL,
			lpmbisect_version TEXT NOT NULL,
			started_at {{time}},
			finished_at {{time}},
			UNIQUE (series_id, night)
		)`,
		`CREATE INDEX lpmbisect_nights_by_commit ON lpmbisect_nights (series_id, tip_commit)`,
		`CREATE INDEX lpmbisect_nights_by_image ON lpmbisect_nights (series_id, tip_image_sha256)`,
		`CREATE TABLE lpmbisect_boots (
			id {{id}},
			night_id BIGINT NOT NULL REFERENCES lpmbisect_nights (id) ON DELETE CASCADE,
			role TEXT NOT NULL,
			boot BIGINT NOT NULL,
			outcome TEXT NOT NULL,
			results TEXT NOT NULL,
			recorded_at {{time}} NOT NULL,
			UNIQUE (night_id, role, boot)
		)`,
		`CREATE TABLE lpmbisect_boot_summaries (
			boot_id BIGINT NOT NULL REFERENCES lpmbisect_boots (id) ON DELETE CASCADE,
			benchmark TEXT NOT NULL,
			unit TEXT NOT NULL,
			median DOUBLE PRECISION NOT NULL,
			samples BIGINT NOT NULL,
			min_value DOUBLE PRECISION NOT NULL,
			max_value DOUBLE PRECISION NOT NULL,
			PRIMARY KEY (boot_id, benchmark, unit)
		)`,
		`CREATE TABLE lpmbisect_night_rows (
			night_id BIGINT NOT NULL REFERENCES lpmbisect_nights (id) ON DELETE CASCADE,
			benchmark TEXT NOT NULL,
			unit TEXT NOT NULL,
			tip_center DOUBLE PRECISION,
			tip_lo DOUBLE PRECISION,
			tip_hi DOUBLE PRECISION,
			tip_boots BIGINT NOT NULL,
			ref_center DOUBLE PRECISION,
			ref_lo DOUBLE PRECISION,
			ref_hi DOUBLE PRECISION,
			ref_boots BIGINT NOT NULL,
			ratio DOUBLE PRECISION,
			prev_verdict TEXT,
			prev_delta_pct DOUBLE PRECISION,
			prev_p DOUBLE PRECISION,
			ref_verdict TEXT,
			ref_delta_pct DOUBLE PRECISION,
			ref_p DOUBLE PRECISION,
			PRIMARY KEY (night_id, benchmark, unit)
		)`,
		`CREATE TABLE lpmbisect_change_points (
			id {{id}},
			series_id BIGINT NOT NULL REFERENCES lpmbisect_series (id) ON DELETE CASCADE,
			benchmark TEXT NOT NULL,
			unit TEXT NOT NULL,
			line TEXT NOT NULL,
			night TEXT NOT NULL,
			night_index BIGINT NOT NULL,
			before_night TEXT NOT NULL,
			before_commit TEXT NOT NULL,
			after_commit TEXT NOT NULL,
			delta_pct DOUBLE PRECISION,
			p DOUBLE PRECISION,
			provisional BOOLEAN NOT NULL,
			status TEXT NOT NULL,
			first_reported {{time}} NOT NULL,
			updated_at {{time}} NOT NULL,
			mailed_at {{time}},
			bisect_state TEXT NOT NULL,
			culprit_commit TEXT NOT NULL,
			culprit_subject TEXT NOT NULL,
			bisect_reason TEXT NOT NULL
		)`,
		// One live change point per place: a re-run that detects it again
		// updates it instead of adding a second. Withdrawn ones are history.
		`CREATE UNIQUE INDEX lpmbisect_change_points_live ON lpmbisect_change_points
			(series_id, benchmark, unit, line, night) WHERE status <> 'withdrawn'`,
	},
}, {
	version:     2,
	description: "excursions: nights the change-point pass leaves out of its statistics",
	statements: []string{
		// An excursion belongs to the row whose value it is: a night
		// analysed again (new rows) loses it until the pass finds it again.
		`CREATE TABLE lpmbisect_excursions (
			night_id BIGINT NOT NULL,
			benchmark TEXT NOT NULL,
			unit TEXT NOT NULL,
			line TEXT NOT NULL,
			level DOUBLE PRECISION,
			delta_pct DOUBLE PRECISION,
			PRIMARY KEY (night_id, benchmark, unit, line),
			FOREIGN KEY (night_id, benchmark, unit) REFERENCES lpmbisect_night_rows (night_id, benchmark, unit) ON DELETE CASCADE
		)`,
	},
}, {
	version:     3,
	description: "triage: who set a change point's state, when and why (the audit log); a count of writes",
	statements: []string{
		// One row per triage decision, never updated: the audit log. A
		// change point's latest row is who triaged it last, and why.
		`CREATE TABLE lpmbisect_triage (
			id {{id}},
			change_point_id BIGINT NOT NULL REFERENCES lpmbisect_change_points (id) ON DELETE CASCADE,
			action TEXT NOT NULL,
			status_before TEXT NOT NULL,
			status_after TEXT NOT NULL,
			comment TEXT NOT NULL,
			who TEXT NOT NULL,
			at {{time}} NOT NULL
		)`,
		`CREATE INDEX lpmbisect_triage_by_change_point ON lpmbisect_triage (change_point_id, id)`,
		// One row counting the writes: every Write adds one in its
		// transaction, so a reader (lpmbisect serve's cache) knows in one
		// cheap query whether anything changed.
		`CREATE TABLE lpmbisect_generation (
			id BIGINT PRIMARY KEY,
			n BIGINT NOT NULL
		)`,
		`INSERT INTO lpmbisect_generation (id, n) VALUES (1, 0)`,
	},
}, {
	version:     4,
	description: "a night's insight block (why it changed, the profiles); patch-series runs",
	statements: []string{
		// The insight block of a night's tip against the kernel it was
		// compared with (package insight's Diff as JSON, opaque here),
		// written with the night: a night's page shows why it changed
		// after the run directory that held the guests' documents is gone.
		`CREATE TABLE lpmbisect_night_insight (
			night_id BIGINT PRIMARY KEY REFERENCES lpmbisect_nights (id) ON DELETE CASCADE,
			against TEXT NOT NULL,
			document TEXT NOT NULL,
			recorded_at {{time}} NOT NULL
		)`,
		// One row per lpmbisect series run: what it measured and its
		// reports as they were rendered (JSON and text), never updated.
		`CREATE TABLE lpmbisect_patch_series (
			id {{id}},
			repo TEXT NOT NULL,
			base TEXT NOT NULL,
			tip TEXT NOT NULL,
			title TEXT NOT NULL,
			patches BIGINT NOT NULL,
			outcome TEXT NOT NULL,
			command TEXT NOT NULL,
			host TEXT NOT NULL,
			document TEXT NOT NULL,
			report TEXT NOT NULL,
			recorded_at {{time}} NOT NULL
		)`,
	},
}}

func latest(migs []migration) int {
	v := 0
	for _, m := range migs {
		v = max(v, m.version)
	}
	return v
}

var createTable = regexp.MustCompile(`(?i)CREATE TABLE\s+(\w+)`)

// ourTables are the tables the migrations create: finding one of them
// without the version table means the database is not ours to touch.
func ourTables(migs []migration) map[string]bool {
	names := map[string]bool{}
	for _, m := range migs {
		for _, s := range m.statements {
			for _, match := range createTable.FindAllStringSubmatch(s, -1) {
				names[strings.ToLower(match[1])] = true
			}
		}
	}
	return names
}

// advisoryClass is the first key of every PostgreSQL advisory lock we take
// ("lpmb"); the second is advisoryKey of the lock's name. Other
// applications sharing the database use other keys.
const advisoryClass = 0x6c706d62

func advisoryKey(name string) int32 {
	return int32(crc32.ChecksumIEEE([]byte("lpmbisect history "+name)) & 0x7fffffff)
}

// dbTime is how times are stored: UTC, to the microsecond (PostgreSQL's
// resolution), so both backends give back what was written. The zero time
// is NULL.
func dbTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Truncate(time.Microsecond)
}

package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lpmbisect/lpmbisect/internal/words"
)

// TriageAction is what a person decides about a change point: one of the
// states a sheriff sets, named as the state it sets (open, acknowledged,
// invalid, muted: the one vocabulary of the pages, the JSON, history ack
// and the docs), or bisect, which asks the next nightly run to bisect it.
type TriageAction string

const (
	ActionOpen        TriageAction = TriageAction(ChangeOpen)         // back to open: nobody has dealt with it
	ActionAcknowledge TriageAction = TriageAction(ChangeAcknowledged) // seen; stays in reports
	ActionInvalid     TriageAction = TriageAction(ChangeInvalid)      // not the kernel's change; no more mail
	ActionMute        TriageAction = TriageAction(ChangeMuted)        // no more mail
	ActionBisect      TriageAction = "bisect"                         // bisect it in the next nightly run
)

// legacyActionOpen is what ActionOpen was called in audit logs written
// before the action took its state's name; TriageLog reads it as
// ActionOpen.
const legacyActionOpen = "untriaged"

// TriageActions are the actions Triage takes, in the order a page offers
// them.
func TriageActions() []TriageAction {
	return []TriageAction{ActionOpen, ActionAcknowledge, ActionInvalid, ActionMute, ActionBisect}
}

// ParseTriageAction reads an action by its name.
func ParseTriageAction(s string) (TriageAction, error) {
	for _, a := range TriageActions() {
		if string(a) == s {
			return a, nil
		}
	}
	return "", fmt.Errorf("%w: %q (want open, acknowledged, invalid, muted or bisect)", ErrBadTriage, s)
}

// statusOf is the status an action sets; "" for bisect, which keeps it.
func (a TriageAction) statusOf() ChangeStatus {
	switch a {
	case ActionOpen:
		return ChangeOpen
	case ActionAcknowledge:
		return ChangeAcknowledged
	case ActionInvalid:
		return ChangeInvalid
	case ActionMute:
		return ChangeMuted
	}
	return ""
}

// MaxTriageComment bounds a triage comment: it comes from a web form.
const MaxTriageComment = 4096

// ErrBadTriage: a triage request that the rule refuses (an unknown action,
// a withdrawn change point, a bisection already asked for, a comment too
// long, a name with control characters). Nothing was changed.
var ErrBadTriage = errors.New("triage refused")

// maxWho bounds the name a triage records.
const maxWho = 200

// CheckWho checks the name a triage records (a user name, user@host, what
// a person typed into a page's form): not empty, at most 200 bytes of
// UTF-8, and without control or bidirectional formatting characters, so
// that it can neither forge a line of a log nor reorder a page's text.
func CheckWho(who string) error {
	if err := checkText("the name of who triages", who, maxWho); err != nil {
		return fmt.Errorf("%w: %w", ErrBadTriage, err)
	}
	if i := strings.IndexFunc(who, words.HostileOnOneLine); i >= 0 {
		r, _ := utf8.DecodeRuneInString(who[i:])
		return fmt.Errorf("%w: the name of who triages has the control character %U (a name is one line of printable text)", ErrBadTriage, r)
	}
	return nil
}

// Triage is one decision about a change point, as the audit log keeps it.
type Triage struct {
	ID            int64
	ChangePointID int64
	Action        TriageAction
	// StatusBefore and StatusAfter are the change point's status around
	// the decision (the same for bisect).
	StatusBefore, StatusAfter ChangeStatus
	Comment                   string
	Who                       string // who decided: a user name, "user@host"
	At                        time.Time
}

// errUnchanged ends Triage's transaction when the decision changes
// nothing.
var errUnchanged = errors.New("unchanged")

// Triage applies a decision to change point id: the one rule that `lpmbisect
// history ack` and the served page share. A withdrawn change point cannot be
// triaged (later analysis no longer finds it); bisect is refused on the host
// line (the host, not a commit, moved it) and while a bisection is asked for,
// running or has found its culprit; it is allowed again after a failed or
// skipped one. The change point's new state and the audit log's row are
// written in one transaction, so neither is ever stored without the other.
//
// A decision that sets the state the change point already has, without a
// comment, changes nothing: it writes nothing, not even a row of the audit
// log, and changed is false (a page's form shows the current state
// selected, so pressing its button without choosing is such a decision).
// With a comment it is recorded: the comment is the news.
func (db *DB) Triage(ctx context.Context, id int64, action TriageAction, comment, who string) (cp ChangePoint, changed bool, err error) {
	if action.statusOf() == "" && action != ActionBisect {
		return ChangePoint{}, false, fmt.Errorf("triage change point %d: %w: unknown action %q", id, ErrBadTriage, action)
	}
	if len(comment) > MaxTriageComment || !utf8.ValidString(comment) {
		return ChangePoint{}, false, fmt.Errorf("triage change point %d: %w: the comment is not UTF-8 or longer than %d bytes", id, ErrBadTriage, MaxTriageComment)
	}
	if err := CheckWho(who); err != nil {
		return ChangePoint{}, false, fmt.Errorf("triage change point %d: %w", id, err)
	}
	err = db.Write(ctx, func(tx *Tx) error {
		var err error
		cp, err = scanChangePoint(tx.c.queryRow(ctx, `SELECT `+changeColumns+` FROM lpmbisect_change_points WHERE id = ?`+db.d.lockRows, id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("triage change point %d: %w", id, ErrNotFound)
		}
		if err != nil {
			return db.errorf(err, "triage change point %d", id)
		}
		before := cp.Status
		switch {
		case action != ActionBisect && cp.Status == action.statusOf() && strings.TrimSpace(comment) == "":
			return errUnchanged
		case cp.Status == ChangeWithdrawn:
			return fmt.Errorf("triage change point %d: %w: it was withdrawn (later nights no longer show it)", id, ErrBadTriage)
		case action == ActionBisect && cp.Line != LineKernel:
			return fmt.Errorf("triage change point %d: %w: it is on the %s line (the reference moved: the host, not a commit)", id, ErrBadTriage, cp.Line)
		case action == ActionBisect && (cp.Bisect.State == BisectRequested || cp.Bisect.State == BisectRunning || cp.Bisect.State == BisectFound):
			return fmt.Errorf("triage change point %d: %w: its bisection is %s already", id, ErrBadTriage, cp.Bisect.State)
		case action == ActionBisect:
			cp.Bisect = Bisection{State: BisectRequested}
		default:
			cp.Status = action.statusOf()
		}
		if _, err := tx.PutChangePoint(ctx, cp); err != nil {
			return err
		}
		_, err = tx.c.exec(ctx, `INSERT INTO lpmbisect_triage (change_point_id, action, status_before, status_after, comment, who, at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, id, string(action), string(before), string(cp.Status), comment, who, dbTime(time.Now()))
		return db.errorf(err, "triage change point %d: record it in the audit log", id)
	})
	if errors.Is(err, errUnchanged) {
		return cp, false, nil
	}
	return cp, err == nil, err
}

// TriageLog returns the audit log of the change points of a series (of
// every series if seriesID is 0), oldest first.
func (db *DB) TriageLog(ctx context.Context, seriesID int64) ([]Triage, error) {
	query := `SELECT t.id, t.change_point_id, t.action, t.status_before, t.status_after, t.comment, t.who, t.at
		FROM lpmbisect_triage t JOIN lpmbisect_change_points c ON c.id = t.change_point_id`
	var args []any
	if seriesID != 0 {
		query += " WHERE c.series_id = ?"
		args = append(args, seriesID)
	}
	query += " ORDER BY t.id"
	rows, err := conn{q: db.sql, db: db}.query(ctx, query, args...)
	if err != nil {
		return nil, db.errorf(err, "read the triage log")
	}
	return collect(db, rows, func(r scanner) (Triage, error) {
		var t Triage
		var action, before, after string
		err := r.Scan(&t.ID, &t.ChangePointID, &action, &before, &after, &t.Comment, &t.Who, timeOf(&t.At))
		if action == legacyActionOpen {
			action = string(ActionOpen)
		}
		t.Action, t.StatusBefore, t.StatusAfter = TriageAction(action), ChangeStatus(before), ChangeStatus(after)
		return t, err
	}, "read the triage log")
}

// LastTriage is each change point's latest triage in log, by change point.
func LastTriage(log []Triage) map[int64]Triage {
	last := map[int64]Triage{}
	for _, t := range log {
		last[t.ChangePointID] = t
	}
	return last
}

// Open reports whether a change point waits for a person: live and open,
// nobody has triaged it (a provisional one too: the page says it is).
func (cp ChangePoint) Open() bool { return cp.Status == ChangeOpen }

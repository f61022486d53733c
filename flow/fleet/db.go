package fleet

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lpmbisect/lpmbisect/history"
)

// ErrNoDatabase is returned when no database URL is given.
var ErrNoDatabase = errors.New("no fleet database named (a postgres:// URL)")

// database is an open pool with what is needed to talk about it without
// showing its password.
type database struct {
	pool  *pgxpool.Pool
	loc   string           // the URL, redacted
	scrub history.Scrubber // hides the password in messages
}

// open connects to the PostgreSQL database at location and checks that it
// answers.
func open(ctx context.Context, location string) (*database, error) {
	if strings.TrimSpace(location) == "" {
		return nil, ErrNoDatabase
	}
	db := &database{loc: history.Redact(location), scrub: history.NewScrubber(location)}
	if !history.IsPostgres(location) {
		return nil, fmt.Errorf("fleet database %s: not a postgres:// URL (the fleet needs PostgreSQL)", db.loc)
	}
	cfg, err := pgxpool.ParseConfig(location)
	if err != nil {
		return nil, fmt.Errorf("fleet database %s: %w", db.loc, db.scrub.Error(err))
	}
	cfg.MaxConns = max(cfg.MaxConns, 8)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("fleet database %s: %w", db.loc, db.scrub.Error(err))
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("fleet database %s: %w (is the server up, and are the URL's user, password and database right?)", db.loc, oneLine{db.scrub.Error(err)})
	}
	db.pool = pool
	return db, nil
}

func (db *database) close() { db.pool.Close() }

// oneLine is an error whose text is kept on one line: pgx lists each
// address it tried on a line of its own, and a log line or a command's
// message must stay one line.
type oneLine struct{ err error }

func (e oneLine) Error() string {
	s := strings.NewReplacer(":\n", ": ", "\n", "; ").Replace(e.err.Error())
	return strings.Join(strings.Fields(s), " ")
}
func (e oneLine) Unwrap() error { return e.err }

// errorf wraps err with what was being done; the password never shows.
func (db *database) errorf(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("fleet database %s: %s: %w", db.loc, fmt.Sprintf(format, args...), db.scrub.Error(err))
}

// transient reports whether err is the database going away (a refused or
// broken connection, a server shutting down) rather than a mistake: an
// operation that failed so is worth repeating.
func transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P01-57P03: admin shutdown,
		// crash shutdown, cannot connect now; 40001/40P01: serialization
		// failure, deadlock.
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P") ||
			pgErr.Code == "40001" || pgErr.Code == "40P01"
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true
	}
	return pgconn.SafeToRetry(err) || pgconn.Timeout(err) ||
		strings.Contains(err.Error(), "conn closed") || strings.Contains(err.Error(), "connection reset") ||
		strings.Contains(err.Error(), "unexpected EOF") || strings.Contains(err.Error(), "broken pipe")
}

// Backoff bounds of retry.
const (
	retryFirst = 500 * time.Millisecond
	retryMax   = 30 * time.Second
)

// retry runs op until it succeeds, fails with an error that is not the
// database going away, or ctx ends. Each failure it will repeat is logged
// with the wait before the next try, doubling from retryFirst to retryMax.
func (db *database) retry(ctx context.Context, lg *log.Logger, what string, op func(context.Context) error) error {
	wait := retryFirst
	for try := 1; ; try++ {
		err := op(ctx)
		if err == nil {
			if try > 1 {
				logEvent(lg, "database back", "op", what, "tries", try)
			}
			return nil
		}
		if !transient(err) || ctx.Err() != nil {
			return err
		}
		logEvent(lg, "database unreachable", "op", what, "try", try, "retry_in", wait, "error", db.scrub.Text(err.Error()))
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, retryMax)
	}
}

// logEvent writes one line: the event, then key=value fields, values
// quoted when they hold spaces or quotes. Journal-friendly: no colours, no
// multi-line messages.
func logEvent(lg *log.Logger, event string, kv ...any) {
	if lg == nil {
		return
	}
	var b strings.Builder
	b.WriteString(event)
	for i := 0; i+1 < len(kv); i += 2 {
		b.WriteByte(' ')
		fmt.Fprint(&b, kv[i])
		b.WriteByte('=')
		b.WriteString(fieldValue(kv[i+1]))
	}
	lg.Print(b.String())
}

func fieldValue(v any) string {
	var s string
	switch v := v.(type) {
	case time.Duration:
		s = v.Round(time.Millisecond).String()
	case []string:
		s = strings.Join(v, ",")
	default:
		s = fmt.Sprint(v)
	}
	s = strings.NewReplacer("\n", " ", "\r", " ").Replace(s)
	if s == "" || strings.ContainsAny(s, " \t\"=") {
		return fmt.Sprintf("%q", s)
	}
	return s
}

package history

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// LockHolder says who holds a lock.
type LockHolder struct {
	Host  string
	PID   int
	Since time.Time
}

func (h LockHolder) String() string {
	if h.PID == 0 {
		return "another process (it did not say which)"
	}
	s := fmt.Sprintf("pid %d on %s", h.PID, h.Host)
	if !h.Since.IsZero() {
		s += " since " + h.Since.UTC().Format(time.RFC3339)
	}
	return s
}

// LockedError is the refusal of Lock. errors.Is(err, ErrLocked) holds.
type LockedError struct {
	Name   string
	Holder LockHolder
	Waited time.Duration // how long Lock waited before it gave up
}

func (e *LockedError) Error() string {
	s := fmt.Sprintf("history lock %q is held by %s", e.Name, e.Holder)
	if e.Waited > 0 {
		s += fmt.Sprintf(" (waited %s)", e.Waited.Round(time.Millisecond))
	}
	return s
}

func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// Lock is a held lock; see DB.Lock.
type Lock struct {
	once    sync.Once
	release func() error
	err     error
}

// Unlock releases the lock. Calling it again does nothing.
func (l *Lock) Unlock() error {
	l.once.Do(func() { l.err = l.release() })
	return l.err
}

var lockName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)

// Lock takes the exclusive lock called name (a short lower-case word, such
// as "nightly") on the history, so that two processes do not do the same
// work at once: a second nightly started by cron while the first still
// bisects, say. If another process (or another Lock of this one) holds it,
// Lock waits up to wait (not at all if wait is 0) and then fails with a
// *LockedError that says who holds it (host, pid, since).
//
// The lock belongs to the process and dies with it, whatever the way it
// dies, so a killed nightly never leaves a stale lock behind. In
// PostgreSQL it is a session advisory lock on a connection kept for it (it
// is also gone when that connection breaks); in SQLite an flock on the
// file <database>.<name>.lock beside the database.
//
// The lock orders processes; it does not guard the data, which every Write
// keeps consistent on its own.
func (db *DB) Lock(ctx context.Context, name string, wait time.Duration) (*Lock, error) {
	if !lockName.MatchString(name) {
		return nil, fmt.Errorf("lock %q: not a short lower-case name", name)
	}
	host, _ := os.Hostname()
	me := LockHolder{Host: host, PID: os.Getpid(), Since: time.Now().UTC().Truncate(time.Second)}
	var try func() (release func() error, holder LockHolder, err error)
	var cleanup func()
	if db.d.postgres {
		try, cleanup = db.pgLocker(ctx, name, me)
	} else {
		try, cleanup = db.fileLocker(name, me)
	}
	defer cleanup()
	start := time.Now()
	pause := 50 * time.Millisecond
	for {
		release, holder, err := try()
		if err != nil {
			return nil, err
		}
		if release != nil {
			return &Lock{release: release}, nil
		}
		waited := time.Since(start)
		if waited >= wait {
			return nil, fmt.Errorf("lock history %s: %w", db.loc, &LockedError{Name: name, Holder: holder, Waited: waited})
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("lock history %s: waiting for %q, held by %s: %w", db.loc, name, holder, ctx.Err())
		case <-time.After(min(pause, wait-waited)):
		}
		pause = min(2*pause, time.Second)
	}
}

// fileLocker tries an flock on the lock file. The holder writes who it is
// into the file; a refused process reads it. flock locks belong to the
// open file, which Go opens close-on-exec: children (QEMU) do not inherit
// the lock, and the kernel drops it when the holder dies.
func (db *DB) fileLocker(name string, me LockHolder) (try func() (func() error, LockHolder, error), cleanup func()) {
	path := db.path + "." + name + ".lock"
	try = func() (func() error, LockHolder, error) {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, LockHolder{}, fmt.Errorf("lock history: %w", err)
		}
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		for err == unix.EINTR {
			err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		}
		if err == unix.EWOULDBLOCK {
			holder := readHolder(f)
			f.Close()
			return nil, holder, nil
		}
		if err != nil {
			f.Close()
			return nil, LockHolder{}, fmt.Errorf("lock history %s: flock %s: %w", db.loc, path, err)
		}
		info, _ := json.Marshal(me)
		if err := f.Truncate(0); err == nil {
			f.WriteAt(append(info, '\n'), 0)
		}
		release := func() error {
			f.Truncate(0) // a waiter never reads a holder that is gone
			unix.Flock(int(f.Fd()), unix.LOCK_UN)
			return f.Close()
		}
		return release, LockHolder{}, nil
	}
	return try, func() {}
}

func readHolder(f *os.File) LockHolder {
	b, _ := io.ReadAll(io.LimitReader(f, 4096))
	var h LockHolder
	json.Unmarshal(b, &h)
	return h
}

// pgLocker tries a session advisory lock on a connection of its own. The
// connection carries who we are in its application_name, which any session
// can read in pg_stat_activity: the holder's identity lives exactly as long
// as its session, so it cannot go stale.
func (db *DB) pgLocker(ctx context.Context, name string, me LockHolder) (try func() (func() error, LockHolder, error), cleanup func()) {
	key := advisoryKey(name)
	c, connErr := db.sql.Conn(ctx)
	if connErr == nil {
		_, connErr = c.ExecContext(ctx, "SELECT set_config('application_name', $1, false)", holderAppName(me))
	}
	held := false
	cleanup = func() {
		if c != nil && !held {
			// Not back to the pool with our name on it.
			c.Raw(func(any) error { return driver.ErrBadConn })
			c.Close()
		}
	}
	try = func() (func() error, LockHolder, error) {
		if connErr != nil {
			return nil, LockHolder{}, db.errorf(connErr, "lock %q: connect", name)
		}
		var ok bool
		if err := c.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1, $2)", advisoryClass, key).Scan(&ok); err != nil {
			return nil, LockHolder{}, db.errorf(err, "lock %q", name)
		}
		if ok {
			held = true
			release := func() error {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, err := c.ExecContext(ctx, "SELECT pg_advisory_unlock($1, $2)", advisoryClass, key)
				// Never give this session back to the pool: close it, and
				// with it whatever it still holds.
				c.Raw(func(any) error { return driver.ErrBadConn })
				c.Close()
				if err != nil {
					return db.errorf(err, "unlock %q (the session is closed, which released it)", name)
				}
				return nil
			}
			return release, LockHolder{}, nil
		}
		var app string
		err := c.QueryRowContext(ctx, `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE l.locktype = 'advisory' AND l.granted AND l.classid::bigint = $1 AND l.objid::bigint = $2 AND l.objsubid = 2
			  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
			int64(advisoryClass), int64(key)).Scan(&app)
		if err != nil {
			app = "" // released in between, or not visible to us: say "another process"
		}
		return nil, parseHolderAppName(app), nil
	}
	return try, cleanup
}

// holderAppName encodes a holder in PostgreSQL's application_name (at most
// 63 bytes of ASCII): lpmbisect/PID/UNIX-SECONDS/HOST, the host cut short
// if need be.
func holderAppName(h LockHolder) string {
	s := fmt.Sprintf("lpmbisect/%d/%d/", h.PID, h.Since.Unix())
	host := strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, h.Host)
	if len(s)+len(host) > 63 {
		host = host[:63-len(s)]
	}
	return s + host
}

func parseHolderAppName(app string) LockHolder {
	parts := strings.SplitN(app, "/", 4)
	if len(parts) != 4 || parts[0] != "lpmbisect" {
		return LockHolder{}
	}
	pid, err1 := strconv.Atoi(parts[1])
	secs, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return LockHolder{}
	}
	return LockHolder{Host: parts[3], PID: pid, Since: time.Unix(secs, 0).UTC()}
}

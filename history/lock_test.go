package history

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestLock(t *testing.T) {
	ctx := context.Background()
	host, _ := os.Hostname()
	forEachBackend(t, func(t *testing.T, location string) {
		first := openFresh(t, location)
		second := openFresh(t, location) // as another process would
		held, err := first.Lock(ctx, "nightly", 0)
		if err != nil {
			t.Fatalf("Lock = %v", err)
		}

		// Refused at once, saying who holds it.
		_, err = second.Lock(ctx, "nightly", 0)
		var locked *LockedError
		if !errors.Is(err, ErrLocked) || !errors.As(err, &locked) {
			t.Fatalf("second Lock = %v; want a LockedError", err)
		}
		if locked.Holder.PID != os.Getpid() || locked.Holder.Host != host || time.Since(locked.Holder.Since) > time.Minute {
			t.Errorf("holder = %+v; want pid %d on %s, since a moment ago", locked.Holder, os.Getpid(), host)
		}
		if msg := err.Error(); !strings.Contains(msg, "pid "+strconv.Itoa(os.Getpid())) || !strings.Contains(msg, host) {
			t.Errorf("refusal %q does not say who holds the lock", msg)
		}

		// Another name is another lock.
		other, err := second.Lock(ctx, "bisect", 0)
		if err != nil {
			t.Errorf("Lock(bisect) while nightly is held = %v", err)
		} else {
			other.Unlock()
		}

		// Waiting gives up after the timeout.
		start := time.Now()
		_, err = second.Lock(ctx, "nightly", 300*time.Millisecond)
		if !errors.As(err, &locked) || time.Since(start) < 300*time.Millisecond || locked.Waited < 300*time.Millisecond {
			t.Errorf("Lock(wait 300ms) = %v after %v; want a LockedError after 300ms", err, time.Since(start))
		}

		// A cancelled wait says so.
		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, err = second.Lock(cctx, "nightly", time.Minute)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Lock(cancelled while waiting) = %v; want the context's error", err)
		}

		// A waiter gets the lock when the holder releases it.
		got := make(chan error, 1)
		go func() {
			l, err := second.Lock(ctx, "nightly", 30*time.Second)
			if err == nil {
				err = l.Unlock()
			}
			got <- err
		}()
		time.Sleep(200 * time.Millisecond)
		if err := held.Unlock(); err != nil {
			t.Errorf("Unlock = %v", err)
		}
		if err := held.Unlock(); err != nil {
			t.Errorf("second Unlock = %v; want nil", err)
		}
		select {
		case err := <-got:
			if err != nil {
				t.Errorf("waiting Lock = %v; want the lock once released", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("waiting Lock did not return within 30s of the release")
		}

		if _, err := first.Lock(ctx, "Nightly; --", 0); err == nil || errors.Is(err, ErrLocked) {
			t.Errorf("Lock(bad name) = %v; want a name error", err)
		}
	})
}

func TestLockFreedWhenHolderIsKilled(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, location string) {
		db := openFresh(t, location)
		h := startHelper(t, "hold-lock", location, "locked")

		_, err := db.Lock(ctx, "nightly", 0)
		var locked *LockedError
		if !errors.As(err, &locked) {
			t.Fatalf("Lock while the helper holds it = %v; want a LockedError", err)
		}
		if locked.Holder.PID != h.cmd.Process.Pid {
			t.Errorf("holder = %+v; want the helper, pid %d", locked.Holder, h.cmd.Process.Pid)
		}

		h.kill() // SIGKILL: no deferred unlock runs
		start := time.Now()
		l, err := db.Lock(ctx, "nightly", 30*time.Second)
		if err != nil {
			t.Fatalf("Lock after the holder was killed = %v; want the lock", err)
		}
		t.Logf("lock free %v after the holder's death", time.Since(start).Round(time.Millisecond))
		l.Unlock()
	})
}

func TestHolderAppName(t *testing.T) {
	since := time.Date(2026, 3, 1, 2, 3, 4, 0, time.UTC)
	for _, h := range []LockHolder{
		{Host: "ci-1", PID: 4242, Since: since},
		{Host: strings.Repeat("very-long-host-name.", 5), PID: 4194304, Since: since},
		{Host: "höst", PID: 1, Since: since},
	} {
		app := holderAppName(h)
		if len(app) > 63 {
			t.Errorf("holderAppName(%+v) = %q, %d bytes; want at most 63", h, app, len(app))
		}
		got := parseHolderAppName(app)
		if got.PID != h.PID || !got.Since.Equal(h.Since) || !strings.HasPrefix(strings.ReplaceAll(h.Host, "ö", "?"), got.Host) || got.Host == "" {
			t.Errorf("parseHolderAppName(holderAppName(%+v)) = %+v", h, got)
		}
	}
	if got := parseHolderAppName("psql"); got.PID != 0 {
		t.Errorf("parseHolderAppName(psql) = %+v; want no holder", got)
	}
}

// Package interrupt gives a command a context that SIGINT or SIGTERM
// cancels, with a cause that says which signal, so that the command can
// stop its work cleanly (no QEMU left behind, finished boots kept) and exit
// as shells expect of an interrupted process (128 + the signal's number).
package interrupt

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Error is the cause of a context canceled by a signal.
type Error struct {
	Signal syscall.Signal
}

func (e *Error) Error() string { return "interrupted by " + signalName(e.Signal) }

// ExitCode is the shell's exit status of a process the signal ended:
// 130 for SIGINT, 143 for SIGTERM.
func (e *Error) ExitCode() int { return 128 + int(e.Signal) }

func signalName(s syscall.Signal) string {
	if s == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "SIGINT"
}

// Context returns a context that SIGINT or SIGTERM cancels with an *Error
// as its cause, and the function that stops listening and cancels it.
func Context() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		for sig := range ch {
			cancel(&Error{Signal: sig.(syscall.Signal)})
		}
	}()
	return ctx, func() { signal.Stop(ch); cancel(nil) }
}

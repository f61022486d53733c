package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/internal/interrupt"
)

// Exit codes, documented in the README. They are stable: CI scripts rely
// on them. (git bisect run has its own contract, used by bisect-run.)
const (
	exitOK           = 0   // success; for compare: no regression
	exitRegression   = 1   // compare found a regression beyond the threshold
	exitUsage        = 2   // bad input: flags, missing file, not a kernel, unwritable output
	exitInconclusive = 3   // compare could not decide
	exitInfra        = 4   // infrastructure failure: QEMU missing, a kernel that did not boot
	exitSIGINT       = 130 // interrupted by SIGINT (128+2)
	exitSIGTERM      = 143 // terminated by SIGTERM (128+15)
)

// exitError carries an exit code with the error it reports.
type exitError struct {
	code    int
	err     error
	verdict bool // bisect-run's verdict, whose code is git bisect run's
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// argsError reports a wrong number of positional arguments.
func argsError(cmd, want string, args []string) error {
	return usageError("%s takes %s, got %d arguments (see lpmbisect %s --help)", cmd, want, len(args), cmd)
}

// exitCode maps an error to the process exit code.
func exitCode(err error) int {
	var ee *exitError
	var se *interrupt.Error
	var kvm *vmrunner.KVMUnusableError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &se):
		return se.ExitCode()
	case errors.As(err, &ee):
		return ee.code
	case kernel.IsBadInput(err):
		return exitUsage
	case errors.Is(err, vmrunner.ErrQEMUMissing), errors.Is(err, measure.ErrBootFailed), errors.Is(err, measure.ErrNoResults), errors.As(err, &kvm):
		return exitInfra
	case errors.Is(err, context.Canceled):
		return exitSIGINT
	}
	return exitInfra
}

// flagHint is the remedy, in this command's flags, for an error that a
// library reports without naming them; "" for other errors.
func flagHint(err error) string {
	var kvm *vmrunner.KVMUnusableError
	var long *vmrunner.CommandLineTooLongError
	switch {
	case errors.As(err, &kvm):
		return " (use --accel icount, or --accel auto, which chooses icount here by itself)"
	case errors.As(err, &long):
		return " (shorten --append or --bench)"
	}
	return ""
}

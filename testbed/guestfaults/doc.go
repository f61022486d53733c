// Package guestfaults makes the guest misbehave on purpose, so that the
// host's handling of hung, flooding, garbled, crashed and lying guests can
// be tested with a real guest: the guest the tests boot (faultguest, which
// testbed/testguest builds) is cmd/lpmbisect-guest with this package's
// injector (agent.Injector), which the kernel command line's
// lpmbisect_fault=KIND arms (Arg). The guest lpmbisect packs has none of
// it, and nothing of it travels in the host–guest protocol (package wire).
//
// The parameter has no dot, so the kernel hands it to PID 1 as an
// environment variable and the guest reads it from /proc/cmdline; the
// host's tests put it there with --append (measure.Options.Append).
//
// For tests only: internal/importrule fails any non-test file that imports
// a package of testbed/.
package guestfaults

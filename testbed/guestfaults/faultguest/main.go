// Command faultguest is the guest of lpmbisect's tests: cmd/lpmbisect-guest
// with the injector of package guestfaults, which the kernel command
// line's lpmbisect_fault=KIND arms; without it, it boots as
// cmd/lpmbisect-guest does. testbed/testguest builds it.
//
// For tests only: a guest lpmbisect packs is cmd/lpmbisect-guest.
package main

import (
	"github.com/lpmbisect/lpmbisect/guest/agent"
	"github.com/lpmbisect/lpmbisect/testbed/guestfaults"
)

func main() { agent.Main(guestfaults.FromCmdline) }

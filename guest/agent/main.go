package agent

import (
	"fmt"
	"os"
	"time"

	"github.com/lpmbisect/lpmbisect/wire"
)

// Main is a guest program's main (cmd/lpmbisect-guest): it sets up PID 1,
// reads the run plan from the kernel command line ($LPMBISECT_CMDLINE
// when run by hand, not as PID 1), runs the boot and powers off. faults,
// when set, gives the boot an injector from the command line (the tests'
// guest alone).
func Main(faults func(cmdline string) Injector) {
	pid1 := os.Getpid() == 1
	if pid1 {
		setUpPID1() // mounts /proc, so it comes before the plan
	}
	start := time.Now()
	opts := options{PID1: pid1}
	cmdline, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		opts.Infos = append(opts.Infos, fmt.Sprintf("read /proc/cmdline: %v", err))
	}
	if v, ok := os.LookupEnv("LPMBISECT_CMDLINE"); ok && !pid1 {
		cmdline = []byte(v)
	}
	opts.Plan, opts.PlanErr = wire.DecodePlan(string(cmdline))
	if opts.PlanErr != nil {
		opts.PlanErr = fmt.Errorf("kernel command line: %w", opts.PlanErr)
	}
	if faults != nil {
		opts.Faults = faults(string(cmdline))
	}

	err = run(opts)
	if err != nil {
		logf("%v", err)
	}
	logf("done in %v", time.Since(start).Round(time.Millisecond))
	if pid1 {
		powerOff() // never returns: PID 1 exiting panics the kernel
	}
	if err != nil {
		os.Exit(1)
	}
}

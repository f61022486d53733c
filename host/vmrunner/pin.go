package vmrunner

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// startPinned starts cmd restricted to cpus (all of them when empty). The
// affinity is set on a locked thread that then forks, so QEMU and every
// thread it creates inherit it from the start; the thread gets its own
// affinity back before it is unlocked. It must live on: Pdeathsig kills
// QEMU when the thread that started it exits.
func startPinned(cmd *exec.Cmd, cpus []int) error {
	if len(cpus) == 0 {
		return cmd.Start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return fmt.Errorf("read CPU affinity: %w", err)
	}
	for _, c := range cpus {
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pin to host CPUs %v: %w", cpus, err)
	}
	err := cmd.Start()
	if rerr := unix.SchedSetaffinity(0, &old); rerr != nil {
		// A thread that cannot get its affinity back must not serve
		// other goroutines: stay locked, so it ends with this one. QEMU
		// is then killed by Pdeathsig, and the boot fails visibly.
		runtime.LockOSThread()
		return errors.Join(err, fmt.Errorf("restore CPU affinity: %w", rerr))
	}
	return err
}

// PairCPU returns the host CPU on which to pin both VMs of a pair, so that
// whatever state that CPU is in hits both alike: the last CPU this process
// may run on (the first is where the system's own work tends to land).
func PairCPU() (int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return 0, fmt.Errorf("read CPU affinity: %w", err)
	}
	cpu := -1
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			cpu = c
		}
	}
	if cpu < 0 {
		return 0, errors.New("read CPU affinity: no CPU allowed")
	}
	return cpu, nil
}

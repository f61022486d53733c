package vmrunner

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// icountWallSlack bounds how far an icount boot's deadlines may stretch in
// wall time: a deadline measured in QEMU's CPU time (see Config) also fires
// once this many times its length has passed on the wall clock, so that a
// guest that hangs without using the CPU is still ended.
const icountWallSlack = 10

// userHZ is the unit of the CPU times in /proc/PID/stat (USER_HZ, 100 on
// every Linux architecture that QEMU's x86 guests run on).
const userHZ = 100

// processCPU returns the CPU time (user and system, all threads) that the
// process pid has used, from /proc/PID/stat.
func processCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from after its closing parenthesis, where field 3 (state) starts.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := bytes.Fields(data[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(f))
	}
	utime, err1 := strconv.ParseUint(string(f[11]), 10, 64) // field 14
	stime, err2 := strconv.ParseUint(string(f[12]), 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * time.Second / userHZ, nil
}

// clock is how a boot's deadlines measure time: the wall clock, or under
// icount the CPU time of the QEMU process (cpu set), with the wall clock
// divided by icountWallSlack as a floor.
type clock struct {
	cpu func() (time.Duration, error)

	lastActivity int64         // the monitor's lastActivity at the last reading
	cpuAtActive  time.Duration // CPU time when activity was last seen
}

// since returns the time counted since start (wall), and since the last
// activity at lastActivity (unix nanoseconds), by this clock.
func (c *clock) since(now, start time.Time, lastActivity int64) (elapsed, silent time.Duration) {
	elapsed, silent = now.Sub(start), now.Sub(time.Unix(0, lastActivity))
	if c == nil || c.cpu == nil {
		return elapsed, silent
	}
	cpu, err := c.cpu()
	if err != nil { // QEMU is gone or /proc unreadable: the wall clock's slack decides
		return elapsed / icountWallSlack, silent / icountWallSlack
	}
	if lastActivity != c.lastActivity {
		c.lastActivity, c.cpuAtActive = lastActivity, cpu
	}
	return max(cpu, elapsed/icountWallSlack), max(cpu-c.cpuAtActive, silent/icountWallSlack)
}

// unit says what the clock's durations are, for messages.
func (c *clock) unit() string {
	if c == nil || c.cpu == nil {
		return ""
	}
	return " of QEMU CPU time"
}

package agent

import (
	"os"
	"strconv"
	"strings"

	"github.com/lpmbisect/lpmbisect/wire"
)

// markPhase writes the end of a phase on the console (wire.PhaseMark), for
// the host to record where an icount boot's instructions went. It writes
// nothing under other accelerators, whose clock is not the guest's
// instructions, nor where there is no time stamp counter.
func (b *boot) markPhase(phase string) {
	if !haveTSC || !b.plan.Accel.CountsInstructions() {
		return
	}
	tsc := rdtsc()
	logf("%s", wire.PhaseMark{Phase: phase, TSC: tsc, IdleNS: idleNS()}.ConsoleText())
}

// idleNS is the time the guest's CPUs have been idle since boot, from
// /proc/uptime (hundredths of a second), 0 when it cannot be read.
func idleNS() uint64 {
	data, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) != 2 {
		return 0
	}
	sec, err := strconv.ParseFloat(f[1], 64)
	if err != nil || sec < 0 {
		return 0
	}
	return uint64(sec * 1e9)
}

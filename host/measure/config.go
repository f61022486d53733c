package measure

import (
	"strings"

	"github.com/lpmbisect/lpmbisect/config"
	"github.com/lpmbisect/lpmbisect/wire"
)

// FromConfig returns the options that a configuration's [measure] and
// [bench] sections give: how kernels are booted and what the guest runs.
// What a command decides itself (RunDir, Paired, Remote, the loggers) is
// left to it.
func FromConfig(m config.Measure, b config.Bench) Options {
	return Options{
		Accel: wire.Accel(m.Accel),
		Plan: GuestPlan{Bench: b.Select, Samples: b.Samples, Entries: b.Entries, PrefixLen: b.PrefixLen,
			BatchEntries: b.BatchEntries, Rounds: b.Rounds},
		MemoryMB: m.MemoryMB, CPUs: m.CPUs, BootTimeout: m.BootTimeout.Duration, ProgressTimeout: m.ProgressTimeout.Duration,
		QEMU: m.QEMU, CacheDir: m.CacheDir, Guest: m.Guest, Append: strings.Fields(m.Append), CPUProfile: m.CPUProfile, NoModules: m.NoModules,
		Parallel: m.Parallel,
	}
}

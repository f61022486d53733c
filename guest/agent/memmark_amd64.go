package agent

// The memory plugin's marks from user space (memmark_amd64.s): memArm
// makes the plugin instrument every instruction from then on, memBegin and
// memEnd open and close a segment (a benchmark's counted operations),
// memDisarm ends the instrumentation; memBeginWide opens a segment that
// also counts the kernel outside the windows (the deferred work pass),
// memPause and memResume bracket the harness's work inside one, and
// memWindowStart and memWindowStop a counting window in user space (the
// marks a program's timed loop has). Their immediates are wire.MemArm,
// wire.MemBegin, wire.MemEnd, wire.MemDisarm, wire.MemBeginWide,
// wire.MemPause, wire.MemResume, wire.MemWindowStart and wire.MemWindowStop
// (TestMemMarksMatchWire).
func memArm()
func memBegin()
func memEnd()
func memDisarm()
func memBeginWide()
func memPause()
func memResume()
func memWindowStart()
func memWindowStop()

const haveMemMarks = true

package agent

// The memory plugin's marks from user space (memmark_amd64.s): memArm
// makes the plugin instrument every instruction from then on, memBegin and
// memEnd open and close a segment (a benchmark's counted operations),
// memDisarm ends the instrumentation; memBeginWide opens a segment that
// also counts the kernel outside the windows (the deferred work pass),
// memPause and memResume bracket the harness's work inside one. Their
// immediates are wire.MemArm, wire.MemBegin, wire.MemEnd, wire.MemDisarm,
// wire.MemBeginWide, wire.MemPause and wire.MemResume
// (TestMemMarksMatchWire).
func memArm()
func memBegin()
func memEnd()
func memDisarm()
func memBeginWide()
func memPause()
func memResume()

const haveMemMarks = true

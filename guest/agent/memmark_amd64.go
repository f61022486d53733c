package agent

// The memory plugin's marks from user space (memmark_amd64.s): memArm
// makes the plugin instrument every instruction from then on, memBegin and
// memEnd open and close a segment (a benchmark's counted operations),
// memDisarm ends the instrumentation. Their immediates are
// wire.MemArm, wire.MemBegin, wire.MemEnd and wire.MemDisarm
// (TestMemMarksMatchWire).
func memArm()
func memBegin()
func memEnd()
func memDisarm()

const haveMemMarks = true

package agent

import (
	"io"

	"github.com/lpmbisect/lpmbisect/guest/workloads"
)

// Injector makes a boot misbehave on purpose, so that the host's handling
// of hung, flooding, garbled, crashed and lying guests can be tested with a
// real guest. The tests' guest has one (testbed/guestfaults); the guest
// lpmbisect packs (cmd/lpmbisect-guest) has none, and its boots write
// straight to the wire.
type Injector interface {
	// SetUp runs first in PID 1, before the modules are loaded.
	SetUp() error
	// Stream wraps the channel the stream is written to.
	Stream(ch io.Writer) io.Writer
	// Results wraps out, the output of the benchmarks' results and notes;
	// ch is the channel under the stream, and drain waits until the host
	// has read what was written to it.
	Results(out workloads.Output, ch io.Writer, drain func() error) workloads.Output
	// LowSampleRate says the profile pass lowers the kernel's maximum
	// sample rate instead of raising it, so that the sampling event is
	// throttled.
	LowSampleRate() bool
}

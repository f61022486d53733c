package view

import (
	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/wire"
)

// ExcursionMeaning says what an excursion (a night far from the nights on
// both sides of it, package changepoint) means, by its line and the
// accelerator that measured the night: under instruction counts, which do
// not wander, a kernel that was different that night (on the host line,
// the reference or the harness), not noise; under wall time a bad night.
// Either way it is left out of the change-point statistics and its boots
// are kept. nightly's alert of a new excursion and the reports of the
// history say it in these words.
func ExcursionMeaning(line history.Line, accel string) string {
	if !wire.Accel(accel).CountsInstructions() {
		return "a bad night, left out of the change-point statistics; its boots are kept"
	}
	if line == history.LineHost {
		return "under instruction counts the reference or the harness was different that night; left out of the change-point statistics"
	}
	return "under instruction counts a kernel that was different that night, not noise; left out of the change-point statistics"
}

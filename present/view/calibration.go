package view

import (
	"encoding/json"
	"time"
)

// Calibration is what one calibration measured, as lpmbisect calibrate
// shows it: package calibrate fills it (Calibration.View).
type Calibration struct {
	// Kernel is the release booted, Boots the boots computed from, Date
	// when, Key the calibration's key as text.
	Kernel string
	Boots  int
	Date   time.Time
	Key    string
	// Quantile, SafetyFactor, BoundFloor, MaxJitter and SameShare are the
	// method's figures the legend names.
	Quantile, SafetyFactor, BoundFloor, MaxJitter, SameShare float64
	// Rows has one row per benchmark and unit.
	Rows []CalibrationRow
	// Document is the stored calibration, as JSON (the json format writes
	// it indented).
	Document json.RawMessage
}

// CalibrationRow is the calibration of one benchmark in one unit.
type CalibrationRow struct {
	Name, Unit string
	// Centre is the median of the boot medians; MaxDiff and QuantileDiff
	// the largest and the quantile of their pairwise relative
	// differences, as fractions (+Inf when one median is 0 and another is
	// not).
	Centre, MaxDiff, QuantileDiff float64
	// Bound is the jitter bound, as a fraction (0 for wall time).
	Bound float64
	// Deterministic says the row passed the tests of determinism; Why
	// says why not when it did not.
	Deterministic bool
	Why           string
	// Floor is the smallest minimum effect at which the self-compares
	// said SAME often enough, when FloorReached; FloorSought says the
	// self-compares looked for one (wall time).
	Floor                     float64
	FloorReached, FloorSought bool
}

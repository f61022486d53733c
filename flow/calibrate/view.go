package calibrate

import (
	"encoding/json"

	"github.com/lpmbisect/lpmbisect/present/view"
)

// View is what lpmbisect calibrate shows of c: its rows, the method's
// figures the legend names, and the stored document for the json format.
func (c *Calibration) View() (view.Calibration, error) {
	doc, err := json.Marshal(c)
	if err != nil {
		return view.Calibration{}, err
	}
	v := view.Calibration{Kernel: c.Kernel, Boots: c.Boots, Date: c.Date, Key: c.Key.String(),
		Quantile: c.Method.Quantile, SafetyFactor: c.Method.SafetyFactor, BoundFloor: c.Method.BoundFloor,
		MaxJitter: c.Method.MaxJitter, SameShare: c.Method.SameShare, Document: doc}
	for _, b := range c.Benchmarks {
		v.Rows = append(v.Rows, view.CalibrationRow{Name: b.Name, Unit: b.Unit, Centre: b.Centre,
			MaxDiff: b.MaxDiff, QuantileDiff: b.QuantileDiff, Bound: b.Bound, Deterministic: b.Deterministic,
			Why: b.Why, Floor: b.Floor, FloorReached: b.FloorReached, FloorSought: len(b.SameShare) > 0})
	}
	return v, nil
}

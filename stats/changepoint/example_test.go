package changepoint_test

import (
	"fmt"

	"github.com/lpmbisect/lpmbisect/stats/changepoint"
)

// A nightly run keeps yesterday's change points, updates them with tonight's
// value and reports only what Match says is new.
func Example() {
	// Instruction counts per lookup, one per night: 1065 for 20 nights,
	// then 838 (an inlining commit), with the 0.03 % noise of icount.
	var nights []float64
	for i := range 24 {
		v := 1065.0
		if i >= 20 {
			v = 838
		}
		nights = append(nights, v*(1+0.0003*float64(i%3-1)))
	}
	o := changepoint.Options{MinMagnitude: 0.01, NoiseFloor: 0.0003}

	var reported []changepoint.ChangePoint
	for n := 19; n <= len(nights); n++ {
		cps, err := changepoint.Update(nights[:n], reported, o)
		if err != nil {
			fmt.Println(err)
			return
		}
		m := changepoint.Match(reported, cps, changepoint.DefaultMatchDistance)
		for _, j := range m.Added {
			c := cps[j]
			fmt.Printf("night %d: new change point at night %d: %.0f → %.0f (%+.1f%%), p=%.1g, provisional %v\n",
				n-1, c.Index, c.Before, c.After, c.ChangePct, c.P, c.Provisional)
		}
		for _, p := range m.Pairs {
			if was, is := reported[p.Prev], cps[p.Next]; was.Provisional && !is.Provisional {
				fmt.Printf("night %d: change point at night %d confirmed\n", n-1, is.Index)
			}
		}
		reported = cps
	}
	// Output:
	// night 20: new change point at night 20: 1065 → 838 (-21.3%), p=2e-50, provisional true
	// night 22: change point at night 20 confirmed
}

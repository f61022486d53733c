package measure

import (
	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/stats/sample"
	"github.com/lpmbisect/lpmbisect/wire"
)

// BootCosts summarizes the phases (wire.KeyPhases) the results of sides
// "A" and "B" recorded (icount boots record them; others leave the sides' costs nil).
// Each boot counts once, however many results it wrote; a boot whose
// phases do not parse is left out.
func BootCosts(results []*benchfmt.Result) [2]*wire.BootCost {
	type boot struct{ side, n string }
	seen := map[boot]bool{}
	var per [2]map[string][]wire.PhaseCost
	var boots [2]int
	var order [2][]string
	for _, r := range results {
		side := 0
		switch r.GetConfig(wire.KeySide) {
		case "A":
		case "B":
			side = 1
		default:
			continue
		}
		b := boot{r.GetConfig(wire.KeySide), r.GetConfig(wire.KeyBoot)}
		v := r.GetConfig(wire.KeyPhases)
		if v == "" || seen[b] {
			continue
		}
		seen[b] = true
		costs, err := wire.ParsePhases(v)
		if err != nil {
			continue
		}
		if per[side] == nil {
			per[side] = map[string][]wire.PhaseCost{}
		}
		boots[side]++
		withoutInsight(costs)
		for _, c := range costs {
			if _, ok := per[side][c.Phase]; !ok {
				order[side] = append(order[side], c.Phase)
			}
			per[side][c.Phase] = append(per[side][c.Phase], c)
		}
	}
	var out [2]*wire.BootCost
	for side := range out {
		if boots[side] == 0 {
			continue
		}
		bc := &wire.BootCost{Boots: boots[side]}
		for _, p := range order[side] {
			cs := per[side][p]
			bc.Phases = append(bc.Phases, wire.PhaseCost{Phase: p, Boots: len(cs),
				Ticks: medianOf(cs, func(c wire.PhaseCost) float64 { return c.Ticks }),
				Idle:  medianOf(cs, func(c wire.PhaseCost) float64 { return c.Idle })})
		}
		out[side] = bc
	}
	return out
}

// withoutInsight takes the insight pass out of a boot's total (the last
// of costs, ParsePhases'): the pass runs on one boot a side, so the cost
// of a boot is reported without it and the pass's beside it.
func withoutInsight(costs []wire.PhaseCost) {
	total := &costs[len(costs)-1]
	for _, c := range costs {
		if c.Phase == wire.PhaseInsight {
			total.Ticks = max(total.Ticks-c.Ticks, 0)
			total.Idle = max(total.Idle-c.Idle, 0)
		}
	}
}

// medianOf is the median of f over cs (compare.Median).
func medianOf(cs []wire.PhaseCost, f func(wire.PhaseCost) float64) float64 {
	v := make([]float64, len(cs))
	for i, c := range cs {
		v[i] = f(c)
	}
	return sample.Median(v)
}

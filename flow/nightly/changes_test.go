package nightly

import (
	"fmt"
	"testing"

	"github.com/lpmbisect/lpmbisect/history"
)

// TestChangePointsKeepToOneCPU: a step in the counts where the CPU model
// changed between nights (a CPU profile given) is the instrument's, not a
// change point; the same step on one model is one.
func TestChangePointsKeepToOneCPU(t *testing.T) {
	trend := func(second string) []history.TrendPoint {
		var points []history.TrendPoint
		for i := range 24 {
			cpu, ratio := "Westmere-v1,-cx16", 0.80
			if i >= 12 {
				cpu, ratio = second, 0.84
			}
			n := history.Night{ID: int64(i + 1), Date: fmt.Sprintf("2026-11-%02d", i+1), CPUModel: cpu}
			points = append(points, history.TrendPoint{Night: n, Row: history.NightRow{Ratio: ratio * (1 + 0.0001*float64(i%3))}})
		}
		return points
	}
	m := history.Metric{Benchmark: "LPMTrie/op=lookup/keys=random/entries=10000", Unit: "insn/op"}
	ratio := func(r history.NightRow) float64 { return r.Ratio }
	for _, c := range []struct {
		second string
		want   int
	}{
		{"Westmere-v1,-cx16", 1},
		{"Westmere-v1,-cx16,-hypervisor,vendor=AuthenticAMD,family=23,model=49,stepping=0", 0},
	} {
		points := trend(c.second)
		changes, _, err := lineChanges(history.Series{ID: 1}, m, history.LineKernel, points, onCPU(cpuOf(points), ratio), nil, changeOptions("icount", 1))
		if err != nil {
			t.Fatal(err)
		}
		if len(changes) != c.want {
			t.Errorf("a +5%% step where the CPU model became %s: %d change points %+v; want %d", c.second, len(changes), changes, c.want)
		}
	}
}

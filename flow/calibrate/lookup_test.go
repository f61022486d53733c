package calibrate

import (
	"testing"

	"github.com/lpmbisect/lpmbisect/stats/compare"
)

func TestUseBounds(t *testing.T) {
	b := Bounds{Jitter: map[string]float64{"A": 0.001, "B": 0.002}, Floors: map[string]float64{"A": 0.03}}
	for _, c := range []struct {
		name              string
		names             []string
		auto, statistical bool
		deterministic     bool
		bounds            int
	}{
		{"every benchmark bounded", []string{"A", "B"}, false, false, true, 2},
		{"one without a bound", []string{"A", "C"}, false, false, false, 2},
		{"statistical", []string{"A", "B"}, true, true, false, 0},
	} {
		opts := compare.Options{MinEffect: 0.01}
		if got := b.use(&opts, c.names, c.auto, c.statistical); got != c.deterministic || len(opts.Bounds) != c.bounds {
			t.Errorf("%s: use = %v with %d bounds; want %v with %d", c.name, got, len(opts.Bounds), c.deterministic, c.bounds)
		}
		if c.auto && opts.MinEffects["A"] != 0.03 {
			t.Errorf("%s: auto: minimum effect of A %v; want its floor 0.03", c.name, opts.MinEffects["A"])
		}
	}
}

package calibrate

import (
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/wire"
)

func TestUseBounds(t *testing.T) {
	b := bounds{Jitter: map[string]float64{"A": 0.001, "B": 0.002}, Floors: map[string]float64{"A": 0.03}}
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

// A user's program gets the default bound with its noop and its own-work
// row, so the deterministic rule can decide its first comparison at 2+2
// boots; a calibration that measured a row keeps its verdict on it.
func TestDefaultsForAUsersProgram(t *testing.T) {
	names := []string{"LPMTrie/op=noop", wire.WorkloadNoop("xdp"), wire.WorkloadBench("xdp")}
	b := bounds{Jitter: map[string]float64{}}
	b.defaults(names, func(string) bool { return false }, false)
	for _, n := range append(names, wire.WorkloadOwn("xdp")) {
		if b.Jitter[n] != DefaultBound {
			t.Errorf("defaults: bound of %s = %v; want %v", n, b.Jitter[n], DefaultBound)
		}
	}
	if !strings.Contains(b.Source, "your program xdp") {
		t.Errorf("defaults: Source = %q; want it to name the program", b.Source)
	}
	opts := compare.Options{}
	if !b.use(&opts, names, false, false) {
		t.Errorf("use(program and controls) = false; want true: every row has a bound")
	}

	b = bounds{Jitter: map[string]float64{"LPMTrie/op=noop": 0.0005}}
	b.defaults(names, func(n string) bool { return n == "LPMTrie/op=noop" || n == wire.WorkloadBench("xdp") }, true)
	if b.Jitter["LPMTrie/op=noop"] != 0.0005 || b.Jitter[wire.WorkloadBench("xdp")] != 0 || b.Jitter[wire.WorkloadNoop("xdp")] != DefaultBound {
		t.Errorf("defaults beside a calibration = %v; want the calibrated noop kept, the calibrated (statistical) program left alone, its noop defaulted", b.Jitter)
	}
}

// Results imported without a calibration get the documented defaults:
// the deterministic families' bound, nothing for the others.
func TestDefaultBounds(t *testing.T) {
	got := DefaultBounds([]string{"LPMTrie/op=lookup/keys=random/entries=10000", "LPMTrie/op=noop", "Public/lookup", "RingBuf/op=output"})
	if len(got) != 2 || got["LPMTrie/op=lookup/keys=random/entries=10000"] != DefaultBound || got["LPMTrie/op=noop"] != DefaultBound {
		t.Errorf("DefaultBounds = %v; want the LPM lookup and noop at %v, no bound for the others", got, DefaultBound)
	}
}

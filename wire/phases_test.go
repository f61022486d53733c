package wire

import "testing"

func TestPhaseMarkRoundTrip(t *testing.T) {
	m := PhaseMark{Phase: PhaseBenchmarks, TSC: 2218300000, IdleNS: 580000000}
	got, ok := ParsePhaseMark("lpmbisect-guest: " + m.ConsoleText())
	if !ok || got != m {
		t.Errorf("ParsePhaseMark(ConsoleText(%+v)) = %+v, %v; want it back", m, got, ok)
	}
	for _, bad := range []string{
		"lpmbisect-phase: lunch tsc=1 idle-ns=0",
		"lpmbisect-phase: set-up tsc=-1 idle-ns=0",
		"lpmbisect-phase: set-up tsc=1",
		"lpmbisect-phase: set-up idle-ns=1 tsc=1",
		"lpmbisect-phase: set-up tsc=1 idle-ns=99999999999999999999999",
	} {
		if m, ok := ParsePhaseMark(bad); ok {
			t.Errorf("ParsePhaseMark(%q) = %+v; want no mark", bad, m)
		}
	}
}

func TestFormatPhases(t *testing.T) {
	marks := []PhaseMark{
		{PhaseToInit, 959_100_000, 0},
		{PhaseSetUp, 966_200_000, 0},
		{PhaseBenchmarks, 2_216_400_000, 580_000_000},
		{PhaseTrailer, 2_100_000_000, 580_000_000}, // out of order: dropped
		{PhaseTrailer, 2_216_700_000, 580_000_000},
		{PhaseFlushAck, 2_219_300_000, 580_000_000},
	}
	want := "to-init 959.1M, set-up 7.1M, benchmarks 1250.2M (idle 580.0M), trailer 0.3M, flush-ack 2.6M; all 2219.3M (idle 580.0M)"
	if got := FormatPhases(marks); got != want {
		t.Errorf("FormatPhases = %q; want %q", got, want)
	}
	if got := FormatPhases(nil); got != "" {
		t.Errorf("FormatPhases(nil) = %q; want \"\"", got)
	}
}

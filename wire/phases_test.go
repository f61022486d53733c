package wire

import (
	"slices"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"
)

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

func TestParsePhases(t *testing.T) {
	v := "to-init 959.1M, set-up 7.1M, benchmarks 1250.2M (idle 580.0M), trailer 0.3M, flush-ack 2.6M; all 2219.3M (idle 580.0M)"
	got, err := ParsePhases(v)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 || got[2] != (PhaseCost{Phase: PhaseBenchmarks, Ticks: 1250.2, Idle: 580}) ||
		got[5] != (PhaseCost{Phase: PhaseAll, Ticks: 2219.3, Idle: 580}) {
		t.Errorf("ParsePhases(%q) = %+v", v, got)
	}
	for _, bad := range []string{
		"", "to-init 959.1M", "lunch 1.0M; all 1.0M", "to-init 1.0; all 1.0M",
		"to-init -1.0M; all 1.0M", "to-init 1.0M (idle 2.0M; all 3.0M", "to-init NaNM; all 1.0M",
	} {
		if c, err := ParsePhases(bad); err == nil {
			t.Errorf("ParsePhases(%q) = %+v; want an error", bad, c)
		}
	}
}

// TestBootCosts checks that each boot counts once per side, that the
// median is taken phase by phase, that a phase only some boots had says
// so, and that results without phases (wall time) give no cost.
func TestBootCosts(t *testing.T) {
	res := func(side, boot, phases string) *benchfmt.Result {
		r := &benchfmt.Result{Name: []byte("X")}
		r.SetConfig(KeySide, side)
		r.SetConfig(KeyBoot, boot)
		if phases != "" {
			r.SetConfig(KeyPhases, phases)
		}
		return r
	}
	results := []*benchfmt.Result{
		res("A", "1", "to-init 900.0M, set-up 7.0M, benchmarks 100.0M, insight 300.0M; all 1307.0M"),
		res("A", "1", "to-init 900.0M, set-up 7.0M, benchmarks 100.0M, insight 300.0M; all 1307.0M"),
		res("A", "2", "to-init 900.0M, set-up 7.0M, benchmarks 110.0M; all 1017.0M"),
		res("A", "3", "to-init 900.0M, set-up 9.0M, benchmarks 120.0M; all 1029.0M"),
		res("A", "4", "not phases"),
		res("B", "1", ""),
	}
	got := BootCosts(results)
	if got[1] != nil {
		t.Errorf("side B recorded no phases but has a cost: %+v", got[1])
	}
	want := "median of 3 boots: to-init 900.0M, set-up 7.0M, benchmarks 110.0M, insight 300.0M [1 of 3 boots]; all but insight 1017.0M"
	if got[0] == nil || got[0].String() != want {
		t.Fatalf("BootCosts A = %v; want %q", got[0], want)
	}
	if s := (BootCost{Boots: 1, Phases: got[0].Phases[:1]}).String(); !strings.HasPrefix(s, "1 boot: to-init") {
		t.Errorf("one boot renders as %q", s)
	}
}

func TestMarksTextRoundTrip(t *testing.T) {
	marks := []PhaseMark{{PhaseToInit, 959_100_000, 0}, {PhaseSetUp, 966_200_000, 10}, {PhaseFlushAck, 2_219_300_000, 580_000_000}}
	if got := ParseMarks(MarksText(marks)); !slices.Equal(got, marks) {
		t.Errorf("ParseMarks(MarksText(%v)) = %v", marks, got)
	}
	if got := ParseMarks(""); got != nil {
		t.Errorf("ParseMarks(\"\") = %v; want none", got)
	}
	hostile := strings.Repeat(MarksText(marks[:1])+"\n", 1000)
	if got := ParseMarks(hostile); len(got) > len(Phases) {
		t.Errorf("ParseMarks of 1000 marks kept %d; want at most one a phase", len(got))
	}
}

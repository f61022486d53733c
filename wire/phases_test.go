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

// TestGuestCannotWritePhases checks that the phases key is the host's: a
// stream whose guest wrote it is rejected, so no guest can fake a boot's
// cost.
func TestGuestCannotWritePhases(t *testing.T) {
	s := &Stream{Results: []*benchfmt.Result{{Name: []byte("X"), Iters: 1,
		Config: []benchfmt.Config{{Key: KeyPhases, Value: []byte("to-init 1.0M; all 1.0M")}}}}}
	if why := s.vet(); !strings.Contains(why, `the host's key "phases"`) {
		t.Errorf("vet of a guest's phases key = %q; want it rejected", why)
	}
}

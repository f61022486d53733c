package wire

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Phases of a boot, named by what the guest's clock did in them, in the
// order the guest ends them. The guest marks the end of each on its
// console (PhaseMark); under icount the marks' time stamp counter is the
// guest clock, which advances one tick per instruction and skips ahead
// while the guest idles (sleep=off), so the ticks of a phase are its
// instructions plus its idle time, and the idle time is read apart.
const (
	// PhaseToInit is QEMU's start to the guest's first line of Go:
	// firmware and decompressor (none under a PVH boot), the kernel's
	// boot and initcalls, the Go runtime's start.
	PhaseToInit = "to-init"
	// PhaseSetUp is PID 1's set-up: mounts, modules, the results channel.
	PhaseSetUp = "set-up"
	// PhaseBenchmarks is the benchmarks: program loads, trie fills,
	// warm-ups and timed samples.
	PhaseBenchmarks = "benchmarks"
	// PhaseInsight is the insight pass (on one boot a side, when armed).
	PhaseInsight = "insight"
	// PhaseTrailer is the notes, the trailer and the insight document.
	PhaseTrailer = "trailer"
	// PhaseFlushAck is the wait for the host's acknowledgement of the
	// stream: the host's time, not the kernel's, so it is its own phase.
	PhaseFlushAck = "flush-ack"
)

// Phases lists the phases in order.
var Phases = []string{PhaseToInit, PhaseSetUp, PhaseBenchmarks, PhaseInsight, PhaseTrailer, PhaseFlushAck}

// PhaseMark is the guest's console line at the end of a phase: its time
// stamp counter and its idle time so far (/proc/uptime), in nanoseconds of
// the guest clock.
type PhaseMark struct {
	Phase  string
	TSC    uint64
	IdleNS uint64
}

// phaseMarker starts the text of a mark on the console (after the guest's
// own prefix).
const phaseMarker = "lpmbisect-phase: "

// ConsoleText is the mark as the guest writes it on its console.
func (m PhaseMark) ConsoleText() string {
	return fmt.Sprintf("%s%s tsc=%d idle-ns=%d", phaseMarker, m.Phase, m.TSC, m.IdleNS)
}

// ParsePhaseMark reads a mark from a console line (untrusted guest output):
// a known phase and two decimal numbers, or false.
func ParsePhaseMark(line string) (PhaseMark, bool) {
	i := strings.Index(line, phaseMarker)
	if i < 0 {
		return PhaseMark{}, false
	}
	f := strings.Fields(line[i+len(phaseMarker):])
	if len(f) != 3 || !isPhase(f[0]) {
		return PhaseMark{}, false
	}
	tsc, ok1 := strings.CutPrefix(f[1], "tsc=")
	idle, ok2 := strings.CutPrefix(f[2], "idle-ns=")
	t, err1 := strconv.ParseUint(tsc, 10, 64)
	n, err2 := strconv.ParseUint(idle, 10, 64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil {
		return PhaseMark{}, false
	}
	return PhaseMark{Phase: f[0], TSC: t, IdleNS: n}, true
}

func isPhase(name string) bool { return slices.Contains(Phases, name) }

// FormatPhases renders a boot's marks as the value of KeyPhases: each
// phase's guest clock in millions of ticks, with its idle share when there
// is one, then the total: "to-init 959.1M, set-up 7.1M, benchmarks 1250.2M
// (idle 580.0M), …; all 2218.3M (idle 580.0M)". Marks must come in the
// order the guest wrote them; a phase the boot skipped (no insight pass) is
// absent, and one whose mark is out of order is dropped.
func FormatPhases(marks []PhaseMark) string {
	var parts []string
	var prev PhaseMark
	for _, m := range marks {
		if m.TSC < prev.TSC || m.IdleNS < prev.IdleNS {
			continue
		}
		parts = append(parts, m.Phase+" "+millions(m.TSC-prev.TSC, m.IdleNS-prev.IdleNS))
		prev = m
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, ", ") + "; all " + millions(prev.TSC, prev.IdleNS)
}

func millions(ticks, idle uint64) string {
	return formatMillions(float64(ticks)/1e6, float64(idle)/1e6)
}

// formatMillions writes a count of millions and its idle part as
// KeyPhases does: "1250.2M (idle 580.0M)".
func formatMillions(m, idle float64) string {
	s := fmt.Sprintf("%.1fM", m)
	if idle > 0 {
		s += fmt.Sprintf(" (idle %.1fM)", idle)
	}
	return s
}

// PhaseCost is one phase of a boot as KeyPhases records it: the guest
// clock's ticks in it and the idle part of them, in millions.
type PhaseCost struct {
	Phase string  `json:"phase"`
	Ticks float64 `json:"mticks"`
	Idle  float64 `json:"midle,omitempty"`
	// Boots is, in a BootCost, how many boots had the phase (the insight
	// pass runs on one boot a side); zero elsewhere.
	Boots int `json:"boots,omitempty"`
}

// ParsePhases reads a value of KeyPhases (FormatPhases) back: the phases in
// order, then the total as a PhaseCost named "all". A value that is not
// FormatPhases' (a results file is untrusted input) is an error.
func ParsePhases(value string) ([]PhaseCost, error) {
	parts, total, ok := strings.Cut(value, "; all ")
	if !ok {
		return nil, fmt.Errorf("phases %q: no total (\"; all …\")", value)
	}
	var out []PhaseCost
	for _, p := range strings.Split(parts, ", ") {
		name, cost, ok := strings.Cut(p, " ")
		if !ok || !isPhase(name) {
			return nil, fmt.Errorf("phases %q: %q is not a phase and its cost", value, p)
		}
		c, err := parseMillions(cost)
		if err != nil {
			return nil, fmt.Errorf("phases %q: %w", value, err)
		}
		c.Phase = name
		out = append(out, c)
	}
	c, err := parseMillions(total)
	if err != nil {
		return nil, fmt.Errorf("phases %q: %w", value, err)
	}
	c.Phase = PhaseAll
	return append(out, c), nil
}

// PhaseAll names the total of a boot's phases in ParsePhases' result.
const PhaseAll = "all"

// parseMillions reads millions' output: "959.1M" or "1250.2M (idle 580.0M)".
func parseMillions(s string) (PhaseCost, error) {
	ticks, idle, hasIdle := strings.Cut(s, " (idle ")
	var c PhaseCost
	var err error
	if c.Ticks, err = parseM(ticks); err != nil {
		return c, err
	}
	if hasIdle {
		v, ok := strings.CutSuffix(idle, ")")
		if !ok {
			return c, fmt.Errorf("%q: idle part not closed", s)
		}
		if c.Idle, err = parseM(v); err != nil {
			return c, err
		}
	}
	return c, nil
}

func parseM(s string) (float64, error) {
	v, ok := strings.CutSuffix(s, "M")
	f, err := strconv.ParseFloat(v, 64)
	if !ok || err != nil || !(f >= 0 && f <= maxValue) { // NaN fails both
		return 0, fmt.Errorf("%q is not a count of millions", s)
	}
	return f, nil
}

// BootCost is what a side's boots cost, phase by phase: the median over
// its boots of each phase (KeyPhases), for the boots that recorded one.
// Its PhaseAll is the median of the boots' totals without the insight
// pass, which is its own phase.
type BootCost struct {
	Boots  int         `json:"boots"`
	Phases []PhaseCost `json:"phases"`
}

// String renders the cost as FormatPhases does, with the boots counted:
// "median of 2 boots: to-init 918.0M, …; all but insight 1061.2M".
func (c BootCost) String() string {
	var parts []string
	var total string
	for _, p := range c.Phases {
		s := formatMillions(p.Ticks, p.Idle)
		if p.Boots > 0 && p.Boots < c.Boots {
			s += fmt.Sprintf(" [%d of %d boots]", p.Boots, c.Boots)
		}
		if p.Phase == PhaseAll {
			total = "; all but insight " + s
			continue
		}
		parts = append(parts, p.Phase+" "+s)
	}
	what := "median of " + strconv.Itoa(c.Boots) + " boots"
	if c.Boots == 1 {
		what = "1 boot"
	}
	return what + ": " + strings.Join(parts, ", ") + total
}

// MarksText is a boot's marks as text to store (one ConsoleText a line),
// for a host that did not see the console to read back with ParseMarks.
func MarksText(marks []PhaseMark) string {
	lines := make([]string, len(marks))
	for i, m := range marks {
		lines[i] = m.ConsoleText()
	}
	return strings.Join(lines, "\n")
}

// ParseMarks reads MarksText back. The text is untrusted (a fleet
// worker's row): at most one mark a phase is read, and lines that are not
// marks are skipped.
func ParseMarks(text string) []PhaseMark {
	var marks []PhaseMark
	for _, line := range strings.SplitN(text, "\n", len(Phases)+1) {
		if m, ok := ParsePhaseMark(line); ok && len(marks) < len(Phases) {
			marks = append(marks, m)
		}
	}
	return marks
}

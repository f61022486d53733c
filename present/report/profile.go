package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/internal/words"
)

// profileSections are the guests' profiles, one section per benchmark:
// how many samples each side took, then the functions whose share of
// an operation changed most (in percentage points and in the unit per
// operation their share attributes), then the caller → callee pairs.
func profileSections(d *insight.Diff) []insightSection {
	var out []insightSection
	if pass := profilePassLines(d); len(pass) > 0 {
		out = append(out, insightSection{title: "Profile pass, after the timed samples of the first boot of each side", lines: pass})
	}
	for _, p := range d.Profiles {
		out = append(out, insightSection{title: "Profile of " + p.Benchmark + " (A → B)", lines: profileLines(&p)})
	}
	return out
}

// profilePassLines say what each side's pass was, and why a side has none.
func profilePassLines(d *insight.Diff) []string {
	var lines []string
	for _, s := range []struct {
		name string
		side *insight.Side
	}{{"A", d.A}, {"B", d.B}} {
		sum := s.side.ProfileSummary
		if sum == nil {
			continue
		}
		if sum.ExactProblem != "" {
			lines = append(lines, fmt.Sprintf("%s: %s", s.name, sum.ExactProblem))
		}
		if sum.Exact > 0 {
			lines = append(lines, fmt.Sprintf("%s: exact for %s: the memory plugin counted every instruction and call inside the timed windows, in the memory pass (%s instructions)",
				s.name, words.Plural(sum.Exact, "benchmark"), bigCount(sum.ExactCost)))
		}
		sampled := slices.ContainsFunc(s.side.Profiles, func(p insight.Profile) bool { return !p.Exact })
		switch {
		case sum.Event == "":
		case sum.Exact > 0 && !sampled && sum.Problem == "":
			// The plugin profiled every benchmark: the sampling pass had none.
		case sum.Problem != "":
			lines = append(lines, fmt.Sprintf("%s: no sampled profile: %s", s.name, sum.Problem))
		default:
			l := fmt.Sprintf("%s: %s every %d %s; the pass took %s %s", s.name, sum.Event, sum.Period, sum.Weight, bigCount(sum.Cost), sum.Weight)
			if sum.Limits != "" {
				l += " (" + sum.Limits + ")"
			}
			lines = append(lines, l)
		}
	}
	return lines
}

// bigCount says 317725750 as "317.7M".
func bigCount(n uint64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2fG", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// profileLines are one benchmark's profile diff as lines.
func profileLines(p *insight.ProfileDiff) []string {
	if p.Exact() {
		return exactProfileLines(p)
	}
	side := func(pr *insight.Profile) string {
		switch {
		case pr == nil:
			return "none"
		case pr.Exact:
			return fmt.Sprintf("exact, %s instructions counted", bigCount(pr.Insns))
		case pr.Problem != "" && pr.Samples == 0:
			return "none (" + pr.Problem + ")"
		}
		s := fmt.Sprintf("%d samples, %d lost", pr.Samples, pr.Lost)
		if pr.Dropped > 0 {
			s += fmt.Sprintf(", %d not stored", pr.Dropped)
		}
		return s
	}
	unit := p.PerOpUnit
	if unit == "" {
		unit = "/op"
		for _, pr := range []*insight.Profile{p.A, p.B} {
			if pr != nil && pr.Weight == "instructions" {
				unit = "insn/op"
			}
		}
	}
	split := "the pass's own clock per operation, its sampling included"
	if p.PerOpSource == "timed" {
		split = "the timed samples"
	}
	lines := []string{fmt.Sprintf("A %s; B %s", side(p.A), side(p.B))}
	for _, s := range []struct {
		name string
		pr   *insight.Profile
	}{{"A", p.A}, {"B", p.B}} {
		if s.pr != nil && s.pr.Unreliable != "" {
			lines = append(lines, fmt.Sprintf("%s is %s", s.name, s.pr.Unreliable))
		}
	}
	lines = append(lines, fmt.Sprintf("%s split by self share: %.2f → %.2f (%s)", unit, p.PerOpA, p.PerOpB, split))
	w := len("function")
	for _, r := range p.Rows {
		w = max(w, len(r.Function))
	}
	if len(p.Rows) > 0 {
		lines = append(lines, fmt.Sprintf("%-*s %7s %7s %8s %10s %10s", w, "function", "A", "B", "Δ pp", "A "+unit, "B "+unit))
	}
	for _, r := range p.Rows {
		lines = append(lines, fmt.Sprintf("%-*s %6.1f%% %6.1f%% %+8.1f %10.1f %10.1f", w, r.Function, 100*r.ShareA, 100*r.ShareB, r.DeltaPP, r.PerOpA, r.PerOpB))
	}
	for _, e := range p.Edges {
		lines = append(lines, fmt.Sprintf("calls %s → %s: %.1f%% → %.1f%%", e.Caller, e.Callee, 100*e.ShareA, 100*e.ShareB))
	}
	return lines
}

// exactProfileLines are an exact profile diff as lines: the instructions
// and entries (executions of the first instruction: calls, tail calls and
// jumps to it) per operation of the functions that changed most, the
// calls per operation by caller → callee, the mitigation code, and the
// control transfers.
func exactProfileLines(p *insight.ProfileDiff) []string {
	lines := []string{
		fmt.Sprintf("A exact, %d ops, %s instructions counted; B exact, %d ops, %s instructions counted", p.A.Ops, bigCount(p.A.Insns), p.B.Ops, bigCount(p.B.Insns)),
		fmt.Sprintf("insn/op counted by the plugin inside the timed windows: %.2f → %.2f", p.PerOpA, p.PerOpB),
	}
	w := len("function")
	for _, r := range p.Rows {
		w = max(w, len(r.Function))
	}
	if len(p.Rows) > 0 {
		lines = append(lines, fmt.Sprintf("%-*s %7s %7s %10s %10s %10s %10s", w, "function", "A", "B", "A insn/op", "B insn/op", "A entries", "B entries"))
	}
	for _, r := range p.Rows {
		lines = append(lines, fmt.Sprintf("%-*s %6.1f%% %6.1f%% %10.1f %10.1f %10s %10s", w, r.Function, 100*r.ShareA, 100*r.ShareB, r.PerOpA, r.PerOpB, insight.FormatPerOp(r.EntriesA), insight.FormatPerOp(r.EntriesB)))
	}
	for _, e := range p.Edges {
		lines = append(lines, fmt.Sprintf("calls %s → %s: %s → %s per op", e.Caller, e.Callee, insight.FormatPerOp(e.CallsA), insight.FormatPerOp(e.CallsB)))
	}
	if l := p.MitigationLine(0); l != "" {
		lines = append(lines, l)
	}
	if fa, fb := p.A.Flow, p.B.Flow; fa != nil && fb != nil {
		per := func(n uint64, ops uint64) string { return insight.FormatPerOp(float64(n) / float64(max(ops, 1))) }
		lines = append(lines, fmt.Sprintf("control transfers per op: calls %s → %s, indirect calls %s → %s, returns %s → %s, conditional jumps %s → %s (taken %s → %s), blocks interrupted %s → %s",
			per(fa.Call, p.A.Ops), per(fb.Call, p.B.Ops), per(fa.IndirectCall, p.A.Ops), per(fb.IndirectCall, p.B.Ops),
			per(fa.Ret, p.A.Ops), per(fb.Ret, p.B.Ops), per(fa.Jcc, p.A.Ops), per(fb.Jcc, p.B.Ops),
			per(fa.Taken, p.A.Ops), per(fb.Taken, p.B.Ops), per(fa.Diverted, p.A.Ops), per(fb.Diverted, p.B.Ops)))
	}
	return lines
}

// profileLineList is every profile line, for JSON.
func profileLineList(d *insight.Diff) []string {
	var out []string
	for _, sec := range profileSections(d) {
		out = append(out, sec.title+":")
		for _, l := range sec.lines {
			out = append(out, "  "+strings.TrimRight(l, " "))
		}
	}
	return out
}

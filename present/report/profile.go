package report

import (
	"fmt"
	"strings"

	"github.com/lpmbisect/lpmbisect/host/insight"
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
		if sum.Problem != "" {
			lines = append(lines, fmt.Sprintf("%s: no profile: %s", s.name, sum.Problem))
			continue
		}
		l := fmt.Sprintf("%s: %s every %d %s; the pass took %s %s", s.name, sum.Event, sum.Period, sum.Weight, bigCount(sum.Cost), sum.Weight)
		if sum.Limits != "" {
			l += " (" + sum.Limits + ")"
		}
		lines = append(lines, l)
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
	side := func(pr *insight.Profile) string {
		switch {
		case pr == nil:
			return "none"
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
	lines := []string{
		fmt.Sprintf("A %s; B %s", side(p.A), side(p.B)),
		fmt.Sprintf("%s split by self share: %.2f → %.2f (%s)", unit, p.PerOpA, p.PerOpB, split),
	}
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

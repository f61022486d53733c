package report

import (
	"fmt"
	"strings"

	"github.com/lpmbisect/lpmbisect/host/insight"
)

// memorySections are the memory pass's counts: what each side's pass was,
// then per benchmark the rows per operation A → B with their verdicts, and
// the functions with the most data misses (or why none are named).
func memorySections(d *insight.Diff) []insightSection {
	var pass []string
	for _, s := range []struct {
		name string
		side *insight.Side
	}{{"A", d.A}, {"B", d.B}} {
		sum := s.side.MemorySummary
		switch {
		case sum == nil:
			continue
		case sum.Model == "":
			pass = append(pass, fmt.Sprintf("%s: no memory counts: %s", s.name, sum.Problem))
			continue
		}
		l := fmt.Sprintf("%s: %s; the pass took %s instructions, %.1f s of host CPU instrumented (%.1f s wall)", s.name, sum.Model, bigCount(sum.Cost), sum.HostCPU.Seconds(), sum.HostWall.Seconds())
		if sum.Problem != "" {
			l += " (" + sum.Problem + ")"
		}
		pass = append(pass, l)
	}
	var out []insightSection
	if len(pass) > 0 {
		out = append(out, insightSection{title: "Memory pass, after the timed samples of the first boot of each side (QEMU plugin, LRU caches)", lines: pass})
	}
	for _, m := range d.Memory {
		out = append(out, insightSection{title: "Memory of " + m.Benchmark + " (A → B)", lines: memoryLines(&m)})
	}
	return out
}

// memoryLines are one benchmark's memory diff as lines.
func memoryLines(m *insight.MemoryDiff) []string {
	var lines []string
	for _, s := range []struct {
		name string
		m    *insight.Memory
	}{{"A", m.A}, {"B", m.B}} {
		switch {
		case s.m == nil:
			lines = append(lines, s.name+": not counted")
		case s.m.Problem != "":
			lines = append(lines, s.name+": "+s.m.Problem)
		}
	}
	if len(m.Rows) == 0 {
		return lines
	}
	lines = append(lines, fmt.Sprintf("%d → %d operations counted", m.A.Ops, m.B.Ops))
	lines = append(lines, fmt.Sprintf("%-15s %12s %12s %9s  %s", "metric", "A", "B", "Δ", "verdict"))
	for _, r := range m.Rows {
		lines = append(lines, fmt.Sprintf("%-15s %12.3f %12.3f %+8.2f%%  %s", r.Metric, r.A, r.B, r.DeltaPct, r.Verdict))
	}
	if len(m.Functions) == 0 {
		why := "not attributed"
		for _, side := range []*insight.Memory{m.A, m.B} {
			if side.Attribution != "" {
				why = side.Attribution
			}
		}
		return append(lines, "data misses per function: "+why)
	}
	lines = append(lines, fmt.Sprintf("%-30s %9s %9s %9s %9s %9s %9s", "misses/op by function", "L1D A", "L1D B", "LLC A", "LLC B", "dTLB A", "dTLB B"))
	for _, f := range m.Functions {
		lines = append(lines, fmt.Sprintf("%-30s %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f", f.Function, f.L1DA, f.L1DB, f.LLCA, f.LLCB, f.DTLBA, f.DTLBB))
	}
	return lines
}

// memoryLineList is every memory line, for JSON.
func memoryLineList(d *insight.Diff) []string {
	var out []string
	for _, sec := range memorySections(d) {
		out = append(out, sec.title+":")
		for _, l := range sec.lines {
			out = append(out, "  "+strings.TrimRight(l, " "))
		}
	}
	return out
}

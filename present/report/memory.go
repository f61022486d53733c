package report

import (
	"cmp"
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
		took := bigCount(sum.Cost) + " instructions"
		if sum.Idle > 0 {
			took = fmt.Sprintf("%s ns of guest clock, %s of it idle (its waits: under icount the clock skips them and runs no instruction; the kernel's idle time is counted in ticks)", bigCount(sum.Cost), bigCount(sum.Idle))
		}
		l := fmt.Sprintf("%s: %s; the pass took %s, %.1f s of host CPU instrumented (%.1f s wall)", s.name, sum.Model, took, sum.HostCPU.Seconds(), sum.HostWall.Seconds())
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
	lines = append(lines, cycleLines(m)...)
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

// cycleLines are the cycle model's lines of one benchmark's memory diff:
// the estimate's terms A → B (a model, said as such), and the deferred
// work with the functions it ran in.
func cycleLines(m *insight.MemoryDiff) []string {
	var lines []string
	if a, b := m.A.Cycles, m.B.Cycles; a != nil && b != nil {
		core := a.Core
		if b.Core != a.Core {
			core += " → " + b.Core
		}
		lines = append(lines, fmt.Sprintf("est-cycles/op, a model (not a measurement) on the %s core's latencies (docs/cycles.md): %.1f → %.1f; KCachegrind's formula on the same counts %.1f → %.1f",
			core, a.Total, b.Total, a.KCachegrind, b.KCachegrind))
		lines = append(lines, fmt.Sprintf("  %-36s %10s %10s", "term (cycles/op)", "A", "B"))
		for i, t := range a.Terms {
			if i < len(b.Terms) && b.Terms[i].Term == t.Term {
				lines = append(lines, fmt.Sprintf("  %-36s %10.1f %10.1f", t.Term, t.Cycles, b.Terms[i].Cycles))
			}
		}
		if a.Deferred != 0 || b.Deferred != 0 {
			lines = append(lines, fmt.Sprintf("  %-36s %10.1f %10.1f", "deferred work (all terms)", a.Deferred, b.Deferred))
		}
	}
	da, db := m.A.Deferred, m.B.Deferred
	switch {
	case da == nil || db == nil:
		return lines
	case da.Problem != "" || db.Problem != "":
		return append(lines, fmt.Sprintf("deferred work: A: %s; B: %s", cmp.Or(da.Problem, "counted"), cmp.Or(db.Problem, "counted")))
	}
	lines = append(lines, fmt.Sprintf("deferred work per op (the kernel outside the windows over %d → %d ops and a wait of %s → %s ns, less the wait alone): %.1f → %.1f instructions, %.2f → %.2f L1D misses, %.2f → %.2f mispredictions, %.2f → %.2f locked",
		da.Ops, db.Ops, bigCount(da.Wait), bigCount(db.Wait), da.Insns, db.Insns, da.L1D, db.L1D, da.Mispred, db.Mispred, da.Lock, db.Lock))
	rows := map[string][2]float64{}
	var names []string
	for side, fs := range [][]insight.DeferredFunction{da.Functions, db.Functions} {
		for _, f := range fs {
			r, seen := rows[f.Function]
			if !seen {
				names = append(names, f.Function)
			}
			r[side] = f.Insns
			rows[f.Function] = r
		}
	}
	if len(names) > 0 {
		lines = append(lines, fmt.Sprintf("  %-36s %10s %10s", "deferred insn/op by function", "A", "B"))
		for _, n := range names {
			lines = append(lines, fmt.Sprintf("  %-36s %10.1f %10.1f", n, rows[n][0], rows[n][1]))
		}
	}
	return lines
}

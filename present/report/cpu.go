package report

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/wire"
)

// notAffected is the kernel's line for a vulnerability the CPU does not
// have; the report lists the other lines.
const notAffected = "Not affected"

// cpuLines are the run lines of the CPU each side's boots ran on: the
// model QEMU emulated and its profile, the extra kernel parameters, the
// return thunk the kernel's returns go through, and the mitigations it
// chose (its vulnerabilities lines other than "Not affected"), once where
// the sides agree. A line whose label is "" continues the one above it.
func cpuLines(meta view.Meta) [][2]string {
	a, b := meta.CPU[0], meta.CPU[1]
	if a == nil && b == nil {
		return nil
	}
	var out [][2]string
	add := func(k string, of func(*view.SideCPU) string) {
		if v := bothSides(a, b, of); v != "" {
			out = append(out, [2]string{k, v})
		}
	}
	add("cpu", cpuModelLine)
	add("kernel args", func(c *view.SideCPU) string { return c.Append })
	add("returns", func(c *view.SideCPU) string {
		switch c.ReturnThunk {
		case "":
			return ""
		case "none":
			return "plain ret (no return thunk)"
		}
		return "through the return thunk of " + c.ReturnThunk
	})
	lines, total := mitigationLines(a, b)
	if len(lines) > 0 {
		out = append(out, [2]string{"mitigations", fmt.Sprintf("%d of the kernel's %d vulnerabilities lines are not %q:", len(lines), total, notAffected)})
		for _, l := range lines {
			out = append(out, [2]string{"", l})
		}
	}
	return out
}

// cpuModelLine describes a side's CPU: "zen2 (QEMU -cpu …)".
func cpuModelLine(c *view.SideCPU) string {
	if c.Model == "" {
		return ""
	}
	if c.Profile == "" {
		return "QEMU -cpu " + c.Model
	}
	return c.Profile + " (QEMU -cpu " + c.Model + ")"
}

// bothSides is of(a) when both sides say the same, else each side's,
// "A …; B …" ("-" for a side that says nothing).
func bothSides(a, b *view.SideCPU, of func(*view.SideCPU) string) string {
	va, vb := "", ""
	if a != nil {
		va = of(a)
	}
	if b != nil {
		vb = of(b)
	}
	switch {
	case va == vb:
		return va
	case va == "":
		va = "-"
	case vb == "":
		vb = "-"
	}
	return "A " + va + "; B " + vb
}

// mitigationLines lists, by name, the vulnerabilities lines of either side
// that are not "Not affected", "name: line", or "name: A: line — B: line"
// where the sides differ; total is how many vulnerabilities the kernels
// name.
func mitigationLines(a, b *view.SideCPU) (lines []string, total int) {
	var names []string
	text := [2]map[string]string{{}, {}}
	for i, c := range []*view.SideCPU{a, b} {
		if c == nil {
			continue
		}
		for _, v := range c.Vulnerabilities {
			if _, seen := text[0][v.Name]; !seen {
				if _, seen := text[1][v.Name]; !seen {
					names = append(names, v.Name)
				}
			}
			text[i][v.Name] = v.Text
		}
	}
	for _, n := range names {
		ta, tb := text[0][n], text[1][n]
		switch {
		case ta == notAffected && tb == notAffected:
		case a == nil:
			lines = append(lines, n+": "+tb)
		case b == nil || ta == tb:
			lines = append(lines, n+": "+ta)
		default:
			lines = append(lines, fmt.Sprintf("%s: A: %s — B: %s", n, cmp.Or(ta, "-"), cmp.Or(tb, "-")))
		}
	}
	return lines, len(names)
}

// sidesDiffer says what a comparison of one kernel image measures when its
// sides differ by something else (compare.Report.Differences): "THE SIDES
// DIFFER BY CPU, NOT BY KERNEL: …"; "" for a comparison of two kernels, or
// of one with itself.
func sidesDiffer(rep *compare.Report, meta view.Meta) string {
	if !rep.OneKernel || len(rep.Differences) == 0 {
		return ""
	}
	var what []string
	var sides [2][]string
	for _, d := range rep.Differences {
		for i, v := range []string{d.A, d.B} {
			switch d.Key {
			case wire.KeyCPUModel:
				desc := "-cpu " + v
				if c := meta.CPU[i]; c != nil && c.Profile != "" {
					desc = c.Profile + " (" + desc + ")"
				}
				sides[i] = append(sides[i], desc)
			case wire.KeyAppend:
				if v == "" {
					v = "no extra kernel parameters"
				}
				sides[i] = append(sides[i], v)
			default:
				sides[i] = append(sides[i], d.Key+" "+cmp.Or(v, "none"))
			}
		}
		what = append(what, differenceWords[d.Key])
	}
	kernel := rep.A.Kernel
	if kernel == "" {
		kernel = "one kernel image"
	}
	return fmt.Sprintf("THE SIDES DIFFER BY %s, NOT BY KERNEL: both boot %s, A with %s, B with %s. Every change below is what that difference costs this kernel.",
		strings.ToUpper(strings.Join(what, " and ")), kernel, strings.Join(sides[0], " and "), strings.Join(sides[1], " and "))
}

// differenceWords name the keys of compare.Difference in a sentence.
var differenceWords = map[string]string{wire.KeyCPUModel: "CPU", wire.KeyAppend: "kernel command line", wire.KeyQEMU: "QEMU version"}

// Package report renders a comparison (a *compare.Report) for people and
// programs: a terminal table with LKP-style headlines, Markdown for issues
// and mailing lists, JSON for tools, and a self-contained HTML page with one
// SVG plot per benchmark.
//
// Every format says the same things in the same order, because a maintainer
// reads the first lines and stops:
//
//  1. the outcome (no regression, regression, inconclusive) and why;
//  2. one headline per DIFFERENT benchmark ("…: -21.7% insn/op (better),
//     DIFFERENT, p=0.008, 4+4 boots"), then the UNKNOWN ones with the boots
//     a decision would need;
//  3. warnings that change how to read everything else: environment drift
//     (a control moved), no controls, instruction-count mode;
//  4. the table, per unit, with each side's centre and spread, the change,
//     p, boots and verdict;
//  5. the run: kernels with image hashes, accelerator, boots and looks, the
//     seed of the randomized boot order, α, minimum effect, command, date.
//
// A paired report (compare.Report.Paired: A's and B's boot of each round ran
// side by side and took their samples in turn) says so once, with
// pairedExplanation, and counts pairs wherever an unpaired one counts
// boots per side: "8 pairs" for "8+8 boots". Its change is the median change
// of the pairs (compare.Row.DeltaPct), not the distance between the sides'
// centres, which move with the host's state.
//
// The report does not decide anything: verdicts, drift and the outcome come
// from package compare, as data. Everything that puts them into words is
// here, once for every format: the table (WriteTable), the headlines
// (Headline, bootsLabel), the verdict rule (verdictRule), the explanations
// (instructionsExplanation, pairedExplanation) and the formats of
// percentages (formatPct); the formats of changes, p-values and centres,
// which the domain packages' own logs print too, are package view's
// (view.FormatDelta, view.FormatP, view.FormatValue). view.Meta carries what
// compare cannot know; the caller fills it.
package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"golang.org/x/perf/benchunit"

	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/internal/words"
	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Format is an output format of Write.
type Format string

const (
	FormatText     Format = "text"
	FormatMarkdown Format = "markdown"
	FormatJSON     Format = "json"
	FormatHTML     Format = "html"
	// FormatVeristat is veristat's compare CSV of the verifier rows
	// (writeVeristatCompare).
	FormatVeristat Format = "veristat"
	// FormatKCIDB is a KCIDB v4.4 submission (writeKCIDB).
	FormatKCIDB Format = "kcidb"
	// FormatGitHub is GitHub Actions annotations (writeGitHub).
	FormatGitHub Format = "github"
)

// ParseFormat parses a --format value: text, markdown (or md), json, html,
// veristat, kcidb, github.
func ParseFormat(s string) (Format, error) {
	switch Format(s) {
	case FormatText, FormatMarkdown, FormatJSON, FormatHTML, FormatVeristat, FormatKCIDB, FormatGitHub:
		return Format(s), nil
	case "md":
		return FormatMarkdown, nil
	}
	return "", fmt.Errorf("format %q is not text, markdown, json, html, veristat, kcidb or github", s)
}

// Write renders rep in format f.
func Write(w io.Writer, f Format, rep *compare.Report, meta view.Meta) error {
	switch f {
	case FormatText:
		return writePrintable(w, func(w io.Writer) error { return writeText(w, rep, meta) })
	case FormatMarkdown:
		return writePrintable(w, func(w io.Writer) error { return writeMarkdown(w, rep, meta) })
	case FormatJSON:
		return writeJSON(w, rep, meta)
	case FormatHTML:
		return WriteHTML(w, rep, meta)
	case FormatVeristat:
		return writeVeristatCompare(w, meta.Verifier, meta.Veristat)
	case FormatKCIDB:
		return writeKCIDB(w, rep, meta)
	case FormatGitHub:
		// The verifier's lines come from the guest: untrusted.
		return writePrintable(w, func(w io.Writer) error { return writeGitHub(w, rep, meta) })
	}
	return fmt.Errorf("report: unknown format %q (want text, markdown, json or html)", f)
}

// outcomeLine says the outcome and why: "NO REGRESSION (--fail-on
// regression): no benchmark is worse; 2 benchmarks better".
func outcomeLine(rep *compare.Report, failOn compare.FailOn) string {
	return fmt.Sprintf("%s (--fail-on %v): %s", strings.ToUpper(rep.Outcome(failOn).String()), failOn, outcomeReason(rep, failOn))
}

// outcomeReason says why the outcome is what it is.
func outcomeReason(rep *compare.Report, failOn compare.FailOn) string {
	out := rep.Outcome(failOn)
	different := func(r compare.Row) bool { return r.Verdict == compare.Different }
	switch {
	case rep.EnvironmentDrift:
		return "a control moved, so the environment or harness changed between A and B; no change is blamed on the kernel"
	case out == compare.Regression && failOn == compare.FailOnChange:
		return count(rep, different) + " DIFFERENT"
	case out == compare.Regression:
		return count(rep, compare.Row.Worse) + " DIFFERENT for the worse"
	case out == compare.Inconclusive && nonControls(rep) == 0:
		return "no benchmark other than the controls was compared"
	case out == compare.Inconclusive && rep.Paired:
		return count(rep, timedUnknown) + " UNKNOWN at the pairs taken"
	case out == compare.Inconclusive:
		return count(rep, timedUnknown) + " UNKNOWN at the boots taken"
	}
	reason := "every benchmark is SAME"
	if n := count(rep, different); n != "no benchmark" {
		reason = "no benchmark is worse; " + n + " better"
	}
	if n := count(rep, func(r compare.Row) bool { return r.Exact && r.Verdict == compare.Unknown }); n != "no benchmark" {
		reason += "; " + n + " UNKNOWN in a count taken once per side (final, not weighed)"
	}
	return reason
}

// timedUnknown is an UNKNOWN row that makes a comparison inconclusive:
// not an exact row's (compare.Row.Exact).
func timedUnknown(r compare.Row) bool { return r.Verdict == compare.Unknown && !r.Exact }

// count counts the benchmarks with a weighed row (compare.Row.Weighed)
// matching f (a benchmark once, whatever the number of its rows: insn/op
// and the memory pass's), as "1 benchmark", "2 benchmarks" or "no
// benchmark".
func count(rep *compare.Report, f func(compare.Row) bool) string {
	seen := map[string]bool{}
	for _, r := range rep.Rows {
		if r.Weighed() && f(r) {
			seen[r.Benchmark] = true
		}
	}
	n := len(seen)
	switch n {
	case 0:
		return "no benchmark"
	case 1:
		return "1 benchmark"
	}
	return fmt.Sprintf("%d benchmarks", n)
}

func nonControls(rep *compare.Report) int {
	n := 0
	for _, r := range rep.Rows {
		if r.Weighed() {
			n++
		}
	}
	return n
}

// headlines returns one line per DIFFERENT benchmark. Controls are not
// headlines: warnings says what their moves mean. in, when not nil, is the
// insight block: a benchmark's first line carries the mitigation code its
// exact profile counted per operation, A → B, beside the verdict.
func headlines(rep *compare.Report, in *insight.Diff) []string {
	var out []string
	said := map[string]bool{}
	for _, r := range rep.Rows {
		if r.Verdict == compare.Different && !r.Control {
			line := Headline(r)
			if !said[r.Benchmark] {
				said[r.Benchmark] = true
				if m := mitigationLine(in, r.Benchmark); m != "" {
					line += "; " + m
				}
			}
			out = append(out, line)
		}
	}
	return out
}

// mitigationLine is the mitigation code per operation of bench's exact
// profile, A → B ("" without one).
func mitigationLine(in *insight.Diff, bench string) string {
	if in == nil {
		return ""
	}
	for i := range in.Profiles {
		if in.Profiles[i].Benchmark == bench {
			return in.Profiles[i].MitigationLine(insight.HeadlineMitigationMin)
		}
	}
	return ""
}

// undecided returns one line per non-control UNKNOWN row: its change and
// what a decision would need (boots per side, or pairs).
func undecided(rep *compare.Report) []string {
	var out []string
	oneSided := map[string]int{} // benchmark → its line in out
	var units [][]string         // of each line, the units of a one-sided benchmark
	for _, r := range rep.Rows {
		if r.Control || r.Verdict != compare.Unknown {
			continue
		}
		line := Headline(r)
		if !r.Compared() {
			// Every unit of a benchmark measured on one side is: one
			// line, its units listed.
			if i, ok := oneSided[r.Benchmark]; ok {
				units[i] = append(units[i], r.Unit)
				continue
			}
			oneSided[r.Benchmark] = len(out)
		}
		units = append(units, []string{r.Unit})
		switch {
		case !r.Compared():
		case rep.EnvironmentDrift && r.Undecided():
			line += "; " + driftStop
		case wire.IsVerifierTime(r.Benchmark, r.Unit):
			line += "; the verifier's own time moves from load to load, so it holds no boots (its counts decide)"
		case floorTooClose(rep, r):
			line += fmt.Sprintf("; the calibrated floor ±%s is too close to the change to show it", pct(r.MinEffect))
		case r.BootsNeeded > compare.MaxBootsNeeded:
			line += fmt.Sprintf("; a verdict is out of reach (>%d %s at this spread, leaning %v)", compare.MaxBootsNeeded, compare.Units(r.Paired), r.NeedFor)
		case r.BootsNeeded > 0:
			line += fmt.Sprintf("; a verdict needs ~%d %s at this spread (leaning %v)", r.BootsNeeded, compare.Units(r.Paired), r.NeedFor)
		}
		out = append(out, line)
	}
	for _, i := range oneSided {
		out[i] += " (" + strings.Join(units[i], ", ") + ")"
	}
	return out
}

// driftStop says why an adaptive run took no more boots for an undecided
// row: the controls drifted (compare.Report.NeedMoreBoots), and no
// estimate of the boots a verdict needs is given, since the run did not
// take them.
const driftStop = "no more boots were taken: a control drifted, which more boots do not undo"

// warnings returns the paragraphs that change how to read the rest. in,
// when not nil, is the insight block, whose profiles name the kernel
// functions a moved control's harness cost is in.
func warnings(rep *compare.Report, in *insight.Diff) []string {
	var out []string
	var moved []string
	harnesses := map[string][]compare.Row{} // moved controls under instruction counts, by harness
	var order []string
	for _, r := range rep.Moved() {
		move := fmt.Sprintf("%s %s %s (%s, p=%s)", r.Benchmark, view.FormatDelta(r.DeltaPct), r.Unit, absChange(r), view.FormatP(r.P))
		switch {
		case r.HarnessChanged:
			h := compare.HarnessOf(r.Benchmark)
			if _, ok := harnesses[h]; !ok {
				order = append(order, h)
			}
			harnesses[h] = append(harnesses[h], r)
		case r.Drift:
			out = append(out, "ENVIRONMENT DRIFT: control "+move+" moved enough to explain a minimum-effect change of a benchmark. "+
				"The host, QEMU or the harness changed between the sides; no benchmark's change is attributed to the kernel. Re-run, ideally on a quieter host.")
		default:
			moved = append(moved, move)
		}
	}
	for _, h := range order {
		out = append(out, harnessParagraph(h, harnesses[h], in, changedWith(rep)))
	}
	if len(moved) > 0 {
		out = append(out, "Controls moved with the kernel: "+strings.Join(moved, "; ")+
			". The harness's cost inside the kernel (the BPF program and bpf_loop around the operation) changed, "+
			fmt.Sprintf("by less than %s of every benchmark: too little to explain a verdict. The benchmarks' changes include it.", pct(rep.MinEffect)))
	}
	if !rep.HasControls() {
		out = append(out, "No control benchmark (noop, baseline) was compared: environment drift cannot be told apart from a kernel change.")
	}
	if rep.Instructions() {
		out = append(out, instructionsExplanation)
	}
	return out
}

// changedWith is what a comparison's sides differ by, in words: "kernel",
// or for one kernel on two set-ups (compare.Report.Differences) "CPU",
// "kernel command line" or "QEMU version".
func changedWith(rep *compare.Report) string {
	if !rep.OneKernel || len(rep.Differences) == 0 {
		return "kernel"
	}
	var w []string
	for _, d := range rep.Differences {
		w = append(w, differenceWords[d.Key])
	}
	return strings.Join(w, " and ")
}

// harnessParagraph says, for the controls of one harness that moved under
// instruction counts (compare.Row.HarnessChanged), what moved and by how
// much, what it means for the benchmarks of that harness, and which kernel
// functions the profile puts the change in, when it profiled a control.
func harnessParagraph(harness string, controls []compare.Row, in *insight.Diff, with string) string {
	var moves []string
	for _, r := range controls {
		moves = append(moves, fmt.Sprintf("%s %s %s (%s)", r.Benchmark, view.FormatDelta(r.DeltaPct), r.Unit, absChange(r)))
	}
	s := "HARNESS CHANGED WITH THE " + strings.ToUpper(with) + ": " + strings.Join(moves, "; ") + ". "
	if prog, ok := wire.WorkloadOf(harness); ok {
		s += fmt.Sprintf("The kernel's cost of running %s (BPF_PROG_TEST_RUN's loop and context reset around it) changed. "+
			"%s includes it; %s is the program's own work without it, judged on its own line.", prog, wire.WorkloadBench(prog), wire.WorkloadOwn(prog))
	} else {
		s += "The kernel's cost of the harness around the map operations (the BPF program and bpf_loop) changed; the benchmarks' changes include it."
	}
	s += " Instruction counts do not depend on the host: this is the " + with + ", not drift, and re-running gives the same numbers."
	if fns := profiledFunctions(controls, in); fns != "" {
		s += " In the profile: " + fns + "."
	}
	return s
}

// profiledFunctions names the functions whose share of a control's
// operation changed most in the insight block's profile of it (at most
// three per control), "" when the block has no profile of these controls.
func profiledFunctions(controls []compare.Row, in *insight.Diff) string {
	if in == nil {
		return ""
	}
	var out []string
	for _, r := range controls {
		for _, p := range in.Profiles {
			if p.Benchmark != r.Benchmark || len(p.Rows) == 0 {
				continue
			}
			var fns []string
			for _, f := range p.Rows[:min(3, len(p.Rows))] {
				fns = append(fns, fmt.Sprintf("%s %.1f → %.1f", f.Function, f.PerOpA, f.PerOpB))
			}
			unit := cmp.Or(p.PerOpUnit, r.Unit)
			out = append(out, fmt.Sprintf("%s: %s %s", r.Benchmark, strings.Join(fns, ", "), unit))
		}
	}
	return strings.Join(out, "; ")
}

// absChange formats the change from A to B in the row's unit, with its SI
// prefix: "+2.000 insn/op", "+3.1n sec/op". Unpaired, it is B's centre minus
// A's. Paired, it is A's centre times the row's change (the median change
// of the pairs): the sides' centres move with the host's state, which the
// pairs cancel, so their difference is not the change that was tested.
func absChange(r compare.Row) string {
	d := r.B.Center - r.A.Center
	if r.Paired {
		d = r.A.Center * r.DeltaPct / 100
	}
	sign := "+"
	if d < 0 {
		sign = "-"
	}
	return sign + benchunit.Scale(math.Abs(d), benchunit.ClassOf(r.Unit)) + " " + r.Unit
}

// boots describes the boots per side and the looks, e.g. "6+6 boots, looks
// at 4, 6 of at most 12 per side", or for a paired report "10 pairs (A and B
// side by side, steps in turn), looks at 6, 7 of at most 10 pairs".
func boots(rep *compare.Report) string {
	if rep.Paired {
		return pairs(rep)
	}
	a, b := 0, 0
	for _, r := range rep.Rows {
		a, b = max(a, r.A.Boots), max(b, r.B.Boots)
	}
	s := fmt.Sprintf("%d+%d boots", a, b)
	if l := rep.Look; l.MaxBoots > 0 {
		s += fmt.Sprintf(", looks at %s of at most %d per side", joinInts(l.History), l.MaxBoots)
	}
	return s
}

// pairs is boots for a paired report. It counts the complete pairs of the
// row with most of them, and says how many more pairs lack a side's boot.
func pairs(rep *compare.Report) string {
	complete := 0
	seen := map[string]bool{}
	for _, r := range rep.Rows {
		complete = max(complete, r.Pairs)
		for _, s := range []compare.Summary{r.A, r.B} {
			for _, b := range s.PerBoot {
				seen[b.Pair] = true
			}
		}
	}
	s := fmt.Sprintf("%d pairs", complete)
	if extra := len(seen) - complete; extra > 0 {
		s += fmt.Sprintf(" and %d incomplete", extra)
	}
	s += " (A and B side by side, steps in turn)"
	if l := rep.Look; l.MaxBoots > 0 {
		s += fmt.Sprintf(", looks at %s of at most %d pairs", joinInts(l.History), l.MaxBoots)
	}
	return s
}

func joinInts(vs []int) string {
	s := ""
	for i, v := range vs {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprint(v)
	}
	return s
}

// kernelLine describes a side's kernel: "6.1.0-57-cloud-amd64, image
// sha256 fe69a84e207e, from linux-image-….deb".
func kernelLine(side compare.SideInfo, k view.KernelInfo) string {
	s := side.Kernel
	if s == "" {
		s = k.Release
	}
	if k.SHA256 != "" {
		s += ", image sha256 " + words.ShortHash(k.SHA256)
	}
	if k.Input != "" {
		s += ", from " + k.Input
	}
	return s
}

// runLines lists the run's parameters as label, value pairs.
func runLines(rep *compare.Report, meta view.Meta) [][2]string {
	var out [][2]string
	add := func(k, v string) {
		if v != "" {
			out = append(out, [2]string{k, v})
		}
	}
	add("kernel A", kernelLine(rep.A, meta.A))
	add("kernel B", kernelLine(rep.B, meta.B))
	add("accelerator", meta.Accel)
	bootsLine := boots(rep)
	if meta.Samples > 0 {
		bootsLine += fmt.Sprintf(", %d samples per benchmark per boot", meta.Samples)
	}
	if meta.FailedBoots > 0 {
		bootsLine += fmt.Sprintf(", %d failed boots left out", meta.FailedBoots)
	}
	add("boots", bootsLine)
	for i, c := range meta.BootCost {
		if c != nil {
			add("boot cost "+string("AB"[i]), c.String()+" guest ticks")
		}
	}
	switch {
	case meta.Seed != nil && rep.Paired:
		add("step order", fmt.Sprintf("A/B order of each step randomized, seed %d", *meta.Seed))
	case meta.Seed != nil:
		add("boot order", fmt.Sprintf("A/B interleaved in randomized order, seed %d", *meta.Seed))
	}
	add("statistics", fmt.Sprintf("α=%v family-wise over rows and looks, minimum effect %s, %s confidence intervals",
		rep.Alpha, pct(rep.MinEffect), pct(rep.Confidence)))
	add("command", meta.Command)
	if !meta.Date.IsZero() {
		add("date", meta.Date.UTC().Format(time.RFC3339))
	}
	add("host", meta.Host)
	out = append(out, cpuLines(meta)...)
	if f := meta.ResultsFile; f != "" {
		add("raw results", fmt.Sprintf("%s (%s)", f, BenchstatCommand(rep, meta.Accel, f)))
	}
	return out
}

// BenchstatCommand is the benchstat command line that compares the two
// sides of rep, measured under accel, from the results file f: benchstat
// puts the results of each combination of configuration keys in a table of
// its own, so every key that is no dimension of a benchmark is ignored:
// those of a boot (its side, number, image, pair and phases) and those of
// a single result (wire.ResultKeys, which the verifier rows' loads carry:
// a program one boot's verifier rejects would have its samples split).
// Reports and the CLI's log give it with the results file.
func BenchstatCommand(rep *compare.Report, accel, f string) string {
	var extra []string
	if slices.ContainsFunc(rep.Rows, func(r compare.Row) bool { return strings.HasPrefix(r.Benchmark, wire.VerifierPrefix) }) {
		extra = wire.ResultKeys
	}
	for _, d := range rep.Differences { // one kernel on two set-ups
		extra = append(extra, d.Key)
	}
	if len(rep.Differences) > 0 {
		extra = append(extra, wire.KeyParams)
	}
	return benchstatCommand(rep.A.Kernel == rep.B.Kernel, rep.Paired, accel, f, extra...)
}

// benchstatCommand is BenchstatCommand for results whose two sides boot
// one kernel (sameKernel) or two, paired or not; extra are the keys of
// single results and those whose values differ between the sides besides
// the kernel's. Every kernel says its own vulnerabilities lines.
func benchstatCommand(sameKernel, paired bool, accel, f string, extra ...string) string {
	col, ignore := wire.KeyKernel, []string{wire.KeySide, wire.KeyBoot, wire.KeyImage}
	if sameKernel {
		col, ignore = wire.KeySide, []string{wire.KeyBoot, wire.KeyImage} // one kernel on both sides
	}
	if paired {
		ignore = append(ignore, wire.KeyPair)
	}
	if wire.Accel(accel).CountsInstructions() {
		ignore = append(ignore, wire.KeyPhases) // each boot's own
	}
	ignore = append(append(ignore, wire.KeyVulnerabilities), extra...)
	return fmt.Sprintf("benchstat -col %s -ignore %s %s", col, strings.Join(ignore, ","), f)
}

package report

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/internal/shellquote"
	"github.com/lpmbisect/lpmbisect/internal/words"
	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// ackCommand and muteCommand are the command lines that acknowledge a
// change point (seen; it stays in the history as such) or mute it (it
// mails no more), for the configuration file config.
func ackCommand(config string, id int64) string {
	return shellquote.Join([]string{"lpmbisect", "history", "ack", "--config", config, fmt.Sprint(id)})
}

// muteCommand: see ackCommand.
func muteCommand(config string, id int64) string {
	return shellquote.Join([]string{"lpmbisect", "history", "ack", "--mute", "--config", config, fmt.Sprint(id)})
}

// mailLead returns the change point that leads the mail m: the first of the
// kernel line that is worse, else the first that is not a control's, else
// the first.
func mailLead(m view.Mail) history.ChangePoint {
	for _, cp := range m.Changes {
		if cp.Line == history.LineKernel && changeDirection(cp) == "worse" {
			return cp
		}
	}
	for _, cp := range m.Changes {
		if !compare.IsControl(cp.Benchmark, nil) {
			return cp
		}
	}
	return m.Changes[0]
}

// kernelChanges reports whether any change point of m is of the kernel
// line.
func kernelChanges(m view.Mail) bool {
	return slices.ContainsFunc(m.Changes, func(cp history.ChangePoint) bool { return cp.Line != history.LineHost })
}

// changeWord names a change point's kind in a subject line, as LKP does:
// "regression", "improvement", or for a control "control moved".
func changeWord(cp history.ChangePoint) string {
	switch d := changeDirection(cp); d {
	case "worse":
		return "regression"
	case "better":
		return "improvement"
	default:
		return d
	}
}

// MailSubject suggests a subject line, in the style of the kernel test
// robot's: "[lpmbisect] bpf-next: 9d8c7b6a5f4e: LPMTrie/op=lookup/…:
// +7.23% insn/op regression", the commit being the culprit if the
// bisection found it, else the range; "and N more" counts the other change
// points of the mail.
func MailSubject(m view.Mail) string {
	if len(m.Changes) == 0 {
		return fmt.Sprintf("[lpmbisect] %s: no change point", m.Series.Name)
	}
	cp := mailLead(m)
	where := words.ShortHash(cp.BeforeCommit) + ".." + words.ShortHash(cp.AfterCommit)
	switch {
	case cp.Line == history.LineHost:
		where = "host or harness changed on " + cp.Night
	case cp.Bisect.State == history.BisectFound:
		where = words.ShortHash(cp.Bisect.Culprit)
	case cp.BeforeCommit == "" && cp.AfterCommit == "":
		where = "night " + cp.Night
	}
	s := fmt.Sprintf("[lpmbisect] %s: %s: %s %s %s %s", m.Series.Name, where, cp.Benchmark, view.FormatDelta(cp.DeltaPct), unitName(cp.Unit), changeWord(cp))
	if len(m.Changes) > 1 {
		s += fmt.Sprintf(" and %d more", len(m.Changes)-1)
	}
	return s
}

// WriteChangePointMail writes a mail body in Markdown for new change
// points, in the manner of the kernel test robot's reports, for a
// maintainer who reads it as plain text on a list: the subject line to
// use, one headline per change point, what moved between which nights and
// commits, the culprit or what became of the bisection, the table of every
// benchmark on the two nights (the tip and the reference beside it), the
// measuring setup, the exact command that reproduces the step, and the
// commands that acknowledge or mute each change point. It links nowhere:
// everything needed is in the mail.
func WriteChangePointMail(w io.Writer, m view.Mail) error {
	return writePrintable(w, func(w io.Writer) error { return writeChangePointMail(w, m) })
}

func writeChangePointMail(w io.Writer, m view.Mail) error {
	if len(m.Changes) == 0 {
		return fmt.Errorf("report: change-point mail of series %s: no change point to tell", m.Series.Name)
	}
	bw := bufio.NewWriter(w)
	lead := mailLead(m)
	fmt.Fprintf(bw, "Subject: %s\n\n", MailSubject(m))
	for _, cp := range m.Changes {
		fmt.Fprintf(bw, "**%s**  \n", mdEscape(changePointHeadline(m.Series.Name, cp)))
	}
	fmt.Fprintln(bw)

	// What happened, in a sentence.
	s := m.Series
	what := fmt.Sprintf("lpmbisect nightly found a %s %s of %s (%s) in %s (%s) between the nights of %s and %s.",
		view.FormatDelta(lead.DeltaPct), changeWord(lead), "`"+mdCode(lead.Benchmark)+"`", unitName(lead.Unit), mdEscape(s.Name),
		mdEscape(seriesSource(history.Series{Kind: s.Kind, Source: s.Source, Branch: s.Branch})), cmp.Or(lead.BeforeNight, "?"), lead.Night)
	if lead.Line == history.LineHost {
		what = fmt.Sprintf("lpmbisect nightly found that the reference kernel of %s moved by %s in %s (%s) between the nights of %s and %s. "+
			"The reference did not change, so the host, QEMU or the harness did: no kernel commit is blamed.",
			mdEscape(s.Name), view.FormatDelta(lead.DeltaPct), "`"+mdCode(lead.Benchmark)+"`", unitName(lead.Unit), cmp.Or(lead.BeforeNight, "?"), lead.Night)
	}
	fmt.Fprintln(bw, wrap(what, 78, ""))
	if n := len(m.Changes) - 1; n > 0 {
		fmt.Fprintf(bw, "\n%s moved on the same night (above).\n", countOf(n, "other change point"))
	}

	// The commits, LKP style.
	fmt.Fprintf(bw, "\n```\n")
	kv := func(k, v string) {
		if v != "" {
			fmt.Fprintf(bw, "%-10s %s\n", k+":", v)
		}
	}
	if lead.Line != history.LineHost && lead.Bisect.State == history.BisectFound {
		kv("commit", quotedCommit(lead.Bisect.Culprit, lead.Bisect.Subject)+"  (first bad commit, bisected)")
	}
	kv("before", nightLine(m.Before, cmp.Or(lead.BeforeNight, m.Before.Date)))
	kv("after", nightLine(m.After, cmp.Or(lead.Night, m.After.Date)))
	if lead.BeforeCommit != "" && lead.AfterCommit != "" {
		kv("range", lead.BeforeCommit+".."+lead.AfterCommit)
	}
	kv("reference", referenceLine(s, m.After))
	fmt.Fprintf(bw, "```\n")

	writeMailOutcome(bw, m)
	writeMailTable(bw, m)
	writeMailExcursions(bw, m)
	writeMailSetup(bw, m)
	if m.Insight != nil {
		fmt.Fprintln(bw)
		if err := writeInsightMarkdown(bw, m.Insight); err != nil {
			return err
		}
	}

	if r := m.Reproduce; r.Before != "" && r.After != "" {
		fmt.Fprintf(bw, "\n### Reproduce\n\n```\n%s\n```\n", r.Command())
		fmt.Fprintf(bw, "\n%s\n", wrap("The two kernels are the nights' tips as they were built then; "+
			"compare boots them interleaved, with the controls, and says SAME, DIFFERENT or UNKNOWN per benchmark.", 78, ""))
	} else if lead.Line == history.LineHost && !kernelChanges(m) {
		fmt.Fprintf(bw, "\n### Reproduce\n\n%s\n", wrap("No two kernels show this step: the same reference kernel measured differently on the two nights. "+
			"Check what changed on the host between them (QEMU, the CPU model, lpmbisect itself, the load).", 78, ""))
	}

	fmt.Fprintf(bw, "\n### Acknowledge or mute\n\n```\n")
	var cmds [][]string
	for _, cp := range m.Changes {
		cmds = append(cmds, []string{ackCommand(cmp.Or(m.Config, "FILE"), cp.ID), "# seen: kept in the history as acknowledged"},
			[]string{muteCommand(cmp.Or(m.Config, "FILE"), cp.ID), fmt.Sprintf("# no more mail about #%d", cp.ID)})
	}
	for _, line := range padCells(cmds) {
		fmt.Fprintln(bw, line)
	}
	fmt.Fprintf(bw, "```\n")
	if slices.ContainsFunc(m.Changes, func(cp history.ChangePoint) bool { return cp.Unit == compare.UnitInstructions }) {
		fmt.Fprintf(bw, "\n%s\n", wrap("About insn/op: "+instructionsExplanation, 78, ""))
	}
	fmt.Fprintf(bw, "\n-- \nlpmbisect nightly%s\n", mailSignature(m.After))
	return bw.Flush()
}

// quotedCommit is a commit as the kernel's Fixes: tags write it:
// 9d8c7b6a5f4e ("subject").
func quotedCommit(commit, subject string) string {
	s := cmp.Or(words.ShortHash(commit), "?")
	if subject != "" {
		s += ` ("` + subject + `")`
	}
	return s
}

// nightLine describes a night's tip for the mail: "2026-11-07, 0a1b2c3d4e5f
// ("subject"), 6.12.107+deb12-cloud-amd64".
func nightLine(n history.Night, date string) string {
	parts := []string{date}
	switch {
	case n.Tip.Commit != "":
		parts = append(parts, quotedCommit(n.Tip.Commit, n.Tip.Subject))
	case n.Tip.ImageSHA256 != "":
		parts = append(parts, "image sha256 "+words.ShortHash(n.Tip.ImageSHA256))
	}
	if n.Tip.Release != "" {
		parts = append(parts, n.Tip.Release)
	}
	return strings.Join(parts, ", ")
}

// referenceLine names the series' reference kernel as the night measured it.
func referenceLine(s history.Series, n history.Night) string {
	parts := []string{}
	if s.Reference != "" {
		parts = append(parts, s.Reference)
	}
	if n.Reference.Release != "" {
		parts = append(parts, n.Reference.Release)
	}
	if n.Reference.ImageSHA256 != "" {
		parts = append(parts, "image sha256 "+words.ShortHash(n.Reference.ImageSHA256))
	}
	s2 := strings.Join(parts, ", ")
	if s2 != "" {
		s2 += " (booted beside every tip)"
	}
	return s2
}

// writeMailOutcome says what the bisection of each change point found, or
// why there was none.
func writeMailOutcome(w io.Writer, m view.Mail) {
	fmt.Fprintf(w, "\n### Culprit\n\n")
	var lines []string
	ids := map[string][]string{} // the change points each line is about
	for _, cp := range m.Changes {
		var line string
		b := cp.Bisect
		switch {
		case cp.Line == history.LineHost:
			line = "No kernel commit: the reference kernel moved, so the host or the harness changed."
			if m.After.Note != "" {
				line += " The night's note: " + mdEscape(m.After.Note)
			}
		case b.State == history.BisectFound:
			line = fmt.Sprintf("First bad commit, found by the automatic bisection of %s..%s: `%s`.", words.ShortHash(cp.BeforeCommit), words.ShortHash(cp.AfterCommit),
				mdCode(quotedCommit(b.Culprit, b.Subject)))
		case b.State == history.BisectRunning:
			line = "The automatic bisection is running; `lpmbisect history` shows its culprit when it ends."
		case b.State == history.BisectFailed:
			line = "The automatic bisection failed: " + mdEscape(cmp.Or(b.Reason, "no reason recorded")) + ". The culprit is in the range above."
		case b.State == history.BisectSkipped:
			line = "Not bisected: " + mdEscape(cmp.Or(b.Reason, "no reason recorded")) + "."
		default:
			line = "Not bisected yet. The culprit is in the range above."
		}
		if _, ok := ids[line]; !ok {
			lines = append(lines, line)
		}
		ids[line] = append(ids[line], fmt.Sprintf("#%d", cp.ID))
	}
	for _, line := range lines {
		if len(lines) > 1 {
			line = strings.Join(ids[line], ", ") + ": " + line
		}
		fmt.Fprintln(w, wrap(line, 78, "")+"  ")
	}
	var provisional []string
	for _, cp := range m.Changes {
		if cp.Provisional {
			provisional = append(provisional, fmt.Sprintf("#%d", cp.ID))
		}
	}
	switch len(provisional) {
	case 0:
	case 1:
		fmt.Fprintf(w, "\n%s\n", wrap(provisional[0]+" is provisional: too few nights follow it yet, and the next ones may withdraw it.", 78, ""))
	default:
		fmt.Fprintf(w, "\n%s\n", wrap(strings.Join(provisional, ", ")+" are provisional: too few nights follow them yet, and the next ones may withdraw them.", 78, ""))
	}
}

// writeMailTable writes every benchmark on the two nights: the tips, the
// change and the night's verdict against the previous tip, and the
// reference beside each.
func writeMailTable(w io.Writer, m view.Mail) {
	if len(m.BeforeRows) == 0 && len(m.AfterRows) == 0 {
		return
	}
	before, after := cmp.Or(m.Before.Date, mailLead(m).BeforeNight, "before"), cmp.Or(m.After.Date, mailLead(m).Night, "after")
	fmt.Fprintf(w, "\n### Benchmarks\n\n")
	fmt.Fprintf(w, "| benchmark | %s | %s | change | verdict | reference %s → %s |\n", before, after, before, after)
	fmt.Fprintf(w, "|---|--:|--:|--:|---|--:|\n")
	var metrics []history.Metric
	rowOf := func(rows []history.NightRow, m history.Metric) (history.NightRow, bool) {
		i := slices.IndexFunc(rows, func(r history.NightRow) bool { return r.Metric == m })
		if i < 0 {
			return history.NightRow{}, false
		}
		return rows[i], true
	}
	for _, r := range append(slices.Clone(m.BeforeRows), m.AfterRows...) {
		if !slices.Contains(metrics, r.Metric) {
			metrics = append(metrics, r.Metric)
		}
	}
	slices.SortFunc(metrics, func(a, b history.Metric) int {
		return cmp.Or(cmp.Compare(a.Benchmark, b.Benchmark), cmp.Compare(a.Unit, b.Unit))
	})
	for _, met := range metrics {
		b, okB := rowOf(m.BeforeRows, met)
		a, okA := rowOf(m.AfterRows, met)
		value := func(r history.NightRow, ok bool) string {
			if !ok || math.IsNaN(r.Tip.Center) {
				return "–"
			}
			s := view.FormatValue(r.Tip.Center, met.Unit)
			if ci := intervalPct(r.Tip); ci != "" {
				s += " ±" + ci
			}
			return s
		}
		change, verdict := "–", "–"
		switch {
		case okA && a.VsPrevious != nil:
			change = view.FormatDelta(a.VsPrevious.DeltaPct)
			verdict = a.VsPrevious.Verdict.String()
			if a.VsPrevious.Verdict == compare.Different {
				verdict = "**" + verdict + "**"
				if compare.IsControl(met.Benchmark, nil) {
					verdict += " (control moved)"
				} else {
					verdict += " (" + direction(met.Unit, a.VsPrevious.DeltaPct) + ")"
				}
			}
			verdict += ", p=" + view.FormatP(a.VsPrevious.P)
		case okA && okB && b.Tip.Center != 0:
			change = view.FormatDelta(100 * (a.Tip.Center/b.Tip.Center - 1))
		}
		ref := "–"
		if okA && okB && b.Reference.Center > 0 {
			ref = fmt.Sprintf("%s → %s (%s)", bareValue(b.Reference, met.Unit), formatEstimate(a.Reference, met.Unit),
				view.FormatDelta(100*(a.Reference.Center/b.Reference.Center-1)))
		}
		name := "`" + mdCellCode(met.Benchmark) + "`"
		if compare.IsControl(met.Benchmark, nil) {
			name += " (control)"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", name, mdEscape(value(b, okB)), mdEscape(value(a, okA)), change, verdict, mdEscape(ref))
	}
	boots := 0
	for _, r := range m.AfterRows {
		boots = max(boots, r.Tip.Boots)
	}
	note := "Each value is the median of the night's per-boot medians ± its confidence interval; change and verdict compare the tip with the previous night's, with compare's statistics; the reference kernel was booted beside the tip, interleaved, on both nights."
	if boots > 0 {
		note = fmt.Sprintf("Each value is the median of the night's %d per-boot medians ± its confidence interval; change and verdict compare the tip with the previous night's, with compare's statistics; the reference kernel was booted beside the tip, interleaved, on both nights.", boots)
	}
	fmt.Fprintf(w, "\n%s\n", wrap(note, 78, ""))
}

// intervalPct is an estimate's interval in % of its centre (the larger
// side), "" if it has none.
func intervalPct(e history.Estimate) string {
	if e.Center == 0 || math.IsNaN(e.Center) || math.IsInf(e.Lo, 0) || math.IsInf(e.Hi, 0) || math.IsNaN(e.Lo) || math.IsNaN(e.Hi) {
		return ""
	}
	return formatPct(100 * math.Max(e.Center-e.Lo, e.Hi-e.Center) / math.Abs(e.Center))
}

// writeMailSetup writes how the nights were measured: what changed between
// them matters most (a compiler, a QEMU version).
func writeMailSetup(w io.Writer, m view.Mail) {
	var lines []string
	add := func(k, before, after string) {
		switch {
		case after == "" && before == "":
		case before == "" || before == after:
			lines = append(lines, fmt.Sprintf("%-10s %s", k+":", after))
		default:
			lines = append(lines, fmt.Sprintf("%-10s %s → %s (changed)", k+":", before, after))
		}
	}
	b, a := m.Before, m.After
	add("accel", b.Accel, a.Accel)
	add("qemu", b.QEMUVersion, a.QEMUVersion)
	add("cpu model", b.CPUModel, a.CPUModel)
	add("host", b.Host, a.Host)
	add("compiler", b.Tip.Compiler, a.Tip.Compiler)
	add("config", words.ShortHash(b.Tip.ConfigHash), words.ShortHash(a.Tip.ConfigHash))
	add("lpmbisect", b.ToolVersion, a.ToolVersion)
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### Setup\n\n```\n%s\n```\n", strings.Join(lines, "\n"))
	if a.Note != "" && kernelChanges(m) {
		fmt.Fprintf(w, "\n%s\n", wrap("Note of "+a.Date+": "+mdEscape(a.Note), 78, ""))
	}
}

func mailSignature(n history.Night) string {
	var parts []string
	if n.ToolVersion != "" {
		parts = append(parts, n.ToolVersion)
	}
	if n.Host != "" {
		parts = append(parts, "on "+n.Host)
	}
	if len(parts) == 0 {
		return ""
	}
	return " " + strings.Join(parts, " ")
}

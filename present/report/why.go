package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/lpmbisect/lpmbisect/host/insight"
)

// insightTitle heads the insight block in every format.
const insightTitle = "Why it changed"

// writeInsightText writes the insight block for a terminal: where each
// side's symbols come from, the size table in scripts/bloat-o-meter's own
// format, then one line per change in the calls of the functions of
// interest. A nil d writes nothing.
func writeInsightText(w io.Writer, d *insight.Diff) error {
	if d == nil {
		return nil
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s\n", insightTitle)
	fmt.Fprintf(bw, "A: %s\nB: %s\n", sideLine(d.A), sideLine(d.B))
	for _, n := range d.Notes {
		fmt.Fprintln(bw, wrap(n, 100, "  "))
	}
	if d.Sizes != nil {
		fmt.Fprintln(bw)
		if err := insight.WriteBloatOMeter(bw, d.Sizes, "Function"); err != nil {
			return err
		}
	}
	if calls := callLines(d); len(calls) > 0 {
		fmt.Fprintln(bw)
		for _, l := range calls {
			fmt.Fprintln(bw, l)
		}
	}
	for _, sec := range guestSections(d) {
		fmt.Fprintf(bw, "\n%s:\n", sec.title)
		for _, l := range sec.lines {
			fmt.Fprintln(bw, "  "+l)
		}
	}
	return bw.Flush()
}

// insightSection is a titled list of lines of the insight block.
type insightSection struct {
	title string
	lines []string
}

// guestSections are what the guests' insight passes reported: the
// benchmark programs and the calls counted per operation.
func guestSections(d *insight.Diff) []insightSection {
	var out []insightSection
	if len(d.Programs) > 0 {
		sec := insightSection{title: "BPF programs (A → B)"}
		for _, p := range d.Programs {
			sec.lines = append(sec.lines, p.Line)
		}
		out = append(out, sec)
	}
	if len(d.Counts) > 0 {
		sec := insightSection{title: "Calls per operation, counted in a pass after the timed samples (A → B)"}
		for _, c := range d.Counts {
			sec.lines = append(sec.lines, c.Line)
		}
		out = append(out, sec)
	}
	out = append(out, profileSections(d)...)
	return append(out, memorySections(d)...)
}

// sideLine says where a side's symbols come from, and what is missing.
func sideLine(s *insight.Side) string {
	var parts []string
	if s.Source != "" {
		parts = append(parts, s.Source)
	}
	if s.Status != "" {
		parts = append(parts, s.Status)
	}
	for _, p := range s.Problems {
		if s.Source != "" {
			parts = append(parts, "not used: "+p)
		} else if !strings.Contains(s.Status, p) {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return "(nothing)"
	}
	return strings.Join(parts, "; ")
}

// callLines are the call changes, or one line saying there are none, and
// the functions that could not be disassembled on a side with code.
func callLines(d *insight.Diff) []string {
	var lines []string
	for _, c := range d.CallChanges {
		lines = append(lines, c.Line)
	}
	var fns []string
	for _, fc := range d.A.Calls {
		fns = append(fns, fc.Function)
	}
	if len(lines) == 0 && d.A.Symbols != nil && d.B.Symbols != nil && d.A.Image != nil && d.B.Image != nil && len(fns) > 0 {
		lines = append(lines, "No change in the calls of "+strings.Join(fns, ", "))
	}
	for _, s := range []struct {
		name string
		side *insight.Side
	}{{"A", d.A}, {"B", d.B}} {
		if s.side.Symbols == nil || s.side.Image == nil {
			continue
		}
		for _, fc := range s.side.Calls {
			if fc.Error != "" && !strings.Contains(fc.Error, insight.ErrFunctionNotFound.Error()) {
				lines = append(lines, fmt.Sprintf("%s: calls of %s unknown: %s", s.name, fc.Function, fc.Error))
			}
		}
	}
	return lines
}

// writeInsightMarkdown writes the insight block as GitHub markdown: the
// sources, the size table, the call changes and, folded, the callees of
// each function on both sides. A nil d writes nothing.
func writeInsightMarkdown(w io.Writer, d *insight.Diff) error {
	if d == nil {
		return nil
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "#### %s\n\n", insightTitle)
	fmt.Fprintf(bw, "- A: %s\n- B: %s\n", mdEscape(sideLine(d.A)), mdEscape(sideLine(d.B)))
	for _, n := range d.Notes {
		fmt.Fprintf(bw, "- %s\n", mdEscape(n))
	}
	if s := d.Sizes; s != nil {
		fmt.Fprintf(bw, "\nadd/remove: %d/%d grow/shrink: %d/%d up/down: %d/%d (%d)\n\n",
			s.Added, s.Removed, s.Grew, s.Shrank, s.Up, -s.Down, s.Up-s.Down)
		fmt.Fprintf(bw, "| function | A | B | delta |\n|---|--:|--:|--:|\n")
		for _, r := range s.Rows {
			fmt.Fprintf(bw, "| %s | %s | %s | %+d |\n", mdCell(r.Name), presentSize(r.Old, r.InOld), presentSize(r.New, r.InNew), r.Delta)
		}
		fmt.Fprintf(bw, "| **total** | %d | %d | %+.2f%% |\n", s.Before, s.After, s.ChangePercent())
	}
	if calls := callLines(d); len(calls) > 0 {
		fmt.Fprintln(bw)
		for _, l := range calls {
			fmt.Fprintf(bw, "- %s\n", mdEscape(l))
		}
	}
	for _, sec := range guestSections(d) {
		fmt.Fprintf(bw, "\n%s:\n\n", mdEscape(sec.title))
		for _, l := range sec.lines {
			fmt.Fprintf(bw, "- %s\n", mdEscape(l))
		}
	}
	if d.A.Symbols != nil && d.B.Symbols != nil && len(d.A.Calls) > 0 {
		fmt.Fprintf(bw, "\n<details><summary>Callees</summary>\n\n| function | A | B |\n|---|---|---|\n")
		for _, fa := range d.A.Calls {
			fmt.Fprintf(bw, "| %s | %s | %s |\n", mdCell(fa.Function), mdCell(calleeList(&fa)), mdCell(calleeList(findCalls(d.B, fa.Function))))
		}
		fmt.Fprintf(bw, "\n</details>\n")
	}
	return bw.Flush()
}

func presentSize(v uint64, present bool) string {
	if !present {
		return "-"
	}
	return fmt.Sprint(v)
}

func findCalls(s *insight.Side, function string) *insight.FunctionCalls {
	for i := range s.Calls {
		if s.Calls[i].Function == function {
			return &s.Calls[i]
		}
	}
	return nil
}

// calleeList says "a, b ×2, c (tail)" or why there is no list.
func calleeList(fc *insight.FunctionCalls) string {
	switch {
	case fc == nil:
		return "-"
	case fc.Error != "":
		return fc.Error
	case len(fc.Calls) == 0:
		return "(none)"
	}
	var parts []string
	for _, c := range fc.Calls {
		p := c.Callee
		if c.Sites > 1 {
			p += fmt.Sprintf(" ×%d", c.Sites)
		}
		if c.Tail {
			p += " (tail)"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// InsightDocument is the JSON form of the insight block. It carries
// package insight's own types, which are JSON-tagged, plus the text lines
// a bot can post as they are.
type InsightDocument struct {
	A InsightSide `json:"a"`
	B InsightSide `json:"b"`
	// Sizes is the size diff; null when a side has no symbols.
	Sizes *insight.SizeDiff `json:"sizes"`
	// SizeChangePct is (after−before)/before of the selected symbols in
	// percent; null without sizes or with a zero before.
	SizeChangePct *float64 `json:"size_change_pct"`
	// CallChanges are the changes, and CallLines the text lines the text
	// report prints for them.
	CallChanges []insight.CallChange `json:"call_changes"`
	CallLines   []string             `json:"call_lines"`
	// Programs and Counts are what the guests' insight passes reported,
	// compared (empty without them), with their text lines.
	Programs     []insight.ProgramChange `json:"programs"`
	ProgramLines []string                `json:"program_lines"`
	Counts       []insight.CountRow      `json:"counts"`
	CountLines   []string                `json:"count_lines"`
	// Profiles compare the guests' profiles per benchmark, and
	// ProfileLines are the text report's lines for them and the passes.
	Profiles     []insight.ProfileDiff `json:"profiles"`
	ProfileLines []string              `json:"profile_lines"`
	// Memory compares the memory passes' counts per operation, and
	// MemoryLines are the text report's lines for them.
	Memory      []insight.MemoryDiff `json:"memory,omitempty"`
	MemoryLines []string             `json:"memory_lines,omitempty"`
	Notes       []string             `json:"notes"`
}

// InsightSide is one side of an InsightDocument.
type InsightSide struct {
	// Source is e.g. "kallsyms (approximate sizes)", "" when none.
	Source   string   `json:"source"`
	Status   string   `json:"status,omitempty"`
	Problems []string `json:"problems,omitempty"`
	// Image and Symbols describe the files used (paths, build IDs, the
	// KASLR offset taken out of kallsyms addresses).
	Image   *insight.Image          `json:"image,omitempty"`
	Symbols *insight.Symbols        `json:"symbols,omitempty"`
	Calls   []insight.FunctionCalls `json:"calls"`
	// ProfileSummary is the side's profile pass; Profiles its profiles,
	// by benchmark.
	ProfileSummary *insight.ProfileSummary `json:"profile_summary,omitempty"`
	Profiles       []insight.Profile       `json:"profiles,omitempty"`
	// MemorySummary and Memory are the side's memory pass.
	MemorySummary *insight.MemorySummary `json:"memory_summary,omitempty"`
	Memory        []insight.Memory       `json:"memory,omitempty"`
}

// newInsightDocument converts d for JSON.
func newInsightDocument(d *insight.Diff) InsightDocument {
	doc := InsightDocument{
		A:           insightSide(d.A),
		B:           insightSide(d.B),
		Sizes:       d.Sizes,
		CallChanges: nonNil(d.CallChanges),
		CallLines:   nonNil(callLines(d)),
		Programs:    nonNil(d.Programs),
		Counts:      nonNil(d.Counts),
		Profiles:    nonNil(d.Profiles),
		Memory:      d.Memory,
		Notes:       nonNil(d.Notes),
	}
	doc.ProfileLines = nonNil(profileLineList(d))
	doc.MemoryLines = memoryLineList(d)
	doc.ProgramLines, doc.CountLines = []string{}, []string{}
	for _, p := range d.Programs {
		doc.ProgramLines = append(doc.ProgramLines, p.Line)
	}
	for _, c := range d.Counts {
		doc.CountLines = append(doc.CountLines, c.Line)
	}
	if d.Sizes != nil && d.Sizes.Before != 0 {
		pct := d.Sizes.ChangePercent()
		doc.SizeChangePct = &pct
	}
	if doc.Sizes != nil && doc.Sizes.Rows == nil {
		s := *doc.Sizes
		s.Rows = []insight.SizeRow{}
		doc.Sizes = &s
	}
	return doc
}

func insightSide(s *insight.Side) InsightSide {
	return InsightSide{
		Source: s.Source, Status: s.Status, Problems: s.Problems,
		Image: s.Image, Symbols: s.Symbols, Calls: nonNil(s.Calls),
		ProfileSummary: s.ProfileSummary, Profiles: s.Profiles,
		MemorySummary: s.MemorySummary, Memory: s.Memory,
	}
}

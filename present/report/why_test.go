package report

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/present/view"
)

// insightDiff is the Debian 6.1 → 6.12 block as Compare builds it from
// kallsyms, cut down to two rows.
func insightDiff() *insight.Diff {
	calls := func(lpm bool) []insight.FunctionCalls {
		fc := insight.FunctionCalls{Function: "trie_lookup_elem", Parts: []string{"trie_lookup_elem"}}
		if lpm {
			fc.Size = 192
			fc.Calls = []insight.Call{{Callee: "longest_prefix_match.isra.0", Sites: 1}}
		} else {
			fc.Size = 544
		}
		return []insight.FunctionCalls{fc, {Function: "trie_update_elem", Calls: []insight.Call{{Callee: "kfree", Sites: 1}, {Callee: "__memcpy", Sites: 3}}}}
	}
	side := func(lpm bool, offset uint64) *insight.Side {
		return &insight.Side{
			Image:   &insight.Image{Path: "vmlinuz", Compression: insight.CompressionZstd, BuildID: "ab", TextAddr: 0xffffffff81000000},
			Symbols: &insight.Symbols{Kind: insight.SourceKallsyms, KASLROffset: offset},
			Source:  "kallsyms (approximate sizes)",
			Calls:   calls(lpm),
		}
	}
	return &insight.Diff{
		A: side(true, 0x3200000),
		B: side(false, 0xa000000),
		Sizes: &insight.SizeDiff{
			Types: insight.TypesFunctions, Added: 1, Grew: 1, Up: 400, Down: 0,
			Rows: []insight.SizeRow{
				{Name: "trie_lookup_elem", Old: 192, New: 544, InOld: true, InNew: true, Delta: 352},
				{Name: "trie_mem_usage", New: 48, InNew: true, Delta: 48},
			},
			Before: 192, After: 592,
		},
		CallChanges: []insight.CallChange{{
			Function: "trie_lookup_elem", Callee: "longest_prefix_match.isra.0", Kind: "removed", OldSites: 1,
			OldSize: 192, NewSize: 544, Line: "trie_lookup_elem no longer calls longest_prefix_match.isra.0 (inlined; ~192 → ~544 bytes)",
		}},
		Notes: []string{"sizes of A and B are approximate: kallsyms has none, each is the distance to the next symbol"},
	}
}

func TestWriteInsightText(t *testing.T) {
	var b bytes.Buffer
	if err := writeInsightText(&b, insightDiff()); err != nil {
		t.Fatal(err)
	}
	want := `Why it changed
A: kallsyms (approximate sizes)
B: kallsyms (approximate sizes)
  sizes of A and B are approximate: kallsyms has none, each is the distance to the next symbol

add/remove: 1/0 grow/shrink: 1/0 up/down: 400/0 (400)
Function                                     old     new   delta
trie_lookup_elem                             192     544    +352
trie_mem_usage                                 -      48     +48
Total: Before=192, After=592, chg +208.33%

trie_lookup_elem no longer calls longest_prefix_match.isra.0 (inlined; ~192 → ~544 bytes)
`
	if b.String() != want {
		t.Errorf("WriteInsightText =\n%s\nwant\n%s", b.String(), want)
	}
	if err := writeInsightText(&b, nil); err != nil {
		t.Errorf("WriteInsightText(nil) = %v", err)
	}
}

func TestWriteInsightTextDegraded(t *testing.T) {
	d := insightDiff()
	d.B = &insight.Side{Status: "no symbols: no vmlinux, debug package or kallsyms for this kernel",
		Calls: []insight.FunctionCalls{{Function: "trie_lookup_elem", Error: "no symbols"}}}
	d.Sizes, d.CallChanges, d.Notes = nil, nil, nil
	var b bytes.Buffer
	if err := writeInsightText(&b, d); err != nil {
		t.Fatal(err)
	}
	want := "Why it changed\nA: kallsyms (approximate sizes)\nB: no symbols: no vmlinux, debug package or kallsyms for this kernel\n"
	if b.String() != want {
		t.Errorf("WriteInsightText(B without symbols) =\n%q\nwant\n%q", b.String(), want)
	}

	// Both sides complete, nothing changed: say so.
	d = insightDiff()
	d.CallChanges = nil
	b.Reset()
	writeInsightText(&b, d)
	if !strings.Contains(b.String(), "No change in the calls of trie_lookup_elem, trie_update_elem\n") {
		t.Errorf("WriteInsightText(no call changes) =\n%s\nwant a line saying so", b.String())
	}
}

func TestWriteInsightMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := writeInsightMarkdown(&b, insightDiff()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"#### Why it changed\n",
		"- A: kallsyms (approximate sizes)\n",
		"| function | A | B | delta |\n|---|--:|--:|--:|\n| trie\\_lookup\\_elem | 192 | 544 | +352 |\n| trie\\_mem\\_usage | - | 48 | +48 |\n| **total** | 192 | 592 | +208.33% |\n",
		"- trie\\_lookup\\_elem no longer calls longest\\_prefix\\_match.isra.0 (inlined; \\~192 → \\~544 bytes)\n",
		"| trie\\_lookup\\_elem | longest\\_prefix\\_match.isra.0 | (none) |\n",
		"| trie\\_update\\_elem | kfree, \\_\\_memcpy ×3 | kfree, \\_\\_memcpy ×3 |\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("WriteInsightMarkdown =\n%s\nwant it to contain\n%s", b.String(), want)
		}
	}
}

func TestWriteInsightJSON(t *testing.T) {
	var b bytes.Buffer
	if err := WriteInsightJSON(&b, insightDiff()); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		A struct {
			Source  string `json:"source"`
			Symbols struct {
				Kind        string `json:"kind"`
				KASLROffset uint64 `json:"kaslr_offset"`
			} `json:"symbols"`
			Calls []struct {
				Function string `json:"function"`
				Calls    []struct {
					Callee string `json:"callee"`
					Sites  int    `json:"sites"`
				} `json:"calls"`
			} `json:"calls"`
		} `json:"a"`
		Sizes struct {
			Rows []struct {
				Name  string `json:"name"`
				Old   uint64 `json:"old"`
				InOld bool   `json:"in_old"`
				Delta int64  `json:"delta"`
			} `json:"rows"`
		} `json:"sizes"`
		SizeChangePct *float64 `json:"size_change_pct"`
		CallLines     []string `json:"call_lines"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("WriteInsightJSON wrote invalid JSON: %v\n%s", err, b.String())
	}
	if doc.A.Source != "kallsyms (approximate sizes)" || doc.A.Symbols.Kind != "kallsyms" || doc.A.Symbols.KASLROffset != 0x3200000 {
		t.Errorf("JSON side A = %+v; want kallsyms with offset 0x3200000", doc.A)
	}
	if len(doc.A.Calls) != 2 || doc.A.Calls[0].Calls[0].Callee != "longest_prefix_match.isra.0" {
		t.Errorf("JSON A calls = %+v; want trie_lookup_elem calling longest_prefix_match.isra.0", doc.A.Calls)
	}
	if len(doc.Sizes.Rows) != 2 || doc.Sizes.Rows[1].InOld || doc.Sizes.Rows[0].Delta != 352 {
		t.Errorf("JSON size rows = %+v", doc.Sizes.Rows)
	}
	if doc.SizeChangePct == nil || *doc.SizeChangePct < 208.3 || *doc.SizeChangePct > 208.4 {
		t.Errorf("JSON size_change_pct = %v; want 208.33", doc.SizeChangePct)
	}
	if len(doc.CallLines) != 1 || !strings.HasPrefix(doc.CallLines[0], "trie_lookup_elem no longer calls") {
		t.Errorf("JSON call_lines = %q", doc.CallLines)
	}
}

// TestInsightInEveryFormat checks that Meta.Insight puts the block into
// the comparison report of each format, after the table, and that a nil
// one leaves no trace.
func TestInsightInEveryFormat(t *testing.T) {
	rep := icountReport(t)
	for _, f := range []Format{FormatText, FormatMarkdown, FormatJSON, FormatHTML} {
		var with, without bytes.Buffer
		if err := Write(&with, f, rep, view.Meta{Insight: insightDiff()}); err != nil {
			t.Fatalf("Write(%s, insight) = %v", f, err)
		}
		if err := Write(&without, f, rep, view.Meta{}); err != nil {
			t.Fatalf("Write(%s) = %v", f, err)
		}
		line := "trie_lookup_elem no longer calls longest_prefix_match.isra.0"
		if f == FormatMarkdown {
			line = mdEscape(line)
		}
		if !strings.Contains(with.String(), line) || (f != FormatJSON && !strings.Contains(with.String(), insightTitle)) {
			t.Errorf("Write(%s, insight) lacks the block:\n%s", f, with.String())
		}
		if strings.Contains(without.String(), insightTitle) || strings.Contains(without.String(), `"insight"`) {
			t.Errorf("Write(%s, no insight) has a %q block", f, insightTitle)
		}
		if f == FormatText {
			if i, j := strings.Index(with.String(), insightTitle), strings.Index(with.String(), "\nkernels:"); i < 0 || j >= 0 && j < i {
				t.Errorf("text report: the block is not between the table and the run lines:\n%s", with.String())
			}
		}
	}
	var doc Document
	var b bytes.Buffer
	writeJSON(&b, rep, view.Meta{Insight: insightDiff()})
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil || doc.Insight == nil || len(doc.Insight.CallLines) != 1 {
		t.Errorf("WriteJSON(insight) = insight %+v, %v; want the block with one call line", doc.Insight, err)
	}
}

// TestInsightInBisectionAndMail checks the block in a bisection's re-check
// and in the nightly mail.
func TestInsightInBisectionAndMail(t *testing.T) {
	const line = "trie_lookup_elem no longer calls longest_prefix_match.isra.0"
	var text, page bytes.Buffer
	b := view.Bisection{Culprit: "first bad commit: 1a4a0cb7985f", Verdict: "confirmed by the re-check", RecheckP: -1, Insight: insightDiff()}
	if err := WriteBisectionText(&text, b); err != nil {
		t.Fatal(err)
	}
	if err := WriteBisectionHTML(&page, b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "parent → culprit: "+insightTitle) || !strings.Contains(text.String(), line) || !strings.Contains(page.String(), line) {
		t.Errorf("bisection report with insight lacks the block:\n%s\n%s", text.String(), page.String())
	}
	m := testMail(t, 7)
	m.Insight = insightDiff()
	if got := writeMail(t, m); !strings.Contains(got, mdEscape(line)) {
		t.Errorf("WriteChangePointMail(insight) lacks the block:\n%s", got)
	}
	var none bytes.Buffer
	WriteBisectionText(&none, view.Bisection{RecheckP: -1})
	if strings.Contains(none.String(), insightTitle) {
		t.Errorf("bisection report without insight has the block:\n%s", none.String())
	}
}

// WriteInsightJSON writes newInsightDocument(d), indented.
func WriteInsightJSON(w io.Writer, d *insight.Diff) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(newInsightDocument(d))
}

package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/stats/compare"
)

var codeSpan = regexp.MustCompile("`[^`\n]*`")

// TestHostileStringsEscaped renders, in every format, a comparison whose
// benchmark name and kernel label carry HTML, a backtick, a pipe and
// terminal escape sequences (a results file from elsewhere, or a guest's
// HTML that vetting lets through): none reaches the output as markup or as
// a control character.
func TestHostileStringsEscaped(t *testing.T) {
	const name = "LPMTrie/op=lookup/x=`<script>alert(1)</script>|\x1b[2J"
	text := resultsText("insn/op", icountInput[:1])
	text = strings.ReplaceAll(text, "BenchmarkLPMTrie/op=lookup/keys=random/entries=10000", "Benchmark"+name)
	text = strings.ReplaceAll(text, "6.1.0-57-cloud-amd64", "<img/src=x>\x1b]0;owned\x07\xff")
	rep := build(t, text, compare.Options{})
	for _, f := range []Format{FormatText, FormatMarkdown, FormatJSON, FormatHTML} {
		var b bytes.Buffer
		if err := Write(&b, f, rep, testMeta); err != nil {
			t.Fatalf("Write(%s) = %v", f, err)
		}
		out := b.String()
		if strings.ContainsAny(out, "\x1b\x07") {
			t.Errorf("Write(%s) has a raw control character:\n%q", f, out)
		}
		if f == FormatMarkdown && strings.Contains(out, "`<") {
			t.Errorf("Write(markdown) lets a backtick end the benchmark's code span:\n%s", out)
		}
		if f == FormatMarkdown {
			out = codeSpan.ReplaceAllString(out, "``") // markup in a code span is text
		}
		if f != FormatText && (strings.Contains(out, "<script") || strings.Contains(out, "<img")) {
			t.Errorf("Write(%s) has unescaped markup:\n%s", f, out)
		}
		if f != FormatJSON && !strings.Contains(out, `\x1b`) {
			t.Errorf("Write(%s) does not show the escape it removed:\n%s", f, out)
		}
	}
}

// TestMarkdownCodeKeepsPipesOutsideTables checks that a command with a
// pipe shows as typed in the run list (a code span does not read
// backslash escapes), and that a table cell escapes it.
func TestMarkdownCodeKeepsPipesOutsideTables(t *testing.T) {
	cmd := "lpmbisect compare --bench 'LPMTrie/op=(lookup|update)' a b"
	if got := mdCode(cmd); got != cmd {
		t.Errorf("mdCode(%q) = %q; want it unchanged", cmd, got)
	}
	if got, want := mdCellCode("a|b`c"), `a\|b'c`; got != want {
		t.Errorf("mdCellCode = %q; want %q", got, want)
	}
}

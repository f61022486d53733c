package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// seriesFixture is a five-patch series as the series package reports it:
// docs only (same image), a regression, a build failure, a patch compared
// with 2/5, an improvement.
func seriesFixture() view.Series {
	const bench = "LPMTrie/op=lookup/keys=random/entries=10000"
	d := func(pct float64, v compare.Verdict, dir string) *view.SeriesDelta {
		return &view.SeriesDelta{DeltaPct: pct, Verdict: v, Direction: dir, Boots: 2}
	}
	p := func(n int, commit, subject, status string, against int) view.SeriesPatch {
		return view.SeriesPatch{N: n, Total: 5, Commit: commit, Subject: subject, Status: status, AgainstN: against, Parent: against == n-1}
	}
	s := view.Series{
		Title: "[PATCH 0/5] bpf: lpm_trie: a series", Base: "a93a5505f856aa", BaseSubject: "Debian linux-source-6.12",
		Patches: []view.SeriesPatch{
			p(1, "c8c268b78fdd00", "bpf: lpm_trie: document the cost of a lookup", "same-image", 0),
			p(2, "661542c34f9400", "bpf: lpm_trie: use the out-of-line longest_prefix_match in lookup", "measured", 1),
			p(3, "3713f2dc291600", "bpf: lpm_trie: reject keys longer than the trie in update", "build-failed", 2),
			p(4, "20b4afed64c500", "bpf: lpm_trie: fix the build of the key length check in update", "measured", 2),
			p(5, "35fb6a27244a00", "bpf: lpm_trie: inline longest_prefix_match in update", "measured", 4),
		},
		Benchmarks: []view.SeriesBenchmark{{Benchmark: bench, Unit: "insn/op", Base: 823.2, Cells: []view.SeriesCell{
			{VsBase: d(0, compare.Same, "")},
			{Center: 1065, VsParent: d(27.09, compare.Different, "worse"), VsBase: d(27.09, compare.Different, "worse")},
			{},
			{Center: 1065, VsParent: d(0, compare.Same, ""), VsBase: d(27.09, compare.Different, "worse")},
			{Center: 1065, VsParent: d(0, compare.Same, ""), VsBase: d(27.09, compare.Different, "worse")},
		}}},
		Reply:       &view.SeriesReply{Subject: "Re: [PATCH 0/5] bpf: lpm_trie: a series", InReplyTo: "<cover@example.org>", References: "<cover@example.org>"},
		Environment: view.SeriesEnvironment{Base: "a93a5505f856aa", Kconfig: "3a3b6f344d4a", Compiler: "gcc (Debian 12.2.0-14+deb12u1) 12.2.0", QEMU: "7.2.22", CPUModel: "Westmere-v1", Accel: "icount", Boots: 2, Version: "v0.0.0-20261202074758-d4609b6aeb2d"},
		Command:     "lpmbisect series --repo /src/linux --accel icount --bench 'LPMTrie/op=(lookup|update)/keys=random' --mbox /tmp/series.mbox --base a93a5505f --format mail",
		Outcome:     compare.Regression,
	}
	s.Patches[1].Moved = true
	s.Patches[2].Detail = "does not build"
	s.Patches[2].LogTail = []string{"../kernel/bpf/lpm_trie.c:344:22: error: implicit declaration of function 'key_bytes' [-Werror=implicit-function-declaration]"}
	return s
}

func TestSeriesMail(t *testing.T) {
	var b bytes.Buffer
	if err := writeSeriesMail(&b, seriesFixture()); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{
		"Subject: Re: [PATCH 0/5] bpf: lpm_trie: a series\nIn-Reply-To: <cover@example.org>\n",
		"REGRESSION (--fail-on regression)",
		"LPMTrie/op=lookup/keys=random/entries=10000, base 823.2 insn/op\n",
		"  2/5   661542c34f94  DIFFERENT +27.1% worse",
		"  3/5   3713f2dc2916  does not build",
		"  4/5   20b4afed64c5  SAME +0.00% (vs 2/5)",
		"  1/5   c8c268b78fdd  same image, no boot",
		"error: implicit declaration of",
		"QEMU          7.2.22",
		"boots         2 per kernel at most",
		"--format mail",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("mail lacks %q:\n%s", want, text)
		}
	}
	for i, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "References:") {
			continue
		}
		if n := len([]rune(l)); n > mailWidth {
			t.Errorf("line %d is %d columns (> %d): %q", i+1, n, mailWidth, l)
		}
	}
	// The command, continued over lines, is still one shell command.
	_, cmd, _ := strings.Cut(text, "Reproduce:\n")
	cmd, _, _ = strings.Cut(cmd, "\n\n")
	if joined := strings.Join(strings.Fields(strings.ReplaceAll(cmd, "\\\n", "")), " "); joined != seriesFixture().Command {
		t.Errorf("command joined = %q; want %q", joined, seriesFixture().Command)
	}
}

func TestSeriesFormats(t *testing.T) {
	s := seriesFixture()
	for _, f := range []Format{FormatText, FormatMarkdown, FormatJSON, FormatHTML} {
		var b bytes.Buffer
		if err := WriteSeries(&b, f, s); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !strings.Contains(b.String(), "661542c34f94") || !strings.Contains(b.String(), "27.1%") && !strings.Contains(b.String(), "27.09") {
			t.Errorf("%s lacks the regressing patch:\n%s", f, b.String())
		}
		if f == FormatJSON {
			var doc map[string]any
			if err := json.Unmarshal(b.Bytes(), &doc); err != nil || doc["outcome"] != "regression" {
				t.Errorf("JSON outcome = %v (%v)", doc["outcome"], err)
			}
		}
	}
}

// TestSeriesEscapesUntrustedText checks that a patch subject and a build
// log carrying a terminal escape reach no format as the raw control
// character (JSON escapes it by encoding).
func TestSeriesEscapesUntrustedText(t *testing.T) {
	s := seriesFixture()
	s.Patches[0].Subject = "bpf: \x1b]0;owned\x07 subject"
	s.Patches[1].Subject = "bpf: \x1b[2J regressing subject"
	s.Patches[2].LogTail = []string{"error: \x1b[2J"}
	for _, f := range []Format{FormatText, FormatMarkdown, FormatHTML, FormatMail, FormatJSON, FormatGitHub} {
		var b strings.Builder
		if err := WriteSeries(&b, f, s); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if strings.ContainsAny(b.String(), "\x1b\x07") {
			t.Errorf("%s: a control character reached the output", f)
		}
	}
}

// TestSeriesGitHub: per patch, an ::error for a regression against its
// parent and for a patch that does not build, a ::warning for an UNKNOWN
// row (naming the patch it was compared with), nothing for SAME and for a
// patch that left the image alone.
func TestSeriesGitHub(t *testing.T) {
	s := seriesFixture()
	s.Benchmarks[0].Cells[3].VsParent = &view.SeriesDelta{DeltaPct: 1.5, Verdict: compare.Unknown, Boots: 2}
	var b bytes.Buffer
	if err := WriteSeries(&b, FormatGitHub, s); err != nil {
		t.Fatal(err)
	}
	want := "::error title=lpmbisect%3A patch 2/5 LPMTrie/op=lookup/keys=random/entries=10000::2/5 661542c34f94 bpf: lpm_trie: use the out-of-line longest_prefix_match in lookup: LPMTrie/op=lookup/keys=random/entries=10000 insn/op +27.1%25 against its parent, DIFFERENT\n" +
		"::error title=lpmbisect%3A patch 3/5 does not build::3/5 3713f2dc2916 bpf: lpm_trie: reject keys longer than the trie in update: does not build\n" +
		"::warning title=lpmbisect%3A patch 4/5 LPMTrie/op=lookup/keys=random/entries=10000::4/5 20b4afed64c5 bpf: lpm_trie: fix the build of the key length check in update: LPMTrie/op=lookup/keys=random/entries=10000 insn/op +1.50%25 against patch 2/5, UNKNOWN\n"
	if b.String() != want {
		t.Errorf("WriteSeries(github) =\n%s\nwant\n%s", b.String(), want)
	}
}

package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/present/view"
)

// testMail is the mail of the fortnight's change point of night 8: lookups
// 7.2 % longer, bisected to that night's commit.
func testMail(t *testing.T, ids ...int64) view.Mail {
	t.Helper()
	hs := testHistorySeries()
	v := newSeriesView(hs)
	m := view.Mail{Series: hs.Series, Config: "/etc/lpmbisect/kernels.toml",
		Reproduce: view.Reproduction{Flags: []string{"--accel", "icount", "--bench", "lookup"},
			Before: "kernels/bpf-next 2026-11-07/bzImage", After: "kernels/bpf-next-2026-11-08/bzImage"}}
	for _, id := range ids {
		for _, cp := range hs.ChangePoints {
			if cp.ID == id {
				m.Changes = append(m.Changes, cp)
			}
		}
	}
	if len(m.Changes) != len(ids) {
		t.Fatalf("the test history lacks change points %v", ids)
	}
	var ok bool
	if m.Before, ok = v.night(m.Changes[0].BeforeNight); !ok {
		t.Fatalf("the test history lacks night %s", m.Changes[0].BeforeNight)
	}
	if m.After, ok = v.night(m.Changes[0].Night); !ok {
		t.Fatalf("the test history lacks night %s", m.Changes[0].Night)
	}
	m.BeforeRows, m.AfterRows = v.rows[m.Before.Date], v.rows[m.After.Date]
	return m
}

// squash collapses runs of white space, so that checks of prose do not
// depend on where it is wrapped.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

func writeMail(t *testing.T, m view.Mail) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteChangePointMail(&b, m); err != nil {
		t.Fatalf("WriteChangePointMail() = %v", err)
	}
	return b.String()
}

func TestWriteChangePointMailGolden(t *testing.T) {
	historyGolden(t, "history-mail.md", writeMail(t, testMail(t, 7)))
}

// TestChangePointMailContent checks what the golden mail must say.
func TestChangePointMailContent(t *testing.T) {
	out := writeMail(t, testMail(t, 7))
	culprit := fakeCommit(8)[:12]
	for _, want := range []string{
		"Subject: [lpmbisect] bpf-next: " + culprit + ": " + benchLookup + " +7.20% insn/op regression\n",
		"**" + benchLookup + ": +7.20% insn/op (worse), night 2026-11-08, bpf-next**",
		"commit:    " + culprit + ` ("bpf: lpm_trie: compare the whole prefix in one loop")  (first bad commit, bisected)`,
		"range:     " + fakeCommit(7) + ".." + fakeCommit(8) + "\n",
		"| `" + benchLookup + "` | 838.3 insn/op ±0.03% | 898.8 insn/op ±0.03% | +7.22% | **DIFFERENT** (worse), p=0.008 | 838 → 838 insn/op (+0.00%) |\n",
		"First bad commit, found by the automatic bisection of " + fakeCommit(7)[:12] + ".." + culprit + ": `" + culprit + ` ("bpf: lpm_trie: compare the whole prefix in one loop")` + "`.",
		"| `" + benchNoop + "` (control) |",
		"lpmbisect compare --accel icount --bench lookup 'kernels/bpf-next 2026-11-07/bzImage' kernels/bpf-next-2026-11-08/bzImage\n",
		"lpmbisect history ack --config /etc/lpmbisect/kernels.toml 7 ",
		"lpmbisect history ack --mute --config /etc/lpmbisect/kernels.toml 7 ",
		"About insn/op:",
	} {
		if !strings.Contains(squash(out), squash(want)) {
			t.Errorf("WriteChangePointMail(#7) lacks %q; got:\n%s", want, out)
		}
	}
	if strings.Contains(out, "http") {
		t.Errorf("WriteChangePointMail(#7) links somewhere; the mail must hold everything itself")
	}
}

// TestChangePointMailHost checks the mail of a host-line change point: no
// commit is blamed, and with no two kernels to compare there is no
// command.
func TestChangePointMailHost(t *testing.T) {
	m := testMail(t, 9)
	m.Reproduce = view.Reproduction{}
	out := writeMail(t, m)
	for _, want := range []string{
		"Subject: [lpmbisect] bpf-next: host or harness changed on 2026-11-12: " + benchLookup + " +3.00% insn/op regression\n",
		"the reference kernel of bpf-next moved by +3.00%",
		"No kernel commit: the reference kernel moved, so the host or the harness changed. The night's note: QEMU 7.2.22 → 8.0.5 on this host",
		"No two kernels show this step",
		"qemu:      7.2.22 → 8.0.5 (changed)",
		"#9 is provisional",
	} {
		if !strings.Contains(squash(out), squash(want)) {
			t.Errorf("WriteChangePointMail(#9) lacks %q; got:\n%s", want, out)
		}
	}
	if strings.Contains(out, "lpmbisect compare") || strings.Contains(out, "culprit") {
		t.Errorf("WriteChangePointMail(#9) offers a comparison or a culprit for a host change; got:\n%s", out)
	}
}

// TestChangePointMailSeveral checks a mail of two change points of one
// night: both headlines, both acks, the benchmark leading (not the
// control), one culprit line for both.
func TestChangePointMailSeveral(t *testing.T) {
	m := testMail(t, 10, 9)
	out := writeMail(t, m)
	for _, want := range []string{
		"Subject: [lpmbisect] bpf-next: host or harness changed on 2026-11-12: " + benchLookup + " +3.00% insn/op regression and 1 more\n",
		"**" + benchNoop + ": +3.00% insn/op (control moved) on the reference",
		"**" + benchLookup + ": +3.00% insn/op (worse) on the reference",
		"1 other change point moved on the same night",
		"No kernel commit: the reference kernel moved",
		"#10, #9 are provisional",
		"history ack --config /etc/lpmbisect/kernels.toml 10 ",
		"history ack --config /etc/lpmbisect/kernels.toml 9 ",
	} {
		if !strings.Contains(squash(out), squash(want)) {
			t.Errorf("WriteChangePointMail(#10, #9) lacks %q; got:\n%s", want, out)
		}
	}
	if strings.Contains(out, "#10: ") || strings.Contains(out, "#9: ") || strings.Count(out, "No kernel commit") != 1 {
		t.Errorf("WriteChangePointMail(#10, #9) does not say the one outcome of both once; got:\n%s", out)
	}
	if err := WriteChangePointMail(&bytes.Buffer{}, view.Mail{Series: history.Series{Name: "x"}}); err == nil {
		t.Errorf("WriteChangePointMail(no change point) = nil; want an error")
	}
}

func TestMailSubjectWithoutCulprit(t *testing.T) {
	m := testMail(t, 7)
	m.Changes[0].Bisect = history.Bisection{State: history.BisectFailed, Reason: "every step was skipped"}
	want := "[lpmbisect] bpf-next: " + fakeCommit(7)[:12] + ".." + fakeCommit(8)[:12] + ": " + benchLookup + " +7.20% insn/op regression"
	if got := MailSubject(m); got != want {
		t.Errorf("MailSubject(bisect failed) = %q; want %q", got, want)
	}
	out := writeMail(t, m)
	if !strings.Contains(squash(out), "The automatic bisection failed: every step was skipped. The culprit is in the range above.") {
		t.Errorf("WriteChangePointMail(bisect failed) does not say why; got:\n%s", out)
	}
	m.Changes[0].DeltaPct = -21.3
	if got := MailSubject(m); !strings.HasSuffix(got, "-21.3% insn/op improvement") {
		t.Errorf("MailSubject(-21.3%%) = %q; want an improvement", got)
	}
}

func Example_ackCommand() {
	fmt.Println(ackCommand("kernels.toml", 7))
	// Output:
	// lpmbisect history ack --config kernels.toml 7
}

package wire

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostileStreams decodes the streams recorded from the guest's hostile
// faults (go test ./testbed/guestfaults -run TestHostileFaults -update-hostile): each lie
// is rejected with its reason, the HTML kept as text to escape, and a
// malformed insight document costs only itself.
func TestHostileStreams(t *testing.T) {
	for _, c := range []struct {
		kind     string
		rejected bool   // Rejected (a lie), else an incomplete or complete stream
		problem  string // in Problem; "" for a complete stream
	}{
		{"lie-count", false, "trailer counts 4 records, stream has 3"},
		{"lie-sum", false, "trailer checksum does not match"},
		{"nan", true, "value NaN insn/op is not in [0, 1e+12]"},
		{"inf", true, "value +Inf insn/op is not in [0, 1e+12]"},
		{"negative", true, "value -981 insn/op is not in [0, 1e+12]"},
		{"huge", true, "value 1e+300 insn/op is not in [0, 1e+12]"},
		{"unasked", true, "result for BenchmarkUnasked/op=lie, which lpmbisect.bench=LPMTrie/op=lookup did not ask for"},
		{"host-key", true, `the guest wrote the host's key "side"`},
		{"bad-utf8", true, "a result's name is not valid UTF-8"},
		{"escape", true, "a result's name has control character U+001B"},
		{"html", false, ""},
		{"insight-bad", false, ""},
	} {
		t.Run(c.kind, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "hostile", c.kind+".stream"))
			if err != nil {
				t.Fatal(err)
			}
			s := Decode(data)
			s.CheckPlan(DefaultPlan())
			if c.problem == "" {
				if !s.Complete || len(s.Results) != 3 {
					t.Fatalf("Decode = complete %v (%s), %d results; want 3 results proven", s.Complete, s.Problem, len(s.Results))
				}
				if _, err := DecodeInsight(s.Insight); c.kind == "insight-bad" && err == nil {
					t.Errorf("DecodeInsight succeeded on a malformed document")
				}
				return
			}
			if s.Complete || s.Rejected != c.rejected || !strings.Contains(s.Problem, c.problem) {
				t.Errorf("Decode = complete %v, rejected %v, problem %q; want rejected %v with %q", s.Complete, s.Rejected, s.Problem, c.rejected, c.problem)
			}
		})
	}
}

// TestEscapeNoteRejected checks a note with a terminal escape sequence, in
// a stream whose results are clean, rejects the stream, and that a tab
// does not.
func TestEscapeNoteRejected(t *testing.T) {
	for _, c := range []struct {
		text string
		ok   bool
	}{{"modules\tloaded", true}, {"title \x1b]0;owned\x07", false}, {"bad \xff byte", false}, {"C1 \u009b2J", false}} {
		var out strings.Builder
		w := NewWriter(&out)
		w.Note(KeyInfo, c.text)
		w.End()
		if s := Decode([]byte(out.String())); s.Complete != c.ok {
			t.Errorf("Decode(note %q) = complete %v (%s); want %v", c.text, s.Complete, s.Problem, c.ok)
		}
	}
}

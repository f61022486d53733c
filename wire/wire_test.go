package wire

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"
)

func writeStream(t *testing.T, results int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for i := 0; i < results; i++ {
		r := &benchfmt.Result{Name: []byte("BenchmarkLPMTrie/op=lookup/keys=random/entries=10000"), Iters: 200000,
			Values: []benchfmt.Value{{Value: 500 + float64(i), Unit: "ns/op"}}}
		r.SetConfig(KeyKernel, "6.12.117+deb12-cloud-amd64")
		if err := w.Result(r); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := w.Note(KeyUnsupported, "BenchmarkLPMTrie/op=free needs fentry\n(Linux 5.5)"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.End(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecodeComplete(t *testing.T) {
	s := Decode(writeStream(t, 3))
	if !s.Complete {
		t.Fatalf("Decode(stream).Complete = false (%s); want true", s.Problem)
	}
	if len(s.Results) != 3 {
		t.Fatalf("Decode(stream) found %d results; want 3", len(s.Results))
	}
	if got := s.Results[2].GetConfig(KeyUnsupported); got != "" {
		t.Errorf("result config has note %q; want notes removed from config", got)
	}
	if got := s.Results[2].GetConfig(KeyKernel); got != "6.12.117+deb12-cloud-amd64" {
		t.Errorf("result kernel = %q; want 6.12.117+deb12-cloud-amd64", got)
	}
	if len(s.Notes) != 1 || s.Notes[0].Key != KeyUnsupported || strings.Contains(s.Notes[0].Text, "\n") {
		t.Errorf("Notes = %+v; want one single-line unsupported note", s.Notes)
	}
}

func TestDecodeCarriageReturns(t *testing.T) {
	data := bytes.ReplaceAll(writeStream(t, 2), []byte("\n"), []byte("\r\n"))
	if s := Decode(data); !s.Complete {
		t.Fatalf("Decode(CRLF stream).Complete = false (%s); want true", s.Problem)
	}
}

func TestDecodeIncomplete(t *testing.T) {
	full := writeStream(t, 3)
	end := bytes.Index(full, []byte(KeyEnd))
	cases := map[string][]byte{
		"empty":      nil,
		"no trailer": full[:end],
		"cut inside": full[:end/2],
		"tampered":   bytes.Replace(full, []byte("502"), []byte("102"), 1),
		"bad count":  bytes.Replace(full, []byte("records=3"), []byte("records=4"), 1),
		"garbage":    []byte("\x00\xff\x13garbage\nBenchmarkX 1 x\n"),
	}
	for name, data := range cases {
		if s := Decode(data); s.Complete || s.Problem == "" {
			t.Errorf("Decode(%s) = complete %v, problem %q; want incomplete with a problem", name, s.Complete, s.Problem)
		}
	}
	// Results before a cut are still returned: completed samples are kept.
	if s := Decode(full[:end]); len(s.Results) != 3 {
		t.Errorf("Decode(no trailer) kept %d results; want 3", len(s.Results))
	}
}

func TestNoteRejectsNonNoteKeys(t *testing.T) {
	w := NewWriter(new(bytes.Buffer))
	for _, k := range []string{KeyKernel, KeyEnd, "other"} {
		if err := w.Note(k, "x"); err == nil {
			t.Errorf("Note(%q) = nil; want error", k)
		}
	}
}

func TestDecodeCountsGarbage(t *testing.T) {
	s := Decode([]byte("kernel: 6.1\n\x00\xffjunk\nnot a config line\n\nBenchmarkX 1 2 ns/op\n"))
	if s.SyntaxErrors != 2 {
		t.Errorf("Decode(garbage).SyntaxErrors = %d; want 2", s.SyntaxErrors)
	}
	if len(s.Results) != 1 {
		t.Errorf("Decode(garbage) kept %d results; want 1", len(s.Results))
	}
}

func TestDecodeDropsReadyNotes(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for i := 1; i <= 2; i++ {
		if err := w.Note(KeyReady, strings.Repeat("1", i)); err != nil {
			t.Fatal(err)
		}
		r := &benchfmt.Result{Name: []byte("LPMTrie/op=noop"), Iters: 1, Values: []benchfmt.Value{{Value: 7, Unit: "ns/op"}}}
		if err := w.Result(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.End(); err != nil {
		t.Fatal(err)
	}
	s := Decode(buf.Bytes())
	if !s.Complete || len(s.Results) != 2 {
		t.Fatalf("Decode(paced stream) = complete %v (%s), %d results; want complete with 2", s.Complete, s.Problem, len(s.Results))
	}
	if len(s.Notes) != 0 {
		t.Errorf("Notes = %+v; want ready notes left out", s.Notes)
	}
}

func TestFlushMarker(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	r := &benchfmt.Result{Name: []byte("LPMTrie/op=noop"), Iters: 1, Values: []benchfmt.Value{{Value: 7, Unit: "ns/op"}}}
	if err := w.Result(r); err != nil {
		t.Fatal(err)
	}
	buf.WriteString(FlushLine) // a guest that waited for the host mid-stream (a fault's drain)
	if err := w.End(); err != nil {
		t.Fatal(err)
	}
	buf.WriteString(FlushLine)
	s := Decode(buf.Bytes())
	if !s.Complete || len(s.Results) != 1 || len(s.Notes) != 0 || s.SyntaxErrors != 0 {
		t.Errorf("Decode(stream with flush markers) = complete %v (%s), %d results, notes %+v, %d syntax errors; want complete, 1 result, no notes, no errors",
			s.Complete, s.Problem, len(s.Results), s.Notes, s.SyntaxErrors)
	}
	for _, line := range []string{FlushLine, strings.TrimSuffix(FlushLine, "\n"), strings.TrimSuffix(FlushLine, "\n") + "\r\n"} {
		if !IsFlush([]byte(line)) {
			t.Errorf("IsFlush(%q) = false; want true", line)
		}
	}
	for _, line := range []string{keyFlush + ":", keyFlush + ": ack?x\n", "x" + FlushLine, Ack, KeyReady + ": 1\n"} {
		if IsFlush([]byte(line)) {
			t.Errorf("IsFlush(%q) = true; want false", line)
		}
	}
	if err := w.Note(keyFlush, "ack?"); err == nil {
		t.Errorf("Note(KeyFlush) = nil; want an error (the marker is channel control, not a note)")
	}
}

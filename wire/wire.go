// Package wire is the contract between the guest program and the host, kept
// in one place so that neither side spells it on its own:
//
//   - the run plan (Plan): what the host asks of a boot, encoded as
//     lpmbisect.* kernel parameters by Plan.KernelArgs and decoded from
//     /proc/cmdline by DecodePlan, with one set of limits (Plan.Validate)
//     checked on both sides;
//   - the layout of the initramfs the guest finds its modules in
//     (ModuleDir, LoadOrderFile);
//   - the results stream: Go benchmark format (golang.org/x/perf/benchfmt)
//     lines, a few lpmbisect notes written as benchfmt configuration lines,
//     and a trailer that proves the stream is complete (Writer, Decode);
//   - the lines the host sends back on a virtio results port: Go for a
//     paced guest, Ack for the flush marker (FlushLine) that ends a stream;
//   - the names results files use: configuration keys (Key*), units and
//     accelerators (Accel).
//
// The guest links this package, so it imports nothing host-only (no SQLite,
// no plotting, no statistics): only the standard library and benchfmt.
//
// A stream looks like this:
//
//	kernel: 6.12.117+deb12-cloud-amd64
//	accel: tcg
//	channel: virtio
//	BenchmarkLPMTrie/op=lookup/keys=random/entries=10000 200000 519.3 ns/op
//	lpmbisect-unsupported: BenchmarkLPMTrie/op=free needs fentry (Linux 5.5)
//	lpmbisect-end: records=1 sha256=3f5c…
//
// The trailer carries the number of result lines and the SHA-256 of every byte
// written before the trailer line. QEMU exits 0 when the guest panics (with
// panic=-1 -no-reboot), so only a valid trailer tells the host that a boot
// delivered everything it meant to.
//
// The notes are valid benchfmt configuration lines, so a raw capture of the
// wire still parses with plain benchstat; Decode removes them from the
// results' configuration.
package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// PortName is the name of the virtio-serial port that carries results. The
// guest finds it under /sys/class/virtio-ports/*/name.
const PortName = "lpmbisect.results"

// Note keys: lpmbisect messages carried as configuration lines.
const (
	// KeyUnsupported names a benchmark the kernel cannot run and what it lacks.
	KeyUnsupported = "lpmbisect-unsupported"
	// KeyFailed names a benchmark that failed, with the error.
	KeyFailed = "lpmbisect-failed"
	// KeyInfo is free-form information for the run log (modules loaded, …).
	KeyInfo = "lpmbisect-info"
	// KeyEnd is the trailer: records=N sha256=HEX.
	KeyEnd = "lpmbisect-end"
	// KeyReady is written by a paced guest (see Go) when it stops before the
	// next step of its run plan; the text is the step's number, from 1.
	KeyReady = "lpmbisect-ready"
)

// Go is what the host sends a paced guest, on the results channel, to let it
// take its next step. A paced guest reads up to and including the newline
// and ignores the rest of the line.
const Go = "go\n"

// keyFlush is the key of the flush marker (FlushLine), the last line a guest
// writes on a virtio results port before it powers off.
const keyFlush = "lpmbisect-flush"

// FlushLine is the flush marker. A guest writes it on a virtio results port
// after its last line (the insight document, else the trailer) and then
// waits for Ack before it powers off: a virtio port's write returns once
// the data is in the virtqueue, and QEMU, throttled by a host that reads
// slowly, may still hold the last buffers there when the guest powers off
// and QEMU exits, losing them. The stream is ordered, so a host that has
// read the marker has read everything before it. The marker is written on
// the channel, not through a Writer: it is in no trailer's checksum, and
// Decode ignores it wherever it appears.
const FlushLine = keyFlush + ": ack?\n"

// IsFlush reports whether line (with or without its newline and any
// carriage return) is the flush marker.
func IsFlush(line []byte) bool {
	return string(bytes.TrimRight(line, "\r\n")) == FlushLine[:len(FlushLine)-1]
}

// Ack is what the host sends on the results channel when it has read the
// flush marker. The guest reads it as it reads Go: up to the newline.
const Ack = "ack\n"

const notePrefix = "lpmbisect-"

// Writer writes a stream. It is used by the guest; it is not safe for
// concurrent use (the guest keeps exactly one writer on the port).
type Writer struct {
	out     io.Writer
	sum     hash.Hash
	bench   *benchfmt.Writer
	records int
	ended   bool
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer {
	sum := sha256.New()
	out := io.MultiWriter(w, sum)
	return &Writer{out: w, sum: sum, bench: benchfmt.NewWriter(out)}
}

// Result writes one benchmark result, preceded by any configuration lines
// that changed since the previous result. Every configuration key of r is
// written (benchfmt only writes keys marked File, which SetConfig does not
// set). r.Name is the name without its "Benchmark" prefix, as benchfmt keeps
// it; a name given with the prefix is accepted too.
func (w *Writer) Result(r *benchfmt.Result) error {
	for i := range r.Config {
		r.Config[i].File = true
	}
	r.Name = bytes.TrimPrefix(r.Name, []byte("Benchmark"))
	if err := w.bench.Write(r); err != nil {
		return fmt.Errorf("write result %s: %w", r.Name, err)
	}
	w.records++
	return nil
}

// Note writes an lpmbisect note. key must be one of the Key* note constants.
// Newlines in text are replaced so a note is always one line.
func (w *Writer) Note(key, text string) error {
	if !strings.HasPrefix(key, notePrefix) || key == KeyEnd || key == keyFlush {
		return fmt.Errorf("write note: %q is not a note key", key)
	}
	text = strings.NewReplacer("\n", " ", "\r", " ").Replace(text)
	line := key + ": " + text + "\n"
	if _, err := io.MultiWriter(w.out, w.sum).Write([]byte(line)); err != nil {
		return fmt.Errorf("write note: %w", err)
	}
	return nil
}

// End writes the trailer. Nothing may be written after it.
func (w *Writer) End() error {
	if w.ended {
		return fmt.Errorf("write trailer: already written")
	}
	w.ended = true
	line := fmt.Sprintf("%s: records=%d sha256=%s\n", KeyEnd, w.records, hex.EncodeToString(w.sum.Sum(nil)))
	if _, err := io.WriteString(w.out, line); err != nil {
		return fmt.Errorf("write trailer: %w", err)
	}
	return nil
}

// Records returns the number of results written so far.
func (w *Writer) Records() int { return w.records }

// Note is an lpmbisect note found in a stream.
type Note struct {
	Key, Text string
}

// Stream is what Decode found in the bytes a guest sent.
type Stream struct {
	// Results are the parsed benchmark results, in order, with lpmbisect
	// notes removed from their configuration.
	Results []*benchfmt.Result
	// Notes are the lpmbisect notes (not including the trailer, the
	// ready notes of a paced guest and the flush marker).
	Notes []Note
	// Config holds the last value of each configuration key seen.
	Config map[string]string
	// Complete is true when a trailer was found whose record count and
	// checksum match what came before it.
	Complete bool
	// Problem says why the stream is not complete ("no trailer", …).
	Problem string
	// Rejected is true when a trailer proved the stream but what it says
	// cannot be taken (see vet and CheckPlan): a lying guest, not a
	// transport problem.
	Rejected bool
	// SyntaxErrors counts lines that are neither results, configuration,
	// notes nor blank: garbage on the channel.
	SyntaxErrors int
	// Insight is the compressed insight document (KeyInsight lines,
	// joined; DecodeInsight reads it), nil when none came or it was
	// malformed, and InsightProblem says why in the latter case.
	Insight        []byte
	InsightProblem string
}

// Decode parses a stream. It never fails on malformed input: what is wrong is
// reported in Stream.Problem and Stream.SyntaxErrors. Carriage returns (from
// a serial line in cooked mode) are ignored.
func Decode(data []byte) *Stream {
	s := &Stream{Config: map[string]string{}}
	sum := sha256.New()
	var body bytes.Buffer // lines for benchfmt: everything but notes
	var records int
	trailer := ""
	var insight insightLines
	rest := data
	for len(rest) > 0 {
		var line []byte
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i+1], rest[i+1:]
		} else {
			line, rest = rest, nil // unterminated final line
		}
		clean := bytes.TrimRight(bytes.ReplaceAll(line, []byte("\r"), nil), "\n")
		if trailer == "" && bytes.HasPrefix(clean, []byte(KeyEnd+":")) {
			trailer = string(clean)
			continue
		}
		if trailer != "" { // after the trailer only the insight document (Writer.Insight)
			if v, ok := bytes.CutPrefix(clean, []byte(KeyInsight+":")); ok {
				insight.add(string(v))
			}
			continue
		}
		if IsFlush(clean) {
			continue // channel control, not part of the stream
		}
		sum.Write(bytes.ReplaceAll(line, []byte("\r"), nil))
		if bytes.HasPrefix(clean, []byte(notePrefix)) {
			if k, v, ok := strings.Cut(string(clean), ":"); ok {
				if k == KeyInsight {
					continue // only after the trailer; a stray line proves nothing
				}
				if k != KeyReady { // pacing, not information
					s.Notes = append(s.Notes, Note{Key: k, Text: strings.TrimSpace(v)})
				}
				continue
			}
		}
		switch {
		case bytes.HasPrefix(clean, []byte("Benchmark")):
			records++
		case !isConfigOrBlank(clean):
			s.SyntaxErrors++ // benchfmt skips such lines silently; we count them
			continue
		}
		body.Write(clean)
		body.WriteByte('\n')
	}
	r := benchfmt.NewReader(&body, "guest")
	for r.Scan() {
		switch rec := r.Result().(type) {
		case *benchfmt.Result:
			res := rec.Clone()
			s.Results = append(s.Results, res)
			for _, c := range res.Config {
				s.Config[c.Key] = string(c.Value)
			}
		case *benchfmt.SyntaxError:
			s.SyntaxErrors++
		}
	}
	s.Insight, s.InsightProblem = insight.data, insight.problem
	switch {
	case trailer == "":
		s.Problem = "no trailer (the guest stopped before it finished)"
	default:
		want, ok := parseTrailer(trailer)
		got := hex.EncodeToString(sum.Sum(nil))
		switch {
		case !ok:
			s.Problem = "malformed trailer " + strconv.Quote(trailer)
		case want.records != records || want.records != len(s.Results):
			s.Problem = fmt.Sprintf("trailer counts %d records, stream has %d", want.records, len(s.Results))
		case want.sha256 != got:
			s.Problem = "trailer checksum does not match the stream (corrupted in transit)"
		default:
			s.Complete = true
			if why := s.vet(); why != "" {
				s.reject(why)
			}
		}
	}
	return s
}

type trailerFields struct {
	records int
	sha256  string
}

func parseTrailer(line string) (trailerFields, bool) {
	var t trailerFields
	_, v, _ := strings.Cut(line, ":")
	seen := 0
	for _, f := range strings.Fields(v) {
		k, val, ok := strings.Cut(f, "=")
		if !ok {
			return t, false
		}
		switch k {
		case "records":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				return t, false
			}
			t.records = n
			seen++
		case "sha256":
			t.sha256 = val
			seen++
		}
	}
	return t, seen == 2
}

// isConfigOrBlank reports whether line is blank or a benchfmt configuration
// line: a key starting with a lower-case letter, without spaces, then ": ".
func isConfigOrBlank(line []byte) bool {
	if len(bytes.TrimSpace(line)) == 0 {
		return true
	}
	key, _, ok := bytes.Cut(line, []byte(":"))
	if !ok || len(key) == 0 || key[0] < 'a' || key[0] > 'z' {
		return false
	}
	return bytes.IndexFunc(key, func(r rune) bool { return r == ' ' || r == '\t' || r >= 0x7f || r < 0x20 }) < 0
}

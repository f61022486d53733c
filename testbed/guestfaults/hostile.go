package guestfaults

import (
	"bytes"
	"encoding/base64"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/wire"
)

// The hostile faults make the guest lie, in a stream that otherwise
// arrives whole, so that the host's vetting of what a guest says can be
// tested with a real guest: lie tampers with the first result, liar with
// the trailer and what follows it. Each acts on the first result or on the
// end of the stream, and the host must reject the boot (wire.Decode,
// wire.Stream.CheckPlan), except HTML, whose strings it must escape
// wherever it renders them, and the insight faults, which cost the
// document and not the boot (its results are proven by the trailer before
// the document).
const (
	LieCount   = "lie-count"   // the trailer counts one record more than were written
	LieSum     = "lie-sum"     // the trailer's checksum is not the stream's
	NaN        = "nan"         // the first result's value is NaN
	Inf        = "inf"         // the first result's value is +Inf
	Negative   = "negative"    // the first result's value is negative
	Huge       = "huge"        // the first result's value is 10^300
	Unasked    = "unasked"     // the first result is for a benchmark the plan did not select
	HostKey    = "host-key"    // the first result carries the host's keys (side, params)
	BadUTF8    = "bad-utf8"    // the first result's name has invalid UTF-8
	Escape     = "escape"      // a note and the first result's name hold terminal escape sequences
	HTML       = "html"        // a note, the cpu label and the first result's name hold HTML (valid: to be escaped)
	InsightBig = "insight-big" // an insight document over wire.MaxInsightBytes follows the trailer
	InsightBad = "insight-bad" // a malformed insight document (not gzip) follows the trailer
)

// Hostile lists the hostile faults.
var Hostile = []string{LieCount, LieSum, NaN, Inf, Negative, Huge, Unasked, HostKey, BadUTF8, Escape, HTML, InsightBig, InsightBad}

// Strings the hostile faults write.
const (
	hostileEscape = "\x1b[2J\x1b]0;owned\x07"                               // clear the screen, set the window title
	hostileHTML   = `<script>alert(1)</script><img src=x onerror=alert(2)>` // in notes and labels
	hostileName   = `/x=<script>alert(1)</script>`                          // no spaces: a benchfmt name ends at one
)

// lie tampers with r, the first result of a boot, as kind says; kinds
// about the end of the stream (liar) leave it alone.
func lie(kind string, r *benchfmt.Result, note func(key, text string) error) {
	v := &r.Values[0].Value
	switch kind {
	case NaN:
		*v = math.NaN()
	case Inf:
		*v = math.Inf(1)
	case Negative:
		*v = -1 - *v
	case Huge:
		*v = 1e300
	case Unasked:
		r.Name = []byte("Unasked/op=lie")
	case HostKey:
		r.SetConfig(wire.KeySide, "B")
		r.SetConfig(wire.KeyParams, "forged")
	case BadUTF8:
		r.Name = append(r.Name, "/x=\xff\xfe"...)
	case Escape:
		r.Name = append(r.Name, "/x="+hostileEscape...)
		note(wire.KeyInfo, "escape "+hostileEscape)
	case HTML:
		r.Name = append(r.Name, hostileName...)
		r.SetConfig(wire.KeyCPU, hostileHTML)
		note(wire.KeyUnsupported, "BenchmarkHTML needs "+hostileHTML+` & "quotes" 'too'`)
	default:
		return
	}
	logf("fault %q: lying about the first result", kind)
}

// liar is the results channel of a guest with a hostile fault about the
// end of its stream: it rewrites the trailer (the wire.Writer writes it in
// one Write) or writes a hostile insight document after it. For other
// faults it is the channel itself.
type liar struct {
	io.Writer
	kind string
}

func newLiar(w io.Writer, kind string) io.Writer {
	if !slices.Contains([]string{LieCount, LieSum, InsightBig, InsightBad}, kind) {
		return w
	}
	return &liar{Writer: w, kind: kind}
}

var trailerRecords = regexp.MustCompile(`records=(\d+)`)

func (l *liar) Write(p []byte) (int, error) {
	if !bytes.HasPrefix(p, []byte(wire.KeyEnd+":")) {
		return l.Writer.Write(p)
	}
	logf("fault %q: lying at the end of the stream", l.kind)
	line := string(p)
	var after []string
	switch l.kind {
	case LieCount:
		line = trailerRecords.ReplaceAllStringFunc(line, func(m string) string {
			n, _ := strconv.Atoi(strings.TrimPrefix(m, "records="))
			return "records=" + strconv.Itoa(n+1)
		})
	case LieSum:
		i := strings.LastIndex(line, "sha256=") + len("sha256=")
		flip := map[byte]byte{'0': '1'}[line[i]]
		if flip == 0 {
			flip = '0'
		}
		line = line[:i] + string(flip) + line[i+1:]
	case InsightBig:
		chunk := wire.KeyInsight + ": " + base64.StdEncoding.EncodeToString(make([]byte, 32<<10)) + "\n"
		for range wire.MaxInsightBytes/(32<<10) + 1 {
			after = append(after, chunk)
		}
	case InsightBad:
		after = append(after, wire.KeyInsight+": "+base64.StdEncoding.EncodeToString([]byte("not a gzip stream"))+"\n")
	}
	if _, err := io.WriteString(l.Writer, line); err != nil {
		return 0, err
	}
	for _, a := range after {
		if _, err := io.WriteString(l.Writer, a); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

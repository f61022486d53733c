package agent

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

// The hostile faults (TEST-ONLY, wire.HostileFaults) make the guest lie in
// a stream that otherwise arrives whole, so that the host's vetting of
// what a guest says can be tested with a real guest: lie tampers with the
// first result, liar with the trailer and what follows it.

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
	case wire.FaultNaN:
		*v = math.NaN()
	case wire.FaultInf:
		*v = math.Inf(1)
	case wire.FaultNegative:
		*v = -1 - *v
	case wire.FaultHuge:
		*v = 1e300
	case wire.FaultUnasked:
		r.Name = []byte("Unasked/op=lie")
	case wire.FaultHostKey:
		r.SetConfig(wire.KeySide, "B")
		r.SetConfig(wire.KeyParams, "forged")
	case wire.FaultBadUTF8:
		r.Name = append(r.Name, "/x=\xff\xfe"...)
	case wire.FaultEscape:
		r.Name = append(r.Name, "/x="+hostileEscape...)
		note(wire.KeyInfo, "escape "+hostileEscape)
	case wire.FaultHTML:
		r.Name = append(r.Name, hostileName...)
		r.SetConfig(wire.KeyCPU, hostileHTML)
		note(wire.KeyUnsupported, "BenchmarkHTML needs "+hostileHTML+` & "quotes" 'too'`)
	default:
		return
	}
	logf("TEST-ONLY fault %q: lying about the first result", kind)
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
	if !slices.Contains([]string{wire.FaultLieCount, wire.FaultLieSum, wire.FaultInsightBig, wire.FaultInsightBad}, kind) {
		return w
	}
	return &liar{Writer: w, kind: kind}
}

var trailerRecords = regexp.MustCompile(`records=(\d+)`)

func (l *liar) Write(p []byte) (int, error) {
	if !bytes.HasPrefix(p, []byte(wire.KeyEnd+":")) {
		return l.Writer.Write(p)
	}
	logf("TEST-ONLY fault %q: lying at the end of the stream", l.kind)
	line := string(p)
	var after []string
	switch l.kind {
	case wire.FaultLieCount:
		line = trailerRecords.ReplaceAllStringFunc(line, func(m string) string {
			n, _ := strconv.Atoi(strings.TrimPrefix(m, "records="))
			return "records=" + strconv.Itoa(n+1)
		})
	case wire.FaultLieSum:
		i := strings.LastIndex(line, "sha256=") + len("sha256=")
		flip := map[byte]byte{'0': '1'}[line[i]]
		if flip == 0 {
			flip = '0'
		}
		line = line[:i] + string(flip) + line[i+1:]
	case wire.FaultInsightBig:
		chunk := wire.KeyInsight + ": " + base64.StdEncoding.EncodeToString(make([]byte, 32<<10)) + "\n"
		for range wire.MaxInsightBytes/(32<<10) + 1 {
			after = append(after, chunk)
		}
	case wire.FaultInsightBad:
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

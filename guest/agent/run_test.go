package agent

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/wire"
)

// noBenchmarkPlan is a plan that selects no benchmark, so that a boot's
// phases run in a test process without BPF.
func noBenchmarkPlan() wire.Plan {
	plan := wire.DefaultPlan()
	plan.Bench = "^NoSuchBenchmark$"
	return plan
}

// runBoot runs b's phases after the channel (boot.run) on a fake port and
// returns run's error, the bytes the host read and the host.
func runBoot(t *testing.T, b *boot) (error, []byte, *fakeHost) {
	t.Helper()
	c, host := port(t, false)
	b.ch = c
	h := serve(host, nil)
	err := b.run()
	return err, h.wait(t), h
}

// lastLines returns the last n lines of a stream.
func lastLines(stream []byte, n int) []string {
	lines := strings.Split(strings.TrimSuffix(string(stream), "\n"), "\n")
	return lines[max(0, len(lines)-n):]
}

// checkFlushedLast checks that the flush marker is the stream's last line,
// written once, and acked.
func checkFlushedLast(t *testing.T, stream []byte, h *fakeHost) {
	t.Helper()
	if last := lastLines(stream, 1); last[0]+"\n" != wire.FlushLine || h.flushes != 1 || h.afterFlush != 0 {
		t.Errorf("stream ends %q with %d flush markers and %d bytes after the first; want the one flush marker last", last, h.flushes, h.afterFlush)
	}
}

// TestBootNoBenchmark runs a boot whose plan selects nothing: a failed
// note, the info notes after it, a trailer that proves the stream, and the
// flush marker acked by the host after everything.
func TestBootNoBenchmark(t *testing.T) {
	b := &boot{plan: noBenchmarkPlan(), infos: []string{"modules loaded: virtio_console"}}
	err, stream, h := runBoot(t, b)
	if err != nil {
		t.Errorf("run() = %v; want nil (the failed note went out)", err)
	}
	s := wire.Decode(stream)
	if !s.Complete || len(s.Results) != 0 || s.SyntaxErrors != 0 {
		t.Errorf("Decode: complete %v (%s), %d results, %d syntax errors; want a complete stream of no results", s.Complete, s.Problem, len(s.Results), s.SyntaxErrors)
	}
	want := []wire.Note{
		{Key: wire.KeyFailed, Text: "no benchmark matches lpmbisect.bench=^NoSuchBenchmark$"},
		{Key: wire.KeyInfo, Text: "modules loaded: virtio_console"},
	}
	if fmt.Sprint(s.Notes) != fmt.Sprint(want) {
		t.Errorf("notes %q; want %q", s.Notes, want)
	}
	if end := lastLines(stream, 2)[0]; !strings.HasPrefix(end, wire.KeyEnd+": records=0 sha256=") {
		t.Errorf("line before the flush marker %q; want the trailer of 0 records", end)
	}
	checkFlushedLast(t, stream, h)
}

// TestBootPlanError checks that a plan that could not be decoded runs
// nothing and says why in the stream, which still ends well.
func TestBootPlanError(t *testing.T) {
	planErr := errors.New("kernel command line: lpmbisect.samples=0: out of range")
	b := &boot{plan: wire.DefaultPlan(), planErr: planErr}
	err, stream, h := runBoot(t, b)
	if !errors.Is(err, planErr) {
		t.Errorf("run() = %v; want the plan's error", err)
	}
	s := wire.Decode(stream)
	want := []wire.Note{{Key: wire.KeyFailed, Text: planErr.Error()}}
	if !s.Complete || fmt.Sprint(s.Notes) != fmt.Sprint(want) {
		t.Errorf("Decode: complete %v (%s), notes %q; want a complete stream with %q", s.Complete, s.Problem, s.Notes, want)
	}
	checkFlushedLast(t, stream, h)
}

// TestBootPaced checks that a paced boot takes its last step (the ready
// note the host answers with go) before its trailer.
func TestBootPaced(t *testing.T) {
	plan := noBenchmarkPlan()
	plan.Paced = true
	err, stream, h := runBoot(t, &boot{plan: plan})
	if err != nil {
		t.Errorf("run() = %v; want nil", err)
	}
	if fmt.Sprint(h.readies) != "[1]" {
		t.Errorf("ready notes for steps %v; want [1], the last step", h.readies)
	}
	end := lastLines(stream, 3)
	if end[0] != wire.KeyReady+": 1" || !strings.HasPrefix(end[1], wire.KeyEnd+":") {
		t.Errorf("stream ends %q; want the ready note, the trailer, the flush marker", end)
	}
	if s := wire.Decode(stream); !s.Complete {
		t.Errorf("Decode: %s; want a complete stream", s.Problem)
	}
	checkFlushedLast(t, stream, h)
}

// TestBootInsightAfterTrailer checks that the insight document follows
// the trailer, outside its checksum, and comes before the flush marker.
func TestBootInsightAfterTrailer(t *testing.T) {
	plan := noBenchmarkPlan()
	plan.Insight, plan.SkipKallsyms = wire.InsightOn, true
	err, stream, h := runBoot(t, &boot{plan: plan})
	if err != nil {
		t.Errorf("run() = %v; want nil", err)
	}
	s := wire.Decode(stream)
	if !s.Complete || s.Insight == nil {
		t.Fatalf("Decode: complete %v (%s), insight %d bytes (%s); want both", s.Complete, s.Problem, len(s.Insight), s.InsightProblem)
	}
	doc, derr := wire.DecodeInsight(s.Insight)
	if derr != nil || doc.Kernel != kernelRelease() || doc.Kallsyms != "" {
		t.Errorf("DecodeInsight = kernel %q, %d bytes of kallsyms, %v; want this kernel's release and no kallsyms", doc.Kernel, len(doc.Kallsyms), derr)
	}
	end := lastLines(stream, 2)
	if !strings.HasPrefix(end[0], wire.KeyInsight+":") {
		t.Errorf("line before the flush marker %q; want the insight document's", end[0])
	}
	checkFlushedLast(t, stream, h)
}

// TestResultsInTrailer checks that results written through the guest's
// output are counted and summed by the trailer, and that a stream changed
// in transit is no longer proven by it.
func TestResultsInTrailer(t *testing.T) {
	var stream bytes.Buffer
	w := wire.NewWriter(&stream)
	for i := range 3 {
		r := &benchfmt.Result{Name: []byte("LPMTrie/op=lookup"), Iters: 50000, Values: []benchfmt.Value{{Value: float64(800 + i), Unit: "insn/op"}}}
		r.SetConfig(wire.KeyKernel, "6.12.117")
		if err := w.Result(r); err != nil {
			t.Fatal(err)
		}
	}
	w.Note(wire.KeyInfo, "between results and trailer")
	if err := w.End(); err != nil {
		t.Fatal(err)
	}
	s := wire.Decode(stream.Bytes())
	if !s.Complete || len(s.Results) != 3 {
		t.Fatalf("Decode: complete %v (%s), %d results; want 3 results proven by the trailer", s.Complete, s.Problem, len(s.Results))
	}
	for i, r := range s.Results {
		if got, want := r.Values[0].Value, float64(800+i); got != want {
			t.Errorf("result %d = %g; want %g", i, got, want)
		}
	}
	bad := bytes.Replace(stream.Bytes(), []byte(" 800"), []byte(" 900"), 1)
	if wire.Decode(bad).Complete {
		t.Errorf("a stream changed in transit decodes as complete")
	}
}

// TestFlushAfterBrokenStream checks that the flush phase runs, and closes
// the channel, when the stream could not be written: the host gone.
func TestFlushAfterBrokenStream(t *testing.T) {
	c, host := port(t, false)
	go func() {
		bufio.NewReader(host).ReadString('\n')
		host.Close()
	}()
	b := &boot{plan: wire.DefaultPlan(), planErr: errors.New("bad plan"), ch: c}
	err := b.run()
	if err == nil || !strings.Contains(err.Error(), "drain port") {
		t.Errorf("run(host gone) = %v; want the drain's error", err)
	}
	if _, werr := c.Write([]byte("x")); werr == nil {
		t.Error("the channel is still open after run; want it closed by the flush phase")
	}
}

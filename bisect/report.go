package bisect

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lpmbisect/lpmbisect/compare"
	"github.com/lpmbisect/lpmbisect/insight"
	"github.com/lpmbisect/lpmbisect/internal/cachefile"
	"github.com/lpmbisect/lpmbisect/internal/words"
	"github.com/lpmbisect/lpmbisect/kernel"
	"github.com/lpmbisect/lpmbisect/report"
	"github.com/lpmbisect/lpmbisect/view"
)

// Report is a finished bisection for people: the culprit, the effect, the
// re-check, the confidence and every step (package report renders it).
type Report struct {
	State  *State
	Result *Result
}

// Culprit names what the bisection found, in one line.
func (r Report) Culprit() string {
	res, s := r.Result, r.State
	what := "first bad"
	if s.Reverse {
		what = "first improved"
	}
	switch {
	case res.FirstBad != "" && s.Kind == KindImages:
		return fmt.Sprintf("%s kernel: #%d %s", what, res.Index+1, res.FirstBad)
	case res.FirstBad != "":
		return fmt.Sprintf("%s commit: %s %s", what, res.FirstBad, res.Subject)
	case len(res.Range) > 0:
		names := make([]string, len(res.Range))
		for i, c := range res.Range {
			names[i] = words.ShortHash(c)
			if s.Kind == KindImages {
				names[i] = filepath.Base(c)
			}
		}
		return fmt.Sprintf("no single culprit: skipped steps leave %d candidates: %s", len(res.Range), strings.Join(names, " "))
	}
	return "no result"
}

// Verdict is "confirmed", "suspect: …" or "not re-checked".
func (r Report) Verdict() string {
	rc := r.Result.Recheck
	switch {
	case r.Result.FirstBad == "":
		return "inconclusive"
	case rc == nil:
		return "not re-checked"
	case rc.SameImage:
		return "suspect: " + rc.Note
	case rc.Confirmed:
		return "confirmed by the re-check"
	}
	return fmt.Sprintf("suspect: the re-check did not confirm it (parent %s, culprit %s against the endpoints)", rc.Parent.Class, rc.Culprit.Class)
}

// ErrInconclusive is wrapped by Outcome when a bisection found no culprit
// to stand by.
var ErrInconclusive = errors.New("inconclusive")

// Outcome is nil when the bisection found its culprit (Result.Found: the
// first bad, confirmed by the re-check when there was one), else an error
// wrapping ErrInconclusive with the verdict.
func (r Report) Outcome() error {
	if r.Result.Found() {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInconclusive, r.Verdict())
}

// View is the report as package report renders it; recheckHTML names the
// page of the re-check's comparison ("" for none).
func (r Report) View(recheckHTML string) report.Bisection {
	s, res := r.State, r.Result
	v := report.Bisection{
		Culprit: r.Culprit(), Verdict: r.Verdict(), Confidence: res.Confidence, RecheckP: -1,
		Measured: res.Measured, Images: s.Kind == KindImages, StatePath: s.Path(), LogPath: s.LogPath(),
		RecheckHTML: recheckHTML,
	}
	if s.Effect != nil {
		for _, row := range s.Effect.Rows {
			if !row.Control {
				v.Effect = append(v.Effect, viewRow(row))
			}
			v.Instructions = v.Instructions || row.Unit == compare.UnitInstructions
		}
		for _, k := range s.Effect.Drift {
			v.Drift = append(v.Drift, k.String())
		}
	}
	if rc := res.Recheck; rc != nil && !rc.SameImage {
		for _, row := range rc.Rows {
			if !row.Control {
				v.Recheck = append(v.Recheck, viewRow(row))
			}
		}
		if len(rc.Rows) > 0 {
			v.RecheckP = 0
			for _, row := range rc.Rows {
				if isSignal(s.Effect, row.RowKey) {
					v.RecheckP = max(v.RecheckP, row.PValue())
				}
			}
		}
	}
	for _, st := range s.Steps {
		what := fmt.Sprintf("#%d %s", st.Index+1, filepath.Base(st.Kernel))
		if st.Commit != "" {
			what = words.ShortHash(st.Commit) + " " + st.Subject
		}
		v.Steps = append(v.Steps, report.BisectionStep{N: st.N, What: what, Image: words.ShortHash(st.Image), Boots: st.Verdict.Boots,
			Class: st.Verdict.Class.String(), Reason: st.Verdict.Reason, LogLine: FormatStep(st)})
	}
	return v
}

func viewRow(r EffectRow) report.BisectionRow {
	return report.BisectionRow{Benchmark: r.Benchmark, Unit: r.Unit, A: r.A, B: r.B, DeltaPct: r.DeltaPct, Verdict: r.Verdict,
		P: r.PValue(), BootsA: r.BootsA, BootsB: r.BootsB, Comparison: r.Comparison.String()}
}

func isSignal(e *Effect, k RowKey) bool {
	return e != nil && slices.Contains(e.Signal, k)
}

// Reports are the finished bisection's report files, all in the state
// directory: <state>.report.txt, <state>.report.html and, beside every
// HTML page, <page>.recheck.html with compare's report of the parent
// against the culprit.
type Reports struct {
	Text string   // the text report's file
	HTML []string // the HTML pages written
	// RecheckErr says why there is no comparison report of the re-check
	// (nil when there is one, or no re-check).
	RecheckErr error
}

// WriteReports writes the report as text to w and to the state directory,
// and as HTML to the state directory and to each of extraHTML, with the
// re-check's comparison (measured by b, described by run: accelerator,
// samples, command) on a page beside each.
func (r Report) WriteReports(w io.Writer, b *Bench, run view.Meta, extraHTML ...string) (*Reports, error) {
	base := strings.TrimSuffix(r.State.Path(), ".json")
	out := &Reports{Text: base + ".report.txt", HTML: append([]string{base + ".report.html"}, extraHTML...)}
	recheck, meta, err := b.recheckComparison(r.State, r.Result, run)
	out.RecheckErr = err
	var text bytes.Buffer
	view := r.View("")
	view.Insight = meta.Insight
	if err := report.WriteBisectionText(&text, view); err != nil {
		return out, err
	}
	if _, err := w.Write(text.Bytes()); err != nil {
		return out, err
	}
	if err := cachefile.WriteBytes(out.Text, text.Bytes()); err != nil {
		return out, fmt.Errorf("bisection report: %w", err)
	}
	for _, page := range out.HTML {
		name := ""
		if recheck != nil {
			name = strings.TrimSuffix(filepath.Base(page), ".html") + ".recheck.html"
			if err := cachefile.WriteAtomic(filepath.Join(filepath.Dir(page), name), func(w io.Writer) error { return report.WriteHTML(w, recheck, meta) }); err != nil {
				return out, fmt.Errorf("re-check report: %w", err)
			}
		}
		view := r.View(name)
		view.Insight = meta.Insight
		if err := cachefile.WriteAtomic(page, func(w io.Writer) error { return report.WriteBisectionHTML(w, view) }); err != nil {
			return out, fmt.Errorf("bisection report: %w", err)
		}
	}
	return out, nil
}

// recheckComparison compares the parent and the culprit from their stored
// results, as lpmbisect compare would: nil when there was no re-check.
func (b *Bench) recheckComparison(st *State, res *Result, run view.Meta) (*compare.Report, view.Meta, error) {
	if res.FirstBad == "" || res.Recheck == nil || res.Recheck.SameImage {
		return nil, run, nil
	}
	parent := Candidate{Input: res.Parent, Label: "parent " + filepath.Base(res.Parent)}
	culprit := Candidate{Input: res.FirstBad, Label: "culprit " + filepath.Base(res.FirstBad)}
	if st.Kind != KindImages {
		pb, cb := st.Kernels[res.Parent], st.Kernels[res.FirstBad]
		if pb == nil || cb == nil {
			return nil, run, fmt.Errorf("the state has no kernels for %s and its parent", words.ShortHash(res.FirstBad))
		}
		parent = Candidate{Input: pb.Kernel, Label: "parent " + words.ShortHash(res.Parent)}
		culprit = Candidate{Input: cb.Kernel, Label: "culprit " + words.ShortHash(res.FirstBad)}
	}
	rep, pk, ck, err := b.CompareStored(parent, culprit)
	if err != nil {
		return nil, run, err
	}
	run.A = view.KernelInfo{Input: parent.Input, Release: parent.Label, SHA256: pk.SHA256}
	run.B = view.KernelInfo{Input: culprit.Input, Release: culprit.Label, SHA256: ck.SHA256}
	run.Insight = recheckInsight(pk, ck)
	return rep, run, nil
}

// recheckInsight is the insight block of the parent against the culprit
// from their images and, where the build's vmlinux is there
// (kernel.BuildVmlinux), exact sizes.
func recheckInsight(parent, culprit *kernel.Kernel) *insight.Diff {
	var opts insight.Options
	load := func(k *kernel.Kernel) *insight.Side {
		return insight.Load(insight.Input{Image: k.Image, Vmlinux: kernel.BuildVmlinux(k.Image)}, opts)
	}
	return insight.Compare(load(parent), load(culprit), opts)
}

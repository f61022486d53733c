package bisect

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/internal/words"
	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// Report is a finished bisection for people: the culprit, the effect, the
// re-check, the confidence and every step (package report renders it).
type Report struct {
	State  *campaign.State
	Result *campaign.Result
}

// Culprit names what the bisection found, in one line.
func (r Report) Culprit() string {
	res, s := r.Result, r.State
	what := "first bad"
	if s.Reverse {
		what = "first improved"
	}
	switch {
	case res.FirstBad != "" && s.Kind == campaign.KindImages:
		return fmt.Sprintf("%s kernel: #%d %s", what, res.Index+1, res.FirstBad)
	case res.FirstBad != "":
		return fmt.Sprintf("%s commit: %s %s", what, res.FirstBad, res.Subject)
	case len(res.Range) > 0:
		names := make([]string, len(res.Range))
		for i, c := range res.Range {
			names[i] = words.ShortHash(c)
			if s.Kind == campaign.KindImages {
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
// page of the re-check's comparison ("" for none, RecheckPage for the
// page beside an HTML report).
func (r Report) View(recheckHTML string) view.Bisection {
	s, res := r.State, r.Result
	v := view.Bisection{
		Culprit: r.Culprit(), Verdict: r.Verdict(), Confidence: res.Confidence, RecheckP: -1,
		Measured: res.Measured, Images: s.Kind == campaign.KindImages, StatePath: s.Path(), LogPath: s.LogPath(),
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
		for _, k := range s.Effect.Harness {
			v.Harness = append(v.Harness, k.String())
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
		v.Steps = append(v.Steps, view.BisectionStep{N: st.N, What: what, Image: words.ShortHash(st.Image), Boots: st.Verdict.Boots,
			Class: st.Verdict.Class.String(), Reason: st.Verdict.Reason, LogLine: campaign.FormatStep(st)})
	}
	return v
}

func viewRow(r campaign.EffectRow) view.BisectionRow {
	return view.BisectionRow{Benchmark: r.Benchmark, Unit: r.Unit, A: r.A, B: r.B, DeltaPct: r.DeltaPct, Verdict: r.Verdict,
		P: r.PValue(), BootsA: r.BootsA, BootsB: r.BootsB, Comparison: r.Comparison.String()}
}

func isSignal(e *campaign.Effect, k campaign.RowKey) bool {
	return e != nil && slices.Contains(e.Signal, k)
}

// Reports are the finished bisection's report files, all in the state
// directory but for HTML pages asked for elsewhere: <state>.report.txt,
// <state>.report.html and, beside every HTML page, RecheckPage with
// compare's report of the parent against the culprit. The caller renders
// them (package report) and writes them.
type Reports struct {
	Text string   // the text report's file
	HTML []string // the HTML pages: the state directory's, then extraHTML
}

// Files names the report files of r, with extraHTML as more HTML pages.
func (r Report) Files(extraHTML ...string) Reports {
	base := strings.TrimSuffix(r.State.Path(), ".json")
	return Reports{Text: base + ".report.txt", HTML: append([]string{base + ".report.html"}, extraHTML...)}
}

// RecheckPage names the page beside the HTML page page that holds
// compare's report of the re-check: <page>.recheck.html, relative to
// page's directory, as the bisection page links it.
func RecheckPage(page string) string {
	return strings.TrimSuffix(filepath.Base(page), ".html") + ".recheck.html"
}

// Recheck compares the parent and the culprit from their stored results,
// as lpmbisect compare would, and describes that comparison's run as its
// report shows it: the accelerator and samples the bisection measured
// with, the two kernels, the insight block of the parent against the
// culprit (with what their guests' passes found in the re-check when
// Bench.Insight asked for them, else KernelInsight) and the time; the
// caller adds the command. The
// report is nil when there was no re-check; an error says why there is no
// report of one, and leaves the description of the run without kernels.
func (s *Bisector) Recheck(r Report) (*compare.Report, view.Meta, error) {
	run := view.Meta{Accel: string(s.Measure.Accel), Samples: s.Measure.Plan.Samples, Date: time.Now()}
	st, res := r.State, r.Result
	if res.FirstBad == "" || res.Recheck == nil || res.Recheck.SameImage {
		return nil, run, nil
	}
	parent := campaign.Candidate{Input: res.Parent, Label: "parent " + filepath.Base(res.Parent)}
	culprit := campaign.Candidate{Input: res.FirstBad, Label: "culprit " + filepath.Base(res.FirstBad)}
	if st.Kind != campaign.KindImages {
		pb, cb := st.Kernels[res.Parent], st.Kernels[res.FirstBad]
		if pb == nil || cb == nil {
			return nil, run, fmt.Errorf("the state has no kernels for %s and its parent", words.ShortHash(res.FirstBad))
		}
		parent = campaign.Candidate{Input: pb.Kernel, Label: "parent " + words.ShortHash(res.Parent)}
		culprit = campaign.Candidate{Input: cb.Kernel, Label: "culprit " + words.ShortHash(res.FirstBad)}
	}
	rep, pk, ck, err := s.Bench.CompareStored(parent, culprit)
	if err != nil {
		return nil, run, err
	}
	run.A = view.KernelInfo{Input: parent.Input, Release: parent.Label, SHA256: pk.SHA256}
	run.B = view.KernelInfo{Input: culprit.Input, Release: culprit.Label, SHA256: ck.SHA256}
	run.Insight = s.Bench.Store.InsightDiff(s.Bench.Insight, pk, ck)
	measure.AttributeTimed(run.Insight, rep)
	return rep, run, nil
}

package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// historyDocumentVersion is the version of HistoryDocument's layout. It
// changes only when a field changes meaning or goes away; new fields keep
// it.
const historyDocumentVersion = 1

// HistoryDocument is the JSON form of a History (writeHistoryJSON), stable
// for tools: a dashboard or a bot reads it without importing package
// history. Series are in the caller's order; nights and their rows by date
// and metric; change points by night, benchmark and line. Numbers that can
// be undefined (an interval with too few boots, a ratio without a
// reference) are pointers and encode as null: JSON has no NaN or Inf.
// Verdicts are "SAME", "DIFFERENT" or "UNKNOWN"; night statuses, change
// statuses, lines and bisection states are package history's names.
type HistoryDocument struct {
	Version int         `json:"version"` // historyDocumentVersion
	Series  []SeriesDoc `json:"series"`
	// Paging is set when each series' nights are one page of them
	// (lpmbisect serve's JSON); absent when they are all there.
	Paging *PagingDoc `json:"paging,omitempty"`
}

// PagingDoc says which page of each series' nights a document holds:
// page Page (from 1, the newest nights) of PerPage nights, of Pages, and
// the URLs of the newer and older pages (absent at either end).
type PagingDoc struct {
	Page    int    `json:"page"`
	PerPage int    `json:"per_page"`
	Pages   int    `json:"pages"`
	Newer   string `json:"newer,omitempty"`
	Older   string `json:"older,omitempty"`
}

// SeriesDoc is one series of a HistoryDocument.
type SeriesDoc struct {
	Name string `json:"name"`
	// Kind is "git" (Source is a tree, Branch its branch) or "images"
	// (Source is a directory or list file of prebuilt kernels).
	Kind      string `json:"kind"`
	Source    string `json:"source"`
	Branch    string `json:"branch,omitempty"`
	Reference string `json:"reference"` // the reference kernel input
	Bench     string `json:"bench,omitempty"`
	Accel     string `json:"accel,omitempty"`
	// Nights are every night, failed ones included, by date; under
	// HistoryDocument.Paging the page's nights, NightsTotal of them in all.
	Nights      []NightDoc `json:"nights"`
	NightsTotal int        `json:"nights_total,omitempty"`
	// ChangePoints are every change point, withdrawn ones included.
	ChangePoints []ChangePointDoc `json:"change_points"`
	// Excursions are the nights, per metric and line, that lay far from
	// the nights on both sides of them and that the change points leave
	// out, by night, benchmark and line; absent when there are none.
	Excursions []ExcursionDoc `json:"excursions,omitempty"`
}

// NightDoc is one night of a series.
type NightDoc struct {
	Date string `json:"date"` // YYYY-MM-DD
	// Status is measured, no-change, build-failed, boot-failed,
	// inconclusive, infrastructure-failed or running (not finished).
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"` // why the night failed
	Note   string `json:"note,omitempty"`
	// Tip is the kernel measured (or that failed); Reference the reference
	// as measured that night.
	Tip       KernelDoc `json:"tip"`
	Reference KernelDoc `json:"reference"`
	// The measuring environment.
	Accel       string    `json:"accel,omitempty"`
	QEMUVersion string    `json:"qemu_version,omitempty"`
	CPUModel    string    `json:"cpu_model,omitempty"`
	Host        string    `json:"host,omitempty"`
	ToolVersion string    `json:"lpmbisect_version,omitempty"`
	Started     time.Time `json:"started,omitzero"`
	Finished    time.Time `json:"finished,omitzero"`
	// Rows are the night's benchmarks, by benchmark and unit; none for a
	// night without results.
	Rows []NightRowDoc `json:"rows"`
	// Insight is the insight block stored with the night, on a night's
	// own page (lpmbisect serve); absent elsewhere and for a night without
	// one.
	Insight *NightInsightDoc `json:"insight,omitempty"`
}

// NightInsightDoc is a night's insight block: Against says what side A
// is, Block is compare's JSON insight block.
type NightInsightDoc struct {
	Against string          `json:"against"`
	Block   InsightDocument `json:"block"`
}

// KernelDoc identifies a kernel; a prebuilt image has no commit.
type KernelDoc struct {
	Commit      string `json:"commit,omitempty"`
	Subject     string `json:"subject,omitempty"`
	ImageSHA256 string `json:"image_sha256,omitempty"`
	Release     string `json:"release,omitempty"`
	Compiler    string `json:"compiler,omitempty"`
	ConfigHash  string `json:"config_hash,omitempty"`
}

// NightRowDoc is one benchmark on one night.
type NightRowDoc struct {
	Benchmark string `json:"benchmark"`
	Unit      string `json:"unit"` // benchfmt's: ns/op is "sec/op"
	// Control is set for a control benchmark (compare.defaultControls).
	Control   bool        `json:"control"`
	Tip       EstimateDoc `json:"tip"`
	Reference EstimateDoc `json:"reference"`
	// Ratio is tip.center / reference.center: the kernel line.
	Ratio *float64 `json:"ratio"`
	// VsPrevious compares the tip with the last measured tip, VsReference
	// with the reference; null when not compared.
	VsPrevious  *ComparisonDoc `json:"vs_previous"`
	VsReference *ComparisonDoc `json:"vs_reference"`
}

// EstimateDoc is one side's centre and confidence interval on one night.
type EstimateDoc struct {
	Center *float64 `json:"center"`
	Lo     *float64 `json:"lo"`
	Hi     *float64 `json:"hi"`
	Boots  int      `json:"boots"`
}

// ComparisonDoc is one verdict of a night.
type ComparisonDoc struct {
	Verdict  compare.Verdict `json:"verdict"`
	DeltaPct *float64        `json:"delta_pct"`
	P        *float64        `json:"p"`
	// Direction is set for a DIFFERENT verdict: "worse", "better" or
	// "changed" (a unit without a known direction), by the unit and the
	// sign of the change.
	Direction string `json:"direction,omitempty"`
}

// ChangePointDoc is one change point.
type ChangePointDoc struct {
	ID        int64  `json:"id"` // what history ack takes
	Benchmark string `json:"benchmark"`
	Unit      string `json:"unit"`
	Control   bool   `json:"control"`
	// Line is "kernel" (the tip over the reference) or "host" (the
	// reference alone: the host or harness moved).
	Line string `json:"line"`
	// Night is the first night after the step, BeforeNight the last one
	// before it; BeforeCommit and AfterCommit their tips (git series).
	Night        string   `json:"night"`
	BeforeNight  string   `json:"before_night"`
	BeforeCommit string   `json:"before_commit,omitempty"`
	AfterCommit  string   `json:"after_commit,omitempty"`
	DeltaPct     *float64 `json:"delta_pct"`
	P            *float64 `json:"p"`
	// Direction is "worse", "better" or "changed" (a unit without a known
	// direction), by the unit and the sign of the change.
	Direction string `json:"direction"`
	// Provisional: the next nights may still withdraw it.
	Provisional bool `json:"provisional"`
	// Status is open (nobody has triaged it), acknowledged, invalid,
	// muted or withdrawn: the states history ack and the served pages
	// set, by the same names.
	Status        string       `json:"status"`
	FirstReported time.Time    `json:"first_reported,omitzero"`
	Updated       time.Time    `json:"updated,omitzero"`
	Mailed        time.Time    `json:"mailed,omitzero"`
	Bisect        BisectionDoc `json:"bisect"`
	// Headline is changePointHeadline's line, Range the commit or image
	// range and Outcome the bisection in words, as the text report says
	// them.
	Headline string `json:"headline"`
	Range    string `json:"range"`
	Outcome  string `json:"outcome"`
	// Triage is the change point's audit log, oldest first: every state a
	// person set (history ack, lpmbisect serve), by whom, when and why;
	// absent when nobody triaged it.
	Triage []TriageDoc `json:"triage,omitempty"`
}

// TriageDoc is one triage decision of the audit log.
type TriageDoc struct {
	// Action is the state it set (open, acknowledged, invalid, muted) or
	// bisect; older audit logs' "untriaged" reads as open.
	Action       string    `json:"action"`
	StatusBefore string    `json:"status_before"`
	StatusAfter  string    `json:"status_after"`
	Comment      string    `json:"comment,omitempty"`
	Who          string    `json:"who"`
	At           time.Time `json:"at"`
}

func triageDocs(log []history.Triage, id int64) []TriageDoc {
	var out []TriageDoc
	for _, t := range log {
		if t.ChangePointID == id {
			out = append(out, TriageDoc{Action: string(t.Action), StatusBefore: string(t.StatusBefore), StatusAfter: string(t.StatusAfter),
				Comment: t.Comment, Who: t.Who, At: t.At})
		}
	}
	return out
}

// BisectionDoc is the automatic bisection of a change point.
type BisectionDoc struct {
	// State is "none" (not started), "requested" (a person asked; the
	// next nightly run bisects it), "running", "found" (Culprit and
	// Subject name the commit), "failed" or "skipped" (Reason says why).
	State   string `json:"state"`
	Culprit string `json:"culprit,omitempty"`
	Subject string `json:"subject,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

func kernelDoc(k history.Kernel) KernelDoc {
	return KernelDoc{Commit: k.Commit, Subject: k.Subject, ImageSHA256: k.ImageSHA256, Release: k.Release, Compiler: k.Compiler, ConfigHash: k.ConfigHash}
}

func estimateDoc(e history.Estimate) EstimateDoc {
	return EstimateDoc{Center: finite(e.Center), Lo: finite(e.Lo), Hi: finite(e.Hi), Boots: e.Boots}
}

func comparisonDoc(c *history.Comparison, unit string) *ComparisonDoc {
	if c == nil {
		return nil
	}
	d := &ComparisonDoc{Verdict: c.Verdict, DeltaPct: finite(c.DeltaPct), P: finite(c.P)}
	if c.Verdict == compare.Different {
		d.Direction = direction(unit, c.DeltaPct)
	}
	return d
}

// NewHistoryDocument converts a history to its JSON form.
func NewHistoryDocument(h view.History) HistoryDocument {
	d := HistoryDocument{Version: historyDocumentVersion, Series: []SeriesDoc{}}
	for _, hs := range h.Series {
		v := newSeriesView(hs)
		s := v.series
		sd := SeriesDoc{Name: s.Name, Kind: string(s.Kind), Source: s.Source, Branch: s.Branch, Reference: s.Reference,
			Bench: s.Bench, Accel: s.Accel, Nights: []NightDoc{}, ChangePoints: []ChangePointDoc{}}
		for _, n := range v.nights {
			nd := NightDoc{Date: n.Date, Status: string(n.Status), Reason: n.Reason, Note: n.Note,
				Tip: kernelDoc(n.Tip), Reference: kernelDoc(n.Reference),
				Accel: n.Accel, QEMUVersion: n.QEMUVersion, CPUModel: n.CPUModel, Host: n.Host, ToolVersion: n.ToolVersion,
				Started: n.Started, Finished: n.Finished, Rows: []NightRowDoc{}}
			for _, r := range v.rows[n.Date] {
				nd.Rows = append(nd.Rows, NightRowDoc{Benchmark: r.Benchmark, Unit: r.Unit, Control: compare.IsControl(r.Benchmark, nil),
					Tip: estimateDoc(r.Tip), Reference: estimateDoc(r.Reference), Ratio: finite(r.Ratio),
					VsPrevious: comparisonDoc(r.VsPrevious, r.Unit), VsReference: comparisonDoc(r.VsReference, r.Unit)})
			}
			if in, ok := hs.Insight[n.Date]; ok && in.Diff != nil {
				nd.Insight = &NightInsightDoc{Against: in.Against, Block: newInsightDocument(in.Diff)}
			}
			sd.Nights = append(sd.Nights, nd)
		}
		for _, cp := range v.changes {
			sd.ChangePoints = append(sd.ChangePoints, ChangePointDoc{
				ID: cp.ID, Benchmark: cp.Benchmark, Unit: cp.Unit, Control: compare.IsControl(cp.Benchmark, nil), Line: string(cp.Line),
				Night: cp.Night, BeforeNight: cp.BeforeNight, BeforeCommit: cp.BeforeCommit, AfterCommit: cp.AfterCommit,
				DeltaPct: finite(cp.DeltaPct), P: finite(cp.P), Direction: direction(cp.Unit, cp.DeltaPct),
				Provisional: cp.Provisional, Status: string(cp.Status),
				FirstReported: cp.FirstReported, Updated: cp.Updated, Mailed: cp.Mailed,
				Bisect: BisectionDoc{State: cmp.Or(string(cp.Bisect.State), "none"), Culprit: cp.Bisect.Culprit,
					Subject: cp.Bisect.Subject, Reason: cp.Bisect.Reason},
				Headline: changePointHeadline(s.Name, cp), Range: v.changeRange(cp), Outcome: bisectLine(cp),
				Triage: triageDocs(hs.Triage, cp.ID),
			})
		}
		sd.Excursions = v.excursionDocs()
		d.Series = append(d.Series, sd)
	}
	return d
}

// writeHistoryJSON writes the history as one indented JSON document
// (HistoryDocument).
func writeHistoryJSON(w io.Writer, h view.History) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(NewHistoryDocument(h)); err != nil {
		return fmt.Errorf("report: encode history JSON: %w", err)
	}
	return nil
}

package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// Document is the JSON form of a report. It is flat and self-describing so
// that tools (a nightly dashboard, a bot posting to a list) need not import
// package compare. Numbers that can be infinite or undefined (an interval
// with too few boots, a change against a zero centre) are pointers and
// encode as null: JSON has no Inf or NaN.
//
// A paired report (see "Pairs" in package compare) sets "paired": true, each
// row's "pairs" and each boot's "pair"; unpaired documents leave these
// fields out. In a paired document counts of boots per side become counts
// of pairs: look "boots", "max_boots" and "history", a row's
// "decided_boots" and "boots_needed"; and a row's "delta_pct" is the median
// change of its pairs, not the change between the sides' centres.
type Document struct {
	// Outcome is "no regression", "regression" or "inconclusive" for
	// FailOn ("regression" or "change").
	Outcome string `json:"outcome"`
	FailOn  string `json:"fail_on"`
	// Summary is the outcome with its reason, as the text report says it.
	Summary   string   `json:"summary"`
	Headlines []string `json:"headlines"`
	Undecided []string `json:"undecided"`
	Warnings  []string `json:"warnings"`
	// EnvironmentDrift is set when a control benchmark moved.
	EnvironmentDrift bool `json:"environment_drift"`
	// Instructions is set when results count instructions (insn/op).
	Instructions bool `json:"instructions"`
	// Paired is set when A's and B's boots ran in pairs, side by side, and
	// the tests are Wilcoxon signed-rank tests on the pairs' ln(B/A)
	// (compare.Report.Paired). Explanation then says so in one line.
	Paired      bool   `json:"paired,omitempty"`
	Explanation string `json:"explanation,omitempty"`

	Alpha      float64 `json:"alpha"`
	MinEffect  float64 `json:"min_effect"`
	Confidence float64 `json:"confidence"`
	Rule       string  `json:"rule"`
	Look       Look    `json:"look"`

	A SideLabel `json:"a"`
	B SideLabel `json:"b"`
	// OneKernel is set when both sides booted one kernel image;
	// Differences then say what else differs between them
	// (compare.Report), and SidesDiffer says it in words.
	OneKernel   bool                 `json:"one_kernel,omitempty"`
	Differences []compare.Difference `json:"differences,omitempty"`
	SidesDiffer string               `json:"sides_differ,omitempty"`
	Meta        view.Meta            `json:"meta"`
	Rows        []Row                `json:"rows"`
	// Insight is the insight block (Meta.Insight); absent when off.
	Insight *InsightDocument `json:"insight,omitempty"`
}

// SideLabel names a side.
type SideLabel struct {
	Name   string `json:"name"`
	Kernel string `json:"kernel,omitempty"`
}

// Look is compare.Look in JSON. In a paired document Boots, MaxBoots and
// History count pairs.
type Look struct {
	Number         int     `json:"number"`
	Boots          int     `json:"boots"`
	MaxBoots       int     `json:"max_boots,omitempty"`
	History        []int   `json:"history"`
	DifferentLevel float64 `json:"different_level"`
	SameLevel      float64 `json:"same_level"`
	DifferentSpent float64 `json:"different_spent"`
	SameSpent      float64 `json:"same_spent"`
}

// Row is compare.Row in JSON.
type Row struct {
	Benchmark string `json:"benchmark"`
	Unit      string `json:"unit"`
	Control   bool   `json:"control"`
	// HarnessChanged is set for a control that moved under instruction
	// counts: the kernel's cost of the harness, not drift
	// (compare.Row.HarnessChanged).
	HarnessChanged bool `json:"harness_changed,omitempty"`
	// Total is set for a user's program's row with its test-run harness,
	// whose own-work row is weighed instead (compare.Row.Total).
	Total   bool            `json:"total,omitempty"`
	Verdict compare.Verdict `json:"verdict"`
	// Worse is set for a DIFFERENT row that changed for the worse.
	Worse bool `json:"worse"`
	// DeltaPct is the change of B's centre from A's in percent; in a paired
	// row, the median change of the pairs, 100·(exp(median ln(B/A)) − 1).
	// Null when the sides were not both measured (paired: no complete pair).
	DeltaPct *float64 `json:"delta_pct"`
	P        float64  `json:"p"`
	PEffect  float64  `json:"p_effect"`
	PAdj     float64  `json:"p_adj"`
	PSame    float64  `json:"p_same"`
	// Pairs is the number of complete pairs the row's tests used, in a
	// paired document; absent otherwise (and when no pair is complete).
	Pairs int `json:"pairs,omitempty"`
	// DecidedLook and DecidedBoots: when the verdict was reached (boots per
	// side, or pairs).
	DecidedLook  int `json:"decided_look,omitempty"`
	DecidedBoots int `json:"decided_boots,omitempty"`
	// Rule is how the verdict was decided: "statistical" or
	// "deterministic" (with Bound, the calibrated jitter bound, and Final
	// set on an UNKNOWN that more boots cannot decide).
	Rule  compare.Rule `json:"rule,omitempty"`
	Bound float64      `json:"bound,omitempty"`
	Final bool         `json:"final,omitempty"`
	// Exact marks a row of one count per side from the memory pass
	// (compare.Row.Exact): its UNKNOWN does not make "outcome"
	// inconclusive.
	Exact bool `json:"exact,omitempty"`
	// FloorHides: an UNKNOWN that a calibrated floor would have made SAME
	// while the change is significant (compare.Row.FloorHides).
	FloorHides bool    `json:"floor_hides,omitempty"`
	MinEffect  float64 `json:"min_effect,omitempty"`
	// NeedFor and BootsNeeded: for UNKNOWN rows, the verdict the data lean
	// to and about how many boots per side (or pairs) it would need.
	NeedFor     *compare.Verdict `json:"need_for,omitempty"`
	BootsNeeded int              `json:"boots_needed,omitempty"`
	A           *Side            `json:"a"`
	B           *Side            `json:"b"`
	Notes       []string         `json:"notes"`
	Headline    string           `json:"headline"`
}

// Side is compare.Summary in JSON; Lo and Hi are null when the interval is
// unbounded.
type Side struct {
	Center     float64  `json:"center"`
	Lo         *float64 `json:"lo"`
	Hi         *float64 `json:"hi"`
	Boots      int      `json:"boots"`
	Samples    int      `json:"samples"`
	WithinBoot float64  `json:"within_boot"`
	PerBoot    []Boot   `json:"per_boot"`
}

// Boot is compare.Boot in JSON. Pair is the pair the boot belongs to, in a
// paired document: the boot of the other side with the same pair ran beside
// it.
type Boot struct {
	ID      string  `json:"id"`
	Pair    string  `json:"pair,omitempty"`
	Median  float64 `json:"median"`
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
	Samples int     `json:"samples"`
}

// finite returns a pointer to v, or nil if v is infinite or NaN.
func finite(v float64) *float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil
	}
	return &v
}

// newDocument converts a report to its JSON form.
func newDocument(rep *compare.Report, meta view.Meta) Document {
	d := Document{
		Outcome:          rep.Outcome(meta.FailOn).String(),
		FailOn:           meta.FailOn.String(),
		Summary:          outcomeLine(rep, meta.FailOn),
		Headlines:        nonNil(headlines(rep, meta.Insight)),
		Undecided:        nonNil(undecided(rep)),
		Warnings:         nonNil(allWarnings(rep, meta)),
		EnvironmentDrift: rep.EnvironmentDrift,
		Instructions:     rep.Instructions(),
		Paired:           rep.Paired,
		Alpha:            rep.Alpha,
		MinEffect:        rep.MinEffect,
		Confidence:       rep.Confidence,
		Rule:             verdictRule(rep),
		Look: Look{
			Number: rep.Look.Number, Boots: rep.Look.Boots, MaxBoots: rep.Look.MaxBoots, History: nonNil(rep.Look.History),
			DifferentLevel: rep.Look.DifferentLevel, SameLevel: rep.Look.SameLevel,
			DifferentSpent: rep.Look.DifferentSpent, SameSpent: rep.Look.SameSpent,
		},
		A:           SideLabel{rep.A.Name, rep.A.Kernel},
		B:           SideLabel{rep.B.Name, rep.B.Kernel},
		OneKernel:   rep.OneKernel,
		Differences: rep.Differences,
		SidesDiffer: sidesDiffer(rep, meta),
		Meta:        meta,
		Rows:        []Row{},
	}
	if rep.Paired {
		d.Explanation = pairedExplanation
	}
	if meta.Insight != nil {
		doc := newInsightDocument(meta.Insight)
		d.Insight = &doc
	}
	for _, r := range rep.Rows {
		row := Row{
			Benchmark: r.Benchmark, Unit: r.Unit, Control: r.Control, HarnessChanged: r.HarnessChanged, Total: r.Total, Verdict: r.Verdict, Worse: r.Worse(),
			P: r.P, PEffect: r.PEffect, PAdj: r.PAdj, PSame: r.PSame,
			Pairs:       r.Pairs,
			DecidedLook: r.DecidedLook, DecidedBoots: r.DecidedBoots, Rule: r.Rule, Bound: r.Bound, Final: r.Final, Exact: r.Exact, FloorHides: r.FloorHides, MinEffect: r.MinEffect,
			BootsNeeded: r.BootsNeeded,
			A:           side(r.A), B: side(r.B),
			Notes:    nonNil(rowNotes(rep, r)),
			Headline: Headline(r),
		}
		if r.Compared() {
			row.DeltaPct = finite(r.DeltaPct)
		}
		if r.Verdict == compare.Unknown && r.BootsNeeded > 0 {
			v := r.NeedFor
			row.NeedFor = &v
		}
		d.Rows = append(d.Rows, row)
	}
	return d
}

func side(s compare.Summary) *Side {
	if s.Boots == 0 {
		return nil
	}
	out := &Side{Center: s.Center, Lo: finite(s.Lo), Hi: finite(s.Hi), Boots: s.Boots, Samples: s.Samples, WithinBoot: s.WithinBoot, PerBoot: []Boot{}}
	for _, b := range s.PerBoot {
		out.PerBoot = append(out.PerBoot, Boot{ID: b.ID, Pair: b.Pair, Median: b.Median, Min: b.Min, Max: b.Max, Samples: b.Samples})
	}
	return out
}

// nonNil returns s, or an empty slice for nil, so that JSON says [] rather
// than null for "none".
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// writeJSON writes the report as one indented JSON document (Document).
func writeJSON(w io.Writer, rep *compare.Report, meta view.Meta) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(newDocument(rep, meta)); err != nil {
		return fmt.Errorf("report: encode JSON: %w", err)
	}
	return nil
}

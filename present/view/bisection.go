package view

import (
	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// Bisection is a finished bisection as the reports show it: package bisect
// decides every line of it (the culprit, its verdict, the effect, the
// steps); the renderers only lay it out.
type Bisection struct {
	// Culprit names what the bisection found, in one line ("first bad
	// commit: …", "no single culprit: …").
	Culprit string
	// Verdict is "confirmed by the re-check", "suspect: …", "not
	// re-checked" or "inconclusive".
	Verdict string
	// Effect compares the bad endpoint with the good one, Recheck the
	// culprit with its parent (empty without a re-check).
	Effect, Recheck []BisectionRow
	// Drift names control rows that moved between the endpoints under wall
	// time, Harness those that moved under instruction counts (the
	// kernel's harness cost, not drift).
	Drift, Harness []string
	// Confidence bounds the chance that no step's verdict was wrong, over
	// Steps' claims; RecheckP is the re-check's largest p-value over the
	// signal rows, or -1 without one.
	Confidence float64
	RecheckP   float64
	Steps      []BisectionStep
	// Measured counts the distinct images booted, endpoints included.
	Measured int
	// Images is set for a bisection over prebuilt kernels (steps name
	// kernels, not commits).
	Images bool
	// Instructions is set when the rows count instructions (icount).
	Instructions bool
	// StatePath and LogPath locate the state and the step log.
	StatePath, LogPath string
	// RecheckHTML, when set, names the page with compare's report of the
	// parent against the culprit, which the HTML links.
	RecheckHTML string
	// Insight, when set, is the insight block of the parent against the
	// culprit (a build directory's vmlinux gives exact sizes).
	Insight *insight.Diff
}

// BisectionRow compares two kernels on one benchmark.
type BisectionRow struct {
	Benchmark, Unit string
	A, B            float64 // the two kernels' centres
	DeltaPct        float64
	Verdict         compare.Verdict
	P               float64 // the p-value behind the verdict
	BootsA, BootsB  int
	// Comparison is the verdict with its change and p, as the step log
	// writes it: "DIFFERENT (-17.40%, p=0.0022)".
	Comparison string
}

// BisectionStep is one decided step.
type BisectionStep struct {
	N       int
	What    string // "1a4a0cb7985f bpf/lpm_trie: inline …" or "#4 linux-image-….deb"
	Image   string // short image hash
	Boots   int
	Class   string // good, bad, skip
	Reason  string
	LogLine string // the step as the step log has it
}

package view

import (
	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// Series is a patch series measured patch by patch, as every format of
// report.WriteSeries shows it: one table per benchmark, a row per patch
// with its change against its parent and against the base, the patches
// that moved something with their insight, those that were not measured
// with the end of their log, the environment and the command that
// reproduces it.
type Series struct {
	// Title names the series: the cover letter's subject, or BASE..TIP.
	Title       string            `json:"title"`
	Repo        string            `json:"repo"`
	Base        string            `json:"base"`
	BaseSubject string            `json:"base_subject"`
	Patches     []SeriesPatch     `json:"patches"`
	Benchmarks  []SeriesBenchmark `json:"benchmarks"`
	// Stopped says why the series stopped before its end.
	Stopped string `json:"stopped,omitempty"`
	// Reply threads a reply to the series' mail; nil for a git range.
	Reply       *SeriesReply      `json:"reply,omitempty"`
	Environment SeriesEnvironment `json:"environment"`
	// Command reproduces the measurement.
	Command string `json:"command"`
	// Outcome is the exit code's reason under FailOn.
	Outcome compare.Outcome `json:"-"`
	FailOn  compare.FailOn  `json:"-"`
	// State is the state file a rerun resumes from.
	State string `json:"state,omitempty"`
}

// SeriesPatch is one patch: what became of it.
type SeriesPatch struct {
	N       int    `json:"n"`
	Total   int    `json:"total"`
	Commit  string `json:"commit,omitempty"`
	Subject string `json:"subject"`
	// Status: measured, same-image, build-failed, boot-failed,
	// not-applied, not-reached.
	Status  string   `json:"status"`
	Detail  string   `json:"detail,omitempty"`
	LogTail []string `json:"log_tail,omitempty"`
	Log     string   `json:"log,omitempty"`
	// AgainstN is the patch it is compared with (0: the base) when that is
	// not its parent.
	AgainstN     int     `json:"against_n"`
	Parent       bool    `json:"against_parent"`
	Image        string  `json:"image,omitempty"`
	BuildSeconds float64 `json:"build_seconds,omitempty"`
	// Moved: a benchmark is DIFFERENT against its parent.
	Moved bool `json:"moved"`
	// Insight is its kernel against its parent's, for a patch that moved.
	Insight *insight.Diff `json:"-"`
}

// SeriesBenchmark is one benchmark's column of the series.
type SeriesBenchmark struct {
	Benchmark string  `json:"benchmark"`
	Unit      string  `json:"unit"`
	Base      float64 `json:"base"` // the base's centre
	// Cells has one entry per patch, in the order of Series.Patches.
	Cells []SeriesCell `json:"cells"`
}

// SeriesCell is one patch on one benchmark.
type SeriesCell struct {
	// Center is the patch's centre; 0 when it was not measured.
	Center   float64      `json:"center,omitempty"`
	VsParent *SeriesDelta `json:"vs_parent,omitempty"`
	VsBase   *SeriesDelta `json:"vs_base,omitempty"`
}

// SeriesDelta is a change and its verdict.
type SeriesDelta struct {
	DeltaPct float64         `json:"delta_pct"`
	Verdict  compare.Verdict `json:"verdict"`
	// Direction is "better", "worse" or "changed" for a DIFFERENT row.
	Direction string `json:"direction,omitempty"`
	Boots     int    `json:"boots"` // of the patch
}

// SeriesReply threads a reply to the series.
type SeriesReply struct {
	Subject    string `json:"subject"`
	InReplyTo  string `json:"in_reply_to,omitempty"`
	References string `json:"references,omitempty"`
}

// SeriesEnvironment is what the numbers depend on besides the patches.
type SeriesEnvironment struct {
	Base     string `json:"base"`
	Kconfig  string `json:"kconfig,omitempty"`
	Compiler string `json:"compiler,omitempty"`
	QEMU     string `json:"qemu,omitempty"`
	CPUModel string `json:"cpu_model,omitempty"`
	Accel    string `json:"accel,omitempty"`
	Boots    int    `json:"boots"`
	Version  string `json:"lpmbisect"`
}

package history

import (
	"fmt"
	"math"
	"regexp"
	"time"

	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// SeriesKind says where a series' kernels come from.
type SeriesKind string

const (
	GitSeries   SeriesKind = "git"    // a branch of a git tree, built every night
	ImageSeries SeriesKind = "images" // prebuilt kernels that CI drops in a directory or list file
)

// Series is one thing tracked night after night, as configured, plus the
// last tip seen. Its Name is unique.
type Series struct {
	ID     int64
	Name   string
	Kind   SeriesKind
	Source string // the git tree (path or URL) or the images directory or list file
	Branch string // git series only
	// Reference is the reference kernel input measured beside every tip.
	Reference string
	Bench     string // the benchmark selection
	Accel     string
	// TipCommit and TipImageSHA256 are the last tip seen (set by SetTip).
	TipCommit, TipImageSHA256 string
	Created, Updated          time.Time
}

// NightStatus is what became of a night.
type NightStatus string

const (
	// StatusRunning: started and not finished. A night killed half way
	// keeps it until it is run again.
	StatusRunning      NightStatus = "running"
	StatusMeasured     NightStatus = "measured"  // tip and reference booted and compared
	StatusNoChange     NightStatus = "no-change" // the tip was measured before: no boot
	StatusBuildFailed  NightStatus = "build-failed"
	StatusBootFailed   NightStatus = "boot-failed"
	StatusInconclusive NightStatus = "inconclusive"
	// StatusInfraFailed: the host, not the kernel, failed (disk, QEMU, a
	// fetch): nothing is known about the tip.
	StatusInfraFailed NightStatus = "infrastructure-failed"
)

var nightStatuses = map[NightStatus]bool{StatusRunning: true, StatusMeasured: true, StatusNoChange: true,
	StatusBuildFailed: true, StatusBootFailed: true, StatusInconclusive: true, StatusInfraFailed: true}

// Kernel identifies a kernel that a night measured.
type Kernel struct {
	Commit, Subject string // git series; empty for prebuilt images
	ImageSHA256     string
	Release         string // as uname -r prints it
	Compiler        string
	ConfigHash      string
	// Input is what can boot it again: a kept bzImage, a .deb, a build
	// directory (kept for the nights nightly's pruning keeps).
	Input string
}

// Night is one series' work on one date: what was measured and how.
type Night struct {
	ID, SeriesID int64
	// Date is the night, YYYY-MM-DD: one night per series and date.
	Date   string
	Status NightStatus
	Reason string // why a night failed or was inconclusive
	Note   string // anything else worth saying: a rebased branch, a toolchain change and its config difference
	Tip    Kernel
	// Reference is the reference kernel as it was measured that night.
	Reference Kernel
	// The measuring environment.
	Accel, QEMUVersion, CPUModel, Host string
	ToolVersion                        string // lpmbisect's version
	Started, Finished                  time.Time
}

// Role says which kernel a boot booted.
type Role string

const (
	RoleTip       Role = "tip"
	RoleReference Role = "reference"
	// RoleRebuiltPrevious: last night's tip rebuilt with tonight's
	// toolchain, booted when the compiler or config changed.
	RoleRebuiltPrevious Role = "rebuilt-previous"
)

var roleName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// maxResultsBytes bounds one boot's raw results: a guest's output is
// untrusted, and a runaway one must not fill the database.
const maxResultsBytes = 16 << 20

// Boot is one boot of one kernel on one night, keyed by (NightID, Role,
// Index).
type Boot struct {
	ID, NightID int64
	Role        Role
	Index       int
	Outcome     string // how the boot ended (ok, panic, boot-timeout, …)
	// Results is the boot's raw benchfmt text, configuration lines
	// included, so the night can be analysed again with lpmbisect stat.
	Results   string
	Summaries []BootSummary
	Recorded  time.Time // set when stored
}

// BootSummary is one benchmark's samples in one boot.
type BootSummary struct {
	Benchmark, Unit string
	Median          float64
	Samples         int
	Min, Max        float64
}

// Estimate is one side's centre and interval on one night, as compare
// computes them (Lo and Hi may be ±Inf with too few boots).
type Estimate struct {
	Center, Lo, Hi float64
	Boots          int
}

// Comparison is one verdict of a night, with compare's statistics.
type Comparison struct {
	Verdict  compare.Verdict
	DeltaPct float64 // change in percent
	P        float64
}

// Metric names one series of values: a benchmark in a unit.
type Metric struct{ Benchmark, Unit string }

func (m Metric) String() string { return m.Benchmark + " " + m.Unit }

// NightRow is one benchmark and unit on one night: the values the
// change-point pass runs on and the night's own alerts.
type NightRow struct {
	NightID int64
	Metric
	Tip, Reference Estimate
	// Ratio is Tip.Center / Reference.Center: the kernel with the host
	// divided out. A night without a reference (an imported one; see
	// HasReference) has the tip's own centre here, the value its kernel
	// line runs on.
	Ratio float64
	// VsPrevious compares the tip with the last measured tip; VsReference
	// with the reference. nil: not compared (the first night, say).
	VsPrevious, VsReference *Comparison
}

// HasReference says whether the reference was measured beside the tip:
// without it (an imported night, say) Ratio is the tip's own centre, not a
// ratio, and there is nothing to compare the tip with.
func (r NightRow) HasReference() bool { return !math.IsNaN(r.Reference.Center) }

// TrendPoint is one night of a metric's series.
type TrendPoint struct {
	Night Night
	Row   NightRow
}

// Line says which series a change point sits in.
type Line string

const (
	LineKernel Line = "kernel" // the tip relative to the reference
	LineHost   Line = "host"   // the reference alone: the host and harness
)

// ChangeStatus is where a change point stands with the people it concerns.
type ChangeStatus string

const (
	// ChangeOpen: nobody has triaged it yet; it is mailed and on the
	// alerts page.
	ChangeOpen         ChangeStatus = "open"
	ChangeAcknowledged ChangeStatus = "acknowledged"
	ChangeMuted        ChangeStatus = "muted" // mails no more
	// ChangeInvalid: a person judged it not a change of the kernel (a
	// broken night, a harness change); it mails no more.
	ChangeInvalid ChangeStatus = "invalid"
	// ChangeWithdrawn: later analysis no longer finds it.
	ChangeWithdrawn ChangeStatus = "withdrawn"
)

var changeStatuses = map[ChangeStatus]bool{ChangeOpen: true, ChangeAcknowledged: true, ChangeMuted: true, ChangeInvalid: true, ChangeWithdrawn: true}

// LiveStatuses are the statuses of the change points later analysis still
// finds: every one but withdrawn.
func LiveStatuses() []ChangeStatus {
	return []ChangeStatus{ChangeOpen, ChangeAcknowledged, ChangeMuted, ChangeInvalid}
}

// BisectState is how far the automatic bisection of a change point got.
type BisectState string

const (
	BisectNone    BisectState = ""        // not started
	BisectRunning BisectState = "running" // started; resumes if interrupted
	// BisectRequested: a person asked for it (Triage with ActionBisect);
	// the next nightly run bisects it.
	BisectRequested BisectState = "requested"
	BisectFound     BisectState = "found"  // Culprit names the commit
	BisectFailed    BisectState = "failed" // Reason says why
	// BisectSkipped: not bisected, Reason says why (for example "below what
	// this host resolves").
	BisectSkipped BisectState = "skipped"
)

var bisectStates = map[BisectState]bool{BisectNone: true, BisectRequested: true, BisectRunning: true, BisectFound: true, BisectFailed: true, BisectSkipped: true}

// Bisection is the outcome of a change point's automatic bisection.
type Bisection struct {
	State            BisectState
	Culprit, Subject string
	Reason           string
}

// ChangePoint is a step found in a metric's history. A live change point
// (not withdrawn) is unique per series, metric, line and night.
type ChangePoint struct {
	ID, SeriesID int64
	Metric
	Line Line
	// Night is the first night after the step (YYYY-MM-DD) and NightIndex
	// its position in the metric's trend; BeforeNight is the last night
	// before it. The commits are those nights' tips: the range to bisect.
	Night                     string
	NightIndex                int
	BeforeNight               string
	BeforeCommit, AfterCommit string
	DeltaPct, P               float64
	// Provisional: too few nights follow it yet; the next nights may
	// withdraw it (see package changepoint).
	Provisional            bool
	Status                 ChangeStatus
	FirstReported, Updated time.Time // set when stored
	Mailed                 time.Time // zero: no mail went out
	Bisect                 Bisection
}

// checkDate validates a night's date.
func checkDate(what, date string) error {
	if _, err := time.Parse(time.DateOnly, date); err != nil || len(date) != len(time.DateOnly) {
		return fmt.Errorf("%s %q is not a date (want YYYY-MM-DD)", what, date)
	}
	return nil
}

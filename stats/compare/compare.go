package compare

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"

	"github.com/lpmbisect/lpmbisect/stats/sample"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Side names, the values of wire.KeySide.
const (
	SideA = "A"
	SideB = "B"
)

// Options controls the statistics. The zero value means the defaults.
type Options struct {
	// Alpha is the family-wise error rate of DIFFERENT claims over the
	// whole comparison (all rows, all looks of an adaptive run), and
	// separately of each row's SAME claims. 0 means 0.05. Row.Significant
	// still compares the plain p-value with Alpha, as benchstat does.
	Alpha float64
	// Confidence is the level of the confidence interval of each side's
	// centre. 0 means 0.95.
	Confidence float64
	// MinEffect is the smallest relative change that counts, as a fraction:
	// DIFFERENT needs |Δ| > MinEffect, SAME shows |Δ| < MinEffect. 0 means
	// 0.01 (LKP's floor for perf metrics).
	MinEffect float64
	// Controls are the names of benchmarks that measure the harness, not
	// the kernel (nil means the defaults: defaultControls and the noop of
	// every user's program, wire.WorkloadNoop; an empty non-nil slice
	// means none). Each benchmark is weighed against the controls of its
	// own harness (see checkDrift). Under wall time, a control that moved
	// enough to explain a minimum-effect change of a benchmark of its
	// harness sets Report.EnvironmentDrift.
	Controls []string
	// MaxBoots is the cap on boots per side of an adaptive run, which sets
	// how α is spent over its looks. 0 means a fixed-size comparison: one
	// look that may use all of α.
	MaxBoots int
	// Previous is the Look of the previous comparison of the same run
	// (Report.Look), nil at the first look. It carries what was spent.
	Previous *Look
	// MinEffects overrides MinEffect per benchmark (by Row.Benchmark), as
	// lpmbisect calibrate measured what a host can rule out for each.
	MinEffects map[string]float64
	// Bounds are the jitter bounds of benchmarks that a deterministic
	// instrument (icount) measures, as relative differences between boots
	// of one image (from lpmbisect calibrate): such a row is decided by the
	// deterministic rule (see "Deterministic rows" in the package
	// documentation) instead of the statistical one. Ignored in a paired
	// report.
	Bounds map[string]float64
}

// effectFor is the minimum effect of a benchmark's row.
func (o Options) effectFor(bench string) float64 {
	if e, ok := o.MinEffects[bench]; ok && e > 0 {
		return e
	}
	return o.MinEffect
}

const (
	defaultAlpha      = 0.05
	defaultConfidence = 0.95
	defaultMinEffect  = 0.01
)

func (o Options) withDefaults() (Options, error) {
	if o.Alpha == 0 {
		o.Alpha = defaultAlpha
	}
	if o.Confidence == 0 {
		o.Confidence = defaultConfidence
	}
	if o.MinEffect == 0 {
		o.MinEffect = defaultMinEffect
	}
	if !(o.Alpha > 0 && o.Alpha < 1) {
		return o, fmt.Errorf("alpha %v is not between 0 and 1", o.Alpha)
	}
	if !(o.Confidence > 0 && o.Confidence < 1) {
		return o, fmt.Errorf("confidence %v is not between 0 and 1", o.Confidence)
	}
	if !(o.MinEffect > 0 && o.MinEffect < 1) {
		return o, fmt.Errorf("minimum effect %v is not a fraction between 0 and 1 (0.01 is 1%%)", o.MinEffect)
	}
	for bench, e := range o.MinEffects {
		if !(e > 0 && e < 1) {
			return o, fmt.Errorf("minimum effect %v of %s is not a fraction between 0 and 1", e, bench)
		}
	}
	for bench, b := range o.Bounds {
		if !(b > 0 && b < 1) {
			return o, fmt.Errorf("jitter bound %v of %s is not a fraction between 0 and 1", b, bench)
		}
	}
	if o.MaxBoots < 0 {
		return o, fmt.Errorf("max boots %d is negative", o.MaxBoots)
	}
	if o.Previous != nil && (o.MaxBoots == 0 || o.Previous.MaxBoots != o.MaxBoots) {
		return o, fmt.Errorf("a previous look with max boots %d needs the same MaxBoots, got %d (keep MaxBoots fixed for the whole run)",
			o.Previous.MaxBoots, o.MaxBoots)
	}
	return o, nil
}

// Report is the comparison of side A with side B.
type Report struct {
	A, B SideInfo
	// Alpha and Confidence are the levels the rows were computed with.
	Alpha, Confidence float64
	// MinEffect is the minimum relative change, as a fraction.
	MinEffect float64
	// Look says which look of a run this is and what it could spend.
	Look Look
	// Paired is set when every result carried a pair key: the rows' tests
	// are then signed-rank tests on the pairs' changes (see "Pairs" in the
	// package documentation), and counts of boots per side become counts of
	// pairs.
	Paired bool
	// Rows holds one row per benchmark and unit, in the order in which they
	// first appear in the input.
	Rows []Row
	// EnvironmentDrift is set when a control row is DIFFERENT by enough to
	// explain a minimum-effect change of a benchmark (see Row.Drift): the
	// harness or the host changed between the sides, so no other row's
	// change can be blamed on the kernel. The rows keep their verdicts;
	// Outcome says Inconclusive.
	EnvironmentDrift bool
	// Deterministic is set when both sides' values are instruction counts
	// (icount): they do not depend on the host's load, so a control that
	// moved measures the kernel's own cost of the harness changing
	// (Row.HarnessChanged), never environment drift.
	Deterministic bool
	// OneKernel is set when both sides booted one kernel image (the
	// results' image key); Differences then says what else differs
	// between them, which is what such a comparison measures: the CPU
	// model QEMU emulated, the QEMU version, the extra kernel parameters.
	OneKernel   bool
	Differences []Difference
}

// Difference is a configuration key whose value differs between the
// sides of a comparison of one kernel (Report.Differences); A and B are
// the values ("" for none).
type Difference struct {
	Key string `json:"key"`
	A   string `json:"a"`
	B   string `json:"b"`
}

// differingKeys are the keys Report.Differences looks at: how boots of one
// image can differ.
var differingKeys = []string{wire.KeyCPUModel, wire.KeyQEMU, wire.KeyAppend}

// SideInfo describes one side of the comparison.
type SideInfo struct {
	Name   string // SideA or SideB
	Kernel string // value of the kernel key; empty if the results have none
}

// Label returns the side's name with its kernel, e.g. "A: 6.1.0-57-cloud-amd64".
func (s SideInfo) Label() string {
	if s.Kernel == "" {
		return s.Name
	}
	return s.Name + ": " + s.Kernel
}

// Row compares one benchmark in one unit.
type Row struct {
	// Benchmark is the full benchmark name without the "Benchmark" prefix,
	// as benchfmt stores it.
	Benchmark string
	// Unit is the unit as benchfmt stores it: the Reader tidies units, so
	// "ns/op" in a file becomes "sec/op" here, with the values scaled.
	Unit string
	// A and B summarise each side. A side without results for this
	// benchmark has Boots == 0.
	A, B Summary
	// DeltaPct is the change of B's centre relative to A's, in percent
	// (negative: B is smaller). It is 0 when a side is missing or A's centre
	// is 0. In a paired row it is the median change of the pairs,
	// 100·(exp(median of ln(B/A)) − 1), not a ratio of the sides' centres.
	DeltaPct float64
	// P is the p-value of the Mann-Whitney U test on the per-boot medians;
	// in a paired row, of the two-sided Wilcoxon signed-rank test of the
	// pairs' ln(B/A) against 0. It is 1 when the sides were not compared.
	P float64
	// Significant reports P <= Alpha. It says nothing about the size of the
	// change.
	Significant bool
	// Notes explain what limits this row: too few boots, a missing side,
	// all values equal, a pair left out (see "Notes" in the package
	// documentation). Empty when nothing does. What more boots would decide
	// is not among them: see NeedFor.
	Notes []string

	// Paired is set in a paired report (Report.Paired). Pairs is then the
	// number of complete pairs that enter the tests: pairs in which both
	// sides ran this benchmark, with positive per-boot medians.
	Paired bool
	Pairs  int

	// Control marks a benchmark that measures the harness (Options.Controls).
	Control bool
	// Total marks a user's program's row (wire.WorkloadBench) whose
	// own-work row (wire.WorkloadOwn) is in the report: it includes the
	// test run's harness, which its noop measures, so it is reported with
	// its verdict but, like a control, not weighed (Row.Weighed): the
	// program's own work is what runs in production.
	Total bool
	// Drift marks a control that moved enough to explain a minimum-effect
	// change of a benchmark: it sets Report.EnvironmentDrift. Only under
	// wall time (see Report.Deterministic).
	Drift bool
	// HarnessChanged marks a control that moved under a deterministic
	// instrument (Report.Deterministic): the kernel's cost of the harness
	// around the operation changed, which the benchmarks of that harness
	// include. It is reported, and it does not make the comparison
	// inconclusive.
	HarnessChanged bool
	// Better is +1 if higher values are better in this unit, -1 if lower
	// ones are (time and instructions per op), 0 if unknown.
	Better int
	// Verdict is the decision on the row; see the package documentation.
	Verdict Verdict
	// PEffect is the p-value of the minimum-effect test: twice the one-sided
	// U test that B lies beyond A scaled by 1±MinEffect, in the direction of
	// the change (paired: twice the one-sided signed-rank test that the
	// pairs' ln(B/A) lie beyond ln(1±MinEffect)). It is small only when the
	// change is shown to exceed the minimum effect, not merely observed to.
	// 1 when not tested.
	PEffect float64
	// PAdj is the larger of P and PEffect, adjusted for the other rows of
	// this look (Holm). DIFFERENT needs PAdj <= Report.Look.DifferentLevel.
	// 1 when not tested.
	PAdj float64
	// PSame is the p-value of the equivalence test (the larger of the two
	// one-sided U tests against A scaled by 1±MinEffect; paired: of the two
	// one-sided signed-rank tests of ln(B/A) against ln(1±MinEffect)). SAME
	// needs PSame <= Report.Look.SameLevel. 1 when not tested.
	PSame float64
	// For an Undecided row, NeedFor is the verdict the data lean to and
	// BootsNeeded a rough estimate of the boots per side (pairs in a paired
	// row) it would need at the observed spread (more than MaxBootsNeeded:
	// out of reach). BootsNeeded is 0 when it cannot be estimated. The
	// estimate assumes the observed change holds, which for a kernel
	// compared with itself it will not.
	NeedFor     Verdict
	BootsNeeded int
	// DecidedLook and DecidedBoots say at which look of an adaptive run,
	// and so at how many boots per side (pairs in a paired row), the
	// verdict was reached; 0 for UNKNOWN.
	DecidedLook, DecidedBoots int

	// MinEffect is the row's minimum effect, as a fraction: Options.MinEffect
	// or the benchmark's own (Options.MinEffects).
	MinEffect float64
	// Rule says which rule decided the row: RuleStatistical, or
	// RuleDeterministic with the jitter bound Bound (Options.Bounds).
	Rule  Rule
	Bound float64
	// Final marks an UNKNOWN that more boots cannot decide: under the
	// deterministic rule, a change within the bound of the minimum effect.
	Final bool
	// FloorHides marks an UNKNOWN that would be SAME within the row's own
	// minimum effect (Options.MinEffects, raised above Options.MinEffect)
	// while its change is significant and beyond Options.MinEffect: a
	// calibrated floor hid a change the user's floor sees.
	FloorHides bool
	// Exact marks a row of one exact count per side, measured outside the
	// timed samples (ExactRow): its verdict is the deterministic rule's on
	// the two values (decideExact) and final. Outcome counts its DIFFERENT
	// as any row's, but not its UNKNOWN: more boots cannot decide it, and
	// the timed rows say whether the comparison was conclusive.
	Exact bool
}

// Rule is how a row's verdict is decided.
type Rule string

const (
	// RuleStatistical: the tests on per-boot medians (U test, or signed
	// ranks over pairs), with α spent over rows and looks.
	RuleStatistical Rule = "statistical"
	// RuleDeterministic: an instrument whose boots of one image agree
	// within a calibrated bound; the change is compared with the minimum
	// effect and the bound, and no α is spent.
	RuleDeterministic Rule = "deterministic"
)

// ClaimP returns the p-value behind the row's verdict: PAdj for DIFFERENT,
// PSame for SAME (for a row decided at an earlier look, the p-value it was
// decided with), the plain P for UNKNOWN.
func (r Row) ClaimP() float64 {
	switch r.Verdict {
	case Different:
		return r.PAdj
	case Same:
		return r.PSame
	}
	return r.P
}

// Compared reports whether both sides have results, that is whether P and
// DeltaPct mean anything. A paired row needs a complete pair.
func (r Row) Compared() bool {
	if r.Paired {
		return r.Pairs > 0
	}
	return r.A.Boots > 0 && r.B.Boots > 0
}

// Summary describes one side of one row.
type Summary struct {
	// Center is the median of the per-boot medians. Lo and Hi bound its
	// confidence interval; they are -Inf and +Inf when there are too few
	// boots for the confidence level.
	Center, Lo, Hi float64
	// Boots is the number of boots (statistical units); Samples the number
	// of samples over all boots.
	Boots, Samples int
	// WithinBoot is the median over boots of each boot's relative range
	// (max-min)/median, as a fraction (0.004 is 0.4 %). Boots with a single
	// sample have no range and are left out; it is 0 if no boot has two
	// samples.
	WithinBoot float64
	// PerBoot lists the boots in the order they first appear in the input.
	PerBoot []Boot
}

// Boot summarises the samples of one boot.
type Boot struct {
	ID      string  // value of the boot key
	Pair    string  // value of the pair key; empty in an unpaired report
	Median  float64 // median of the boot's samples: the unit of the statistics
	Samples int
	// Spread is the boot's relative range (max-min)/median; 0 with a single
	// sample or a median of 0.
	Spread float64
	// Min and Max are the boot's extreme samples, for plots.
	Min, Max float64
}

// CIPct returns the larger distance from the centre to a bound of the
// confidence interval, in percent of the centre. It is +Inf when the interval
// is unbounded and NaN when the centre is 0 or the interval spans zero.
func (s Summary) CIPct() float64 {
	if math.IsInf(s.Lo, 0) || math.IsInf(s.Hi, 0) {
		return math.Inf(1)
	}
	if s.Center == 0 || math.Signbit(s.Lo) != math.Signbit(s.Center) || math.Signbit(s.Hi) != math.Signbit(s.Center) {
		return math.NaN()
	}
	return 100 * math.Max(s.Hi/s.Center-1, 1-s.Lo/s.Center)
}

// ErrIncomparable is wrapped when the sides' instruction counts come from
// different instruments: icount counts depend on the emulated CPU model and
// the QEMU version (the kernel patches itself for the CPU's features, and
// each QEMU emulates its own), so counts of two kernels measured with two
// of them are never compared. Counts of one kernel image on two
// instruments are: the comparison then measures the instruments (two CPU
// profiles, two QEMUs), and Report.Differences says so.
var ErrIncomparable = errors.New("instruction counts from different instruments")

// instrument is what measured one side's instruction counts: the CPU
// model and QEMU version its results record.
type instrument struct {
	icount         bool
	qemu, cpuModel string
	first          *benchfmt.Result
}

func (in *instrument) add(res *benchfmt.Result) error {
	if !wire.Accel(res.GetConfig(wire.KeyAccel)).CountsInstructions() {
		return nil
	}
	q, c := res.GetConfig(wire.KeyQEMU), res.GetConfig(wire.KeyCPUModel)
	if !in.icount {
		in.icount, in.qemu, in.cpuModel, in.first = true, q, c, res
		return nil
	}
	if q != in.qemu || c != in.cpuModel {
		return fmt.Errorf("compare: %w: %s ran QEMU %q with CPU %q, %s QEMU %q with CPU %q (measure every boot of a comparison with one QEMU and CPU model)",
			ErrIncomparable, pos(in.first), in.qemu, in.cpuModel, pos(res), q, c)
	}
	return nil
}

func (in instrument) comparable(other instrument) error {
	switch {
	case !in.icount || !other.icount:
		return nil
	case in.qemu != other.qemu || in.cpuModel != other.cpuModel:
		return fmt.Errorf("compare: %w: side A ran QEMU %q with CPU %q, side B QEMU %q with CPU %q (measure both sides with one QEMU and CPU model)",
			ErrIncomparable, in.qemu, in.cpuModel, other.qemu, other.cpuModel)
	}
	return nil
}

// sidesDiffer says whether the sides' first results (nil for a side
// without any) are of one kernel image, and then which of differingKeys
// differ between them.
func sidesDiffer(first [2]*benchfmt.Result) (bool, []Difference) {
	if first[0] == nil || first[1] == nil {
		return false, nil
	}
	image := first[0].GetConfig(wire.KeyImage)
	if image == "" || image != first[1].GetConfig(wire.KeyImage) {
		return false, nil
	}
	var diffs []Difference
	for _, k := range differingKeys {
		if a, b := first[0].GetConfig(k), first[1].GetConfig(k); a != b {
			diffs = append(diffs, Difference{Key: k, A: a, B: b})
		}
	}
	return true, diffs
}

// key identifies a row.
type key struct{ bench, unit string }

// group collects the samples of one row on one side, boot by boot.
type group struct {
	boots   []string             // boot IDs in order of first appearance
	samples map[string][]float64 // by boot ID
	pairs   map[string]string    // pair by boot ID, in a paired report
}

func (g *group) add(boot, pair string, v float64) {
	if g.samples == nil {
		g.samples = make(map[string][]float64)
		g.pairs = make(map[string]string)
	}
	if _, ok := g.samples[boot]; !ok {
		g.boots = append(g.boots, boot)
		g.pairs[boot] = pair
	}
	g.samples[boot] = append(g.samples[boot], v)
}

// Build compares the results of side A with those of side B. Each result must
// carry the side and boot configuration keys; every value of a result is used,
// grouped by benchmark name and unit, so units are never mixed.
//
// If every result also carries the pair key, the report is paired (see
// "Pairs" in the package documentation): each row matches A's boot and B's
// boot of the same pair, leaves incomplete pairs out with a note, and tests
// the pairs' changes ln(B/A) of the per-boot medians with the signed-rank
// test. The sides' summaries (Row.A, Row.B) are the same as without pairs.
//
// Build returns an error when the input cannot be compared at all: no
// results, a result without side or boot, a side with no results, or one side
// labelled with two kernels; and for pairs: some results with a pair key and
// some without, a boot in two pairs, two boots of one side in one pair, or a
// previous look (Options.Previous) of the other kind. A benchmark found on
// one side only gets a row with a note.
func Build(results []*benchfmt.Result, opts Options) (*Report, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	if len(results) == 0 {
		return nil, errors.New("compare: no results")
	}
	rep := &Report{
		A:          SideInfo{Name: SideA},
		B:          SideInfo{Name: SideB},
		Alpha:      opts.Alpha,
		Confidence: opts.Confidence,
		MinEffect:  opts.MinEffect,
	}
	var order []key
	groups := map[key]*[2]group{}
	var seen [2]bool
	var pb pairBook
	var inst [2]instrument
	var first [2]*benchfmt.Result
	for _, res := range results {
		side, err := sideOf(res)
		if err != nil {
			return nil, err
		}
		if err := inst[side].add(res); err != nil {
			return nil, err
		}
		if first[side] == nil {
			first[side] = res
		}
		info := &rep.A
		if side == 1 {
			info = &rep.B
		}
		if k := res.GetConfig(wire.KeyKernel); k != "" {
			if info.Kernel != "" && info.Kernel != k {
				return nil, fmt.Errorf("compare: %s: side %s has results from kernels %s and %s (write each kernel's results as its own side)",
					pos(res), info.Name, info.Kernel, k)
			}
			info.Kernel = k
		}
		boot := res.GetConfig(wire.KeyBoot)
		if boot == "" {
			return nil, fmt.Errorf("compare: %s: result has no %q key (samples must be grouped by boot; write a %q line before each boot's results)",
				pos(res), wire.KeyBoot, wire.KeyBoot+": N")
		}
		pair := res.GetConfig(wire.KeyPair)
		if err := pb.add(res, side, boot, pair); err != nil {
			return nil, err
		}
		seen[side] = true
		for _, v := range res.Values {
			k := key{res.Name.String(), v.Unit}
			g, ok := groups[k]
			if !ok {
				g = new([2]group)
				groups[k] = g
				order = append(order, k)
			}
			g[side].add(boot, pair, v.Value)
		}
	}
	if err := pb.check(len(results)); err != nil {
		return nil, err
	}
	rep.OneKernel, rep.Differences = sidesDiffer(first)
	// Counts of one kernel on two instruments are what such a comparison
	// asks about; counts of two kernels on two instruments mean nothing.
	if err := inst[0].comparable(inst[1]); err != nil && !rep.OneKernel {
		return nil, err
	}
	rep.Paired = pb.paired > 0
	rep.Deterministic = inst[0].icount && inst[1].icount
	order = deriveOwn(order, groups)
	if p := opts.Previous; p != nil && p.Paired != rep.Paired {
		return nil, fmt.Errorf("compare: the previous look was %s, these results are %s (a run is paired or not from its first look)",
			pairedName(p.Paired), pairedName(rep.Paired))
	}
	for i, info := range []SideInfo{rep.A, rep.B} {
		if !seen[i] {
			return nil, fmt.Errorf("compare: no results for side %s (each result needs %q set to %s or %s)",
				info.Name, wire.KeySide, SideA, SideB)
		}
	}
	for _, k := range order {
		rep.Rows = append(rep.Rows, buildRow(k, groups[k], rep, opts))
	}
	decide(rep, opts)
	return rep, nil
}

// Summarize summarises one kernel's results, whatever their side labels,
// per benchmark and unit as Build summarises each side: every boot reduced
// to the median of its samples, and the centre and interval of those
// medians (at the default confidence). Results need a boot key.
func Summarize(results []*benchfmt.Result) ([]Row, error) {
	var order []key
	groups := map[key]*group{}
	thr := benchmath.DefaultThresholds
	for _, res := range results {
		boot := res.GetConfig(wire.KeyBoot)
		if boot == "" {
			return nil, fmt.Errorf("compare: %s: result has no %q key (samples must be grouped by boot)", pos(res), wire.KeyBoot)
		}
		for _, v := range res.Values {
			k := key{res.Name.String(), v.Unit}
			g, ok := groups[k]
			if !ok {
				g = new(group)
				groups[k] = g
				order = append(order, k)
			}
			g.add(boot, "", v.Value)
		}
	}
	rows := make([]Row, 0, len(order))
	for _, k := range order {
		sum, _ := summarise(groups[k], &thr, defaultConfidence)
		rows = append(rows, Row{Benchmark: k.bench, Unit: k.unit, A: sum})
	}
	return rows, nil
}

func sideOf(res *benchfmt.Result) (int, error) {
	switch s := res.GetConfig(wire.KeySide); s {
	case SideA:
		return 0, nil
	case SideB:
		return 1, nil
	case "":
		return 0, fmt.Errorf("compare: %s: result has no %q key (want %s or %s)", pos(res), wire.KeySide, SideA, SideB)
	default:
		return 0, fmt.Errorf("compare: %s: %s is %q (want %s or %s)", pos(res), wire.KeySide, s, SideA, SideB)
	}
}

// pos names a result in error messages: file:line when it was read from a
// file, its benchmark name otherwise.
func pos(res *benchfmt.Result) string {
	if file, line := res.Pos(); file != "" {
		return fmt.Sprintf("%s:%d", file, line)
	}
	return "Benchmark" + res.Name.String()
}

func buildRow(k key, g *[2]group, rep *Report, opts Options) Row {
	thr := benchmath.Thresholds{CompareAlpha: opts.Alpha}
	row := Row{Benchmark: k.bench, Unit: k.unit, P: 1, PEffect: 1, PAdj: 1, PSame: 1, Paired: rep.Paired}
	var samples [2]*benchmath.Sample
	for i, sum := range []*Summary{&row.A, &row.B} {
		if len(g[i].boots) == 0 {
			continue
		}
		*sum, samples[i] = summarise(&g[i], &thr, opts.Confidence)
		if math.IsInf(sum.Lo, 0) || math.IsInf(sum.Hi, 0) {
			row.addNote(ciNote(opts.Confidence))
		}
	}
	switch {
	case samples[0] == nil:
		row.addNote(fmt.Sprintf("only on side %s: not compared", rep.B.Label()))
		return row
	case samples[1] == nil:
		row.addNote(fmt.Sprintf("only on side %s: not compared", rep.A.Label()))
		return row
	}
	if row.Paired {
		pairedRow(&row, opts)
		return row
	}
	if row.A.Center != 0 {
		row.DeltaPct = 100 * (row.B.Center/row.A.Center - 1)
	}
	cmp := benchmath.AssumeNothing.Compare(samples[0], samples[1])
	row.P = cmp.P
	row.Significant = cmp.P <= opts.Alpha
	// benchmath also warns when the sample is too small for any
	// significance; decide says that in boots and for the corrected level.
	if canBeSignificant(row.A.Boots, row.B.Boots, opts.Alpha) {
		for _, w := range cmp.Warnings {
			row.addNote(w.Error())
		}
	}
	return row
}

func (r *Row) addNote(note string) {
	if !slices.Contains(r.Notes, note) {
		r.Notes = append(r.Notes, note)
	}
}

// summarise reduces each boot to the median of its samples and summarises
// the per-boot medians. It also returns them as a benchmath.Sample.
func summarise(g *group, thr *benchmath.Thresholds, confidence float64) (Summary, *benchmath.Sample) {
	var sum Summary
	medians := make([]float64, 0, len(g.boots))
	var spreads []float64
	for _, id := range g.boots {
		vs := g.samples[id]
		b := Boot{ID: id, Pair: g.pairs[id], Median: sample.Median(vs), Samples: len(vs), Min: slices.Min(vs), Max: slices.Max(vs)}
		if len(vs) > 1 && b.Median != 0 {
			b.Spread = (slices.Max(vs) - slices.Min(vs)) / math.Abs(b.Median)
			spreads = append(spreads, b.Spread)
		}
		sum.PerBoot = append(sum.PerBoot, b)
		sum.Samples += len(vs)
		medians = append(medians, b.Median)
	}
	sum.Boots = len(medians)
	if len(spreads) > 0 {
		sum.WithinBoot = sample.Median(spreads)
	}
	s := benchmath.NewSample(medians, thr) // sorts medians in place; PerBoot keeps the order
	bs := benchmath.AssumeNothing.Summary(s, confidence)
	sum.Center, sum.Lo, sum.Hi = bs.Center, bs.Lo, bs.Hi
	return sum, s
}

// maxBoots bounds the searches below; benchmath gives up at 50 too.
const maxBoots = 50

// canBeSignificant reports whether the U test on n1 and n2 boots can reach
// p <= alpha at all: whether its smallest p (uMinP, two perfectly separated
// samples) does. The U test is discrete, and for few boots its smallest p
// is large.
func canBeSignificant(n1, n2 int, alpha float64) bool {
	return atMost(uMinP(n1, n2, true), alpha)
}

// minBootsForInterval returns the smallest number of boots for which the
// confidence interval of a median is bounded at the given level (6 for 0.95),
// or 0 if more than 50 are needed.
func minBootsForInterval(confidence float64) int {
	thr := benchmath.DefaultThresholds
	for n := 1; n <= maxBoots; n++ {
		vs := make([]float64, n)
		for i := range vs {
			vs[i] = float64(i)
		}
		s := benchmath.AssumeNothing.Summary(benchmath.NewSample(vs, &thr), confidence)
		if !math.IsInf(s.Lo, 0) && !math.IsInf(s.Hi, 0) {
			return n
		}
	}
	return 0
}

func ciNote(confidence float64) string {
	if n := minBootsForInterval(confidence); n > 0 {
		return fmt.Sprintf("need ≥%d boots per side for a %.4g%% confidence interval", n, 100*confidence)
	}
	return fmt.Sprintf("need >%d boots per side for a %.4g%% confidence interval", maxBoots, 100*confidence)
}

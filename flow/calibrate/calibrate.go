package calibrate

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/stats/sample"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Defaults of Options (see the package documentation for their reasons).
const (
	defaultQuantile     = 0.95
	defaultSafetyFactor = 3
	defaultBoundFloor   = 0.0003 // 0.03 %
	defaultQuantum      = 0.01   // the guest rounds per-op values to two decimals
	defaultMaxJitter    = 0.005  // 0.5 %
	defaultMaxBound     = 0.005  // 0.5 %
	defaultModeGap      = 3
	defaultSameShare    = 0.9
	defaultSplits       = 200
)

// DefaultBoots is the number of boots a calibration should take: 8 give
// 28 pairs for the quantile and 35 splits of 4 boots per side (a
// self-compare can say SAME at α 0.05 from 3 per side, so 6 boots are the
// fewest that give any wall-time floor). With fewer boots the bound more
// often falls short of what further boots show (see the package
// documentation: for 3 of 16 boots of Debian 6.12, 31 % of the time).
const DefaultBoots = 8

// defaultGrid are the minimum effects, as fractions, at which the
// self-compares are tried: the smallest reached is a row's floor. It goes
// up to 50 %: on a shared host with stolen CPU time, TCG boots of one
// image were seen to differ by up to 89 %, and a floor that says so is
// worth more than none (auto then claims SAME only that coarsely, and
// says that a smaller change is out of reach). Its steps grow by a third
// to a half: 40 % sits between 30 and 50, where the random lookup of Debian
// 6.12 under paired TCG got 50 %, its share at 30 % being 0.75. A finer grid does
// not give truer floors: a pool of 20 boots estimates the share of SAME
// only coarsely (on synthetic boots with 12 % noise, the share at 25 %
// was 0.6 to 0.97 from one pool to the next, while fresh runs said SAME
// 76 % of the time there), and the rounding up to the next step is what
// keeps the floors holding out of sample (TestFloorHoldsForAdaptiveRuns).
var defaultGrid = []float64{0.01, 0.02, 0.03, 0.05, 0.075, 0.10, 0.15, 0.20, 0.30, 0.40, 0.50}

// Options are the parameters of a calibration. The zero value of a field
// means its default.
type Options struct {
	// Quantile is the quantile of the pairwise differences of boot
	// medians that the jitter bound scales (default 0.95).
	Quantile float64
	// SafetyFactor multiplies that quantile (default 3).
	SafetyFactor float64
	// BoundFloor is the smallest bound, as a fraction (default 0.0003,
	// 0.03 %). A row's floor is at least two Quantum relative to its
	// centre.
	BoundFloor float64
	// Quantum is the step of the per-op values in the unit as stored
	// (default 0.01: the guest rounds them to two decimals). Two medians
	// one step apart may be one value rounded two ways.
	Quantum float64
	// MaxJitter is the largest pairwise difference of a deterministic
	// benchmark, as a fraction (default 0.005, 0.5 %).
	MaxJitter float64
	// MaxBound is the largest bound of a deterministic benchmark, as a
	// fraction (default 0.005, 0.5 %): a bound near the minimum effect
	// leaves the deterministic rule nothing to decide.
	MaxBound float64
	// ModeGap is how many times the larger group's range the gap between
	// two groups of boot medians must exceed to count as a second mode
	// (default 3).
	ModeGap float64
	// Grid lists the minimum effects, as increasing fractions, tried by
	// the self-compares (default defaultGrid).
	Grid []float64
	// SameShare is the share of splits that must say SAME at a minimum
	// effect for it to be a row's floor (default 0.9).
	SameShare float64
	// Splits is the number of splits of the boots into two halves
	// (default 200); all of them are taken when there are no more.
	Splits int
	// Seed seeds the drawn splits and the runner's boot order.
	Seed uint64
	// Alpha is the error rate the self-compares run with (0: compare's
	// default, 0.05).
	Alpha float64
	// MaxBoots is the cap on boots per side of the comparisons the floors
	// serve (compare.Options.MaxBoots): the self-compares spend α over
	// their looks as such a run does, and stop at it. 0 calibrates for
	// fixed-size comparisons: one look at k boots per side with all of α.
	MaxBoots int

	// Host is the host the boots ran on (nil: thisHost).
	Host *Host
	// Paired says whether the comparisons the calibration serves run in
	// pairs: part of the key. Run takes it from the setup.
	Paired bool
	// Date is when the calibration was made (zero: now).
	Date time.Time
	// OnRunner, when set, is called by Run with the runner before it
	// boots, to attach progress reports.
	OnRunner func(*measure.Runner)
}

func (o Options) withDefaults() (Options, error) {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Quantile, defaultQuantile)
	def(&o.SafetyFactor, defaultSafetyFactor)
	def(&o.BoundFloor, defaultBoundFloor)
	def(&o.Quantum, defaultQuantum)
	def(&o.MaxJitter, defaultMaxJitter)
	def(&o.MaxBound, defaultMaxBound)
	def(&o.ModeGap, defaultModeGap)
	def(&o.SameShare, defaultSameShare)
	if o.Grid == nil {
		o.Grid = defaultGrid
	}
	if o.Splits == 0 {
		o.Splits = defaultSplits
	}
	if o.Date.IsZero() {
		o.Date = time.Now()
	}
	switch {
	case !(o.Quantile > 0 && o.Quantile <= 1):
		return o, fmt.Errorf("quantile %v is not in (0, 1]", o.Quantile)
	case !(o.SafetyFactor >= 1):
		return o, fmt.Errorf("safety factor %v is less than 1", o.SafetyFactor)
	case !(o.BoundFloor > 0 && o.BoundFloor < 1), !(o.MaxJitter > 0 && o.MaxJitter < 1), !(o.MaxBound > 0 && o.MaxBound < 1):
		return o, fmt.Errorf("bound floor %v, maximum jitter %v and maximum bound %v must be fractions between 0 and 1", o.BoundFloor, o.MaxJitter, o.MaxBound)
	case !(o.Quantum >= 0), !(o.ModeGap > 0):
		return o, fmt.Errorf("quantum %v must not be negative and mode gap %v must be positive", o.Quantum, o.ModeGap)
	case !(o.SameShare > 0 && o.SameShare <= 1):
		return o, fmt.Errorf("same share %v is not in (0, 1]", o.SameShare)
	case o.Splits < 1:
		return o, fmt.Errorf("splits %d: at least 1", o.Splits)
	case o.MaxBoots < 0 || o.MaxBoots > compare.MaxBootsLimit:
		return o, &compare.BootsError{Option: "max_boots", N: o.MaxBoots, Max: compare.MaxBootsLimit}
	case len(o.Grid) == 0:
		return o, errors.New("an empty grid of minimum effects")
	}
	for i, m := range o.Grid {
		if !(m > 0 && m < 1) || i > 0 && m <= o.Grid[i-1] {
			return o, fmt.Errorf("grid %v: minimum effects must be increasing fractions between 0 and 1", o.Grid)
		}
	}
	return o, nil
}

// Method records the parameters a calibration was computed with.
type Method struct {
	Quantile     float64   `json:"quantile"`
	SafetyFactor float64   `json:"safety_factor"`
	BoundFloor   float64   `json:"bound_floor"`
	Quantum      float64   `json:"quantum"`
	MaxJitter    float64   `json:"max_jitter"`
	MaxBound     float64   `json:"max_bound"`
	ModeGap      float64   `json:"mode_gap"`
	Grid         []float64 `json:"grid"`
	SameShare    float64   `json:"same_share"`
	Alpha        float64   `json:"alpha,omitempty"` // 0: compare's default
	// MaxBoots is the cap on boots per side the self-compares spent α for
	// (0 in files written before it was recorded: one look with all of α).
	MaxBoots int `json:"max_boots,omitempty"`
	// SplitBoots is k, the boots per side (pairs, when Paired) of every
	// self-compare.
	SplitBoots int `json:"split_boots"`
	// Paired says the boots ran in pairs, and the self-compares were
	// paired ones over subsets of the pairs.
	Paired bool `json:"paired,omitempty"`
	// Splits is the number of splits taken; Exhaustive says they were all
	// there are (else they were drawn with Seed).
	Splits     int    `json:"splits"`
	Exhaustive bool   `json:"exhaustive"`
	Seed       uint64 `json:"seed"`
}

// Calibration is what one calibration measured, with its key.
type Calibration struct {
	// Version is the file format's version (formatVersion).
	Version int       `json:"version"`
	Key     Key       `json:"key"`
	Date    time.Time `json:"date"`
	// Kernel and Image are the release and image hash (the results'
	// kernel and image keys) of the kernel booted.
	Kernel string `json:"kernel"`
	Image  string `json:"image,omitempty"`
	// Boots is the number of boots computed from.
	Boots  int    `json:"boots"`
	Method Method `json:"method"`
	// Benchmarks has one row per benchmark and unit, in the order of
	// first appearance.
	Benchmarks []Benchmark `json:"benchmarks"`
	// TwoModes lists every benchmark that showed two modes in this or an
	// earlier calibration of the key: they are never deterministic.
	TwoModes []ModeRecord `json:"two_modes,omitempty"`
}

// ModeRecord says when a benchmark first showed two modes.
type ModeRecord struct {
	Benchmark string    `json:"benchmark"`
	Unit      string    `json:"unit"`
	Kernel    string    `json:"kernel"`
	Date      time.Time `json:"date"`
	Medians   []float64 `json:"medians"` // the boot medians that showed them, sorted
}

// Benchmark is the calibration of one benchmark in one unit.
type Benchmark struct {
	// Name is the benchmark's full name without "Benchmark", Unit its unit
	// as benchfmt stores it (sec/op, insn/op, …), as in package compare.
	Name string `json:"name"`
	Unit string `json:"unit"`
	// Boots is the number of boots that ran it; Medians their medians in
	// boot order.
	Boots   int       `json:"boots"`
	Medians []float64 `json:"medians"`
	// Centre is the median of the boot medians.
	Centre float64 `json:"centre"`
	// MaxDiff and QuantileDiff are the largest and the Method.Quantile
	// quantile of the pairwise relative differences of the boot medians,
	// as fractions (+Inf when one median is 0 and another is not).
	MaxDiff      float64 `json:"max_diff"`
	QuantileDiff float64 `json:"quantile_diff"`
	// Bound is the jitter bound, as a fraction: max(floor, SafetyFactor ×
	// QuantileDiff). It is computed for instruction counts only (0 for
	// wall time, whose rows have a Floor instead) and means something
	// only for deterministic rows (see Calibration.Bound).
	Bound float64 `json:"bound"`
	// Deterministic reports that the instrument counts instructions and
	// the row passed the tests of the package documentation; Why says
	// why not when it did not.
	Deterministic bool   `json:"deterministic"`
	Why           string `json:"why,omitempty"`
	// TwoModes reports that this calibration's medians showed two modes;
	// EverTwoModes that this or an earlier calibration of the key did.
	TwoModes     bool `json:"two_modes,omitempty"`
	EverTwoModes bool `json:"ever_two_modes,omitempty"`
	// Floor is the smallest minimum effect of the grid, as a fraction, at
	// which SameShare of the self-compares said SAME; NaN when none did
	// (FloorReached false).
	Floor        float64 `json:"floor"`
	FloorReached bool    `json:"floor_reached"`
	// SameShare is the share of splits that said SAME at each minimum
	// effect of Method.Grid; FalseDifferent the largest share that said
	// DIFFERENT at any of them.
	SameShare      []float64 `json:"same_share"`
	FalseDifferent float64   `json:"false_different"`
}

// Benchmark returns the row of a benchmark in a unit.
func (c *Calibration) Benchmark(name, unit string) (*Benchmark, bool) {
	for i := range c.Benchmarks {
		if b := &c.Benchmarks[i]; b.Name == name && b.Unit == unit {
			return b, true
		}
	}
	return nil, false
}

// Bound returns the jitter bound of a benchmark, as a fraction, when the
// calibration found it deterministic (and no calibration of the key ever
// saw it with two modes); ok is false otherwise, and the row must be
// decided by the statistical rule.
func (c *Calibration) Bound(name, unit string) (bound float64, ok bool) {
	b, ok := c.Benchmark(name, unit)
	if !ok || !b.Deterministic || c.everTwoModes(name, unit) {
		return 0, false
	}
	return b.Bound, true
}

// Floor returns the smallest minimum effect, as a fraction, at which this
// host's self-compares of the benchmark said SAME (see Benchmark.Floor);
// ok is false when the benchmark was not calibrated or no minimum effect
// of the grid was reached.
func (c *Calibration) Floor(name, unit string) (floor float64, ok bool) {
	b, ok := c.Benchmark(name, unit)
	if !ok || !b.FloorReached {
		return 0, false
	}
	return b.Floor, true
}

func (c *Calibration) everTwoModes(name, unit string) bool {
	return slices.ContainsFunc(c.TwoModes, func(m ModeRecord) bool { return m.Benchmark == name && m.Unit == unit })
}

// ErrTooFewBoots is returned by Compute and Run for fewer than two boots:
// a bound needs at least one pair.
var ErrTooFewBoots = errors.New("a calibration needs at least 2 boots")

// rowKey names a row.
type rowKey struct{ bench, unit string }

// compute calibrates from boots, the per-boot results of one kernel image
// (as measure.Runner.Boots returns them). The results must agree on the
// key's configuration (accel, qemu, cpu-model, samples, rounds) and on the
// kernel image. Under icount every row gets a jitter bound and a verdict on
// whether it is deterministic; under every accelerator, a floor from
// self-compares of splits of the boots (see the package documentation).
func compute(boots [][]*benchfmt.Result, o Options) (*Calibration, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	if len(boots) < 2 {
		return nil, fmt.Errorf("calibrate: %d boots: %w", len(boots), ErrTooFewBoots)
	}
	var all []*benchfmt.Result
	for i, b := range boots {
		if len(b) == 0 {
			return nil, fmt.Errorf("calibrate: boot %d has no results (keep only completed boots)", i+1)
		}
		all = append(all, b...)
	}
	host := o.Host
	if host == nil {
		h, err := thisHost()
		if err != nil {
			return nil, err
		}
		host = &h
	}
	key, err := keyOf(all, *host, o.Paired)
	if err != nil {
		return nil, err
	}
	kernel, err := oneValue(all, wire.KeyKernel)
	if err != nil {
		return nil, err
	}
	image, err := oneValue(all, wire.KeyImage)
	if err != nil {
		return nil, err
	}
	c := &Calibration{Version: formatVersion, Key: key, Date: o.Date.UTC(), Kernel: kernel, Image: image, Boots: len(boots),
		Method: Method{Quantile: o.Quantile, SafetyFactor: o.SafetyFactor, BoundFloor: o.BoundFloor, Quantum: o.Quantum,
			MaxJitter: o.MaxJitter, MaxBound: o.MaxBound, ModeGap: o.ModeGap, Grid: slices.Clone(o.Grid), SameShare: o.SameShare, Alpha: o.Alpha, Seed: o.Seed}}

	// Boot medians per row; NaN where a boot did not run the benchmark.
	var order []rowKey
	medians := map[rowKey][]float64{}
	for i, b := range boots {
		samples := map[rowKey][]float64{}
		for _, r := range b {
			for _, v := range r.Values {
				k := rowKey{r.Name.String(), v.Unit}
				if _, ok := medians[k]; !ok {
					order = append(order, k)
					medians[k] = nanSlice(len(boots))
				}
				samples[k] = append(samples[k], v.Value)
			}
		}
		for k, vs := range samples {
			medians[k][i] = sample.Median(vs)
		}
	}
	instructions := wire.Accel(key.Accel).CountsInstructions()
	for _, k := range order {
		c.Benchmarks = append(c.Benchmarks, jitter(k, medians[k], instructions, o))
	}
	for _, b := range c.Benchmarks {
		if b.TwoModes {
			sorted := finite(b.Medians)
			slices.Sort(sorted)
			c.TwoModes = append(c.TwoModes, ModeRecord{Benchmark: b.Name, Unit: b.Unit, Kernel: kernel, Date: c.Date, Medians: sorted})
		}
	}
	if err := floors(c, boots, o); err != nil {
		return nil, err
	}
	return c, nil
}

// jitter computes a row's boot statistics, its bound, and whether it is
// deterministic.
func jitter(k rowKey, meds []float64, instructions bool, o Options) Benchmark {
	b := Benchmark{Name: k.bench, Unit: k.unit, Medians: meds, Floor: math.NaN()}
	ms := finite(meds)
	b.Boots = len(ms)
	b.Centre = sample.Median(ms)
	var pairs []float64
	for i := range ms {
		for j := i + 1; j < len(ms); j++ {
			pairs = append(pairs, relDiff(ms[i], ms[j]))
		}
	}
	slices.Sort(pairs)
	floor := o.BoundFloor
	if b.Centre != 0 && instructions { // the guest's step is 0.01 insn/op
		floor = math.Max(floor, 2*o.Quantum/math.Abs(b.Centre))
	}
	if len(pairs) > 0 {
		b.MaxDiff = pairs[len(pairs)-1]
		b.QuantileDiff = quantile(pairs, o.Quantile)
	}
	if instructions { // a wall-time row has a floor of the minimum effect, not a bound
		b.Bound = math.Max(floor, o.SafetyFactor*b.QuantileDiff)
	}
	if two, gap := twoModes(ms, o.ModeGap, floor, o.MaxJitter); two && instructions {
		b.TwoModes, b.EverTwoModes = true, true
		b.Why = fmt.Sprintf("two modes: boot medians split by a gap of %.3g%%", 100*gap)
	}
	switch {
	case !instructions:
		b.Why = "wall time: boots are noisy, not deterministic"
	case b.TwoModes:
	case b.Boots < len(meds):
		b.Why = fmt.Sprintf("ran in %d of %d boots", b.Boots, len(meds))
	case b.Boots < 2:
		b.Why = "fewer than 2 boots"
	case !(b.MaxDiff < o.MaxJitter):
		b.Why = fmt.Sprintf("boots differ by up to %.3g%%, more than %.3g%%", 100*b.MaxDiff, 100*o.MaxJitter)
	case !(b.Bound < o.MaxBound):
		b.Why = fmt.Sprintf("bound %.3g%% is not below %.3g%%", 100*b.Bound, 100*o.MaxBound)
	default:
		b.Deterministic = true
	}
	return b
}

// relDiff is the relative difference of two boot medians: the larger of
// |a/b − 1| and |b/a − 1|, 0 when both are 0, +Inf when only one is.
func relDiff(a, b float64) float64 {
	lo, hi := math.Min(math.Abs(a), math.Abs(b)), math.Abs(a-b)
	switch {
	case hi == 0:
		return 0
	case lo == 0:
		return math.Inf(1)
	}
	return hi / lo
}

// twoModes reports whether the medians show a second mode (see the package
// documentation) and the relative size of the gap between the modes;
// resolution is the smallest relative gap that counts, and a single boot
// is a mode of its own when its gap exceeds lone.
func twoModes(medians []float64, gapFactor, resolution, lone float64) (bool, float64) {
	s := slices.Clone(medians)
	slices.Sort(s)
	if len(s) < 3 {
		return false, 0
	}
	at, gap := 0, -1.0
	for i := 0; i+1 < len(s); i++ {
		if g := s[i+1] - s[i]; g > gap {
			at, gap = i, g
		}
	}
	lower, upper := s[:at+1], s[at+1:]
	spread := math.Max(lower[len(lower)-1]-lower[0], upper[len(upper)-1]-upper[0])
	centre := math.Abs(sample.Median(s))
	if centre == 0 {
		return false, 0
	}
	rel := gap / centre
	if len(lower) < 2 || len(upper) < 2 {
		resolution = math.Max(resolution, lone)
	}
	return gap > gapFactor*spread && rel > resolution, rel
}

// quantile returns the q-quantile of sorted, interpolating linearly
// between order statistics (Hyndman and Fan's type 7, R's default).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 1 {
		return sorted[0]
	}
	pos := q * float64(len(sorted)-1)
	i := int(math.Floor(pos))
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	lo, hi := sorted[i], sorted[i+1]
	if math.IsInf(hi, 1) {
		return hi
	}
	return lo + (pos-float64(i))*(hi-lo)
}

func nanSlice(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = math.NaN()
	}
	return s
}

func finite(vs []float64) []float64 {
	var out []float64
	for _, v := range vs {
		if !math.IsNaN(v) {
			out = append(out, v)
		}
	}
	return out
}

// oneValue returns the one value of a configuration key over results ("" if
// none has it), or an error naming two different ones.
func oneValue(results []*benchfmt.Result, key string) (string, error) {
	v := ""
	for _, r := range results {
		got := r.GetConfig(key)
		switch {
		case got == "" || got == v:
		case v == "":
			v = got
		default:
			return "", fmt.Errorf("calibrate: results disagree on %s: %q and %q (calibrate one kernel with one plan at a time)", key, v, got)
		}
	}
	return v, nil
}

// intValue is oneValue for a count (0 when absent).
func intValue(results []*benchfmt.Result, key string) (int, error) {
	s, err := oneValue(results, key)
	if err != nil || s == "" {
		return 0, err
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("calibrate: %s %q is not a count", key, s)
	}
	return n, nil
}

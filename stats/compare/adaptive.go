package compare

import (
	"context"
	"errors"
	"fmt"

	"github.com/lpmbisect/lpmbisect/wire"
	"golang.org/x/perf/benchfmt"
)

// Source supplies the boots of an adaptive run. Implementations boot
// kernels (package measure: one after the other, several at once under
// icount, in pairs, or as jobs on other hosts); this package only asks for
// more.
type Source interface {
	// Measure brings every kernel of the run to at least n completed boots
	// (n complete pairs in a paired run), booting only what is missing. On
	// an error, the boots that completed are kept.
	Measure(ctx context.Context, n int) error
}

// ABSource is a Source of one comparison, A against B.
type ABSource interface {
	Source
	// Results returns every result of the completed boots so far, labelled
	// with wire.KeySide, wire.KeyBoot and, in a paired run, wire.KeyPair.
	Results() []*benchfmt.Result
}

// Adaptive is the stop rule of an adaptive run, the one every command uses
// (compare, bisect, bisect-run, nightly): measure Start boots per kernel,
// look, and while a look asks for more, add Step boots, up to MaxBoots.
// Looks never continue "until significant", only while undecided; what
// keeps repeated looks honest is the α-spending of Sequence, which must be
// given the same MaxBoots.
type Adaptive struct {
	Start, Step, MaxBoots int
}

// ErrNoLook is returned by Adaptive.Run when the source failed before the
// first look.
var ErrNoLook = errors.New("no look at the data: the first boots did not complete")

// Run measures to Start, calls look with the boots in, and adds Step boots
// while look asks for more and the cap allows. It returns the boots (per
// kernel) of the last look. An error from the source ends the run with that
// error, after a last look at what completed if the source got beyond the
// previous look (so finished boots are not lost for the report).
func (a Adaptive) Run(ctx context.Context, src Source, look func(boots int) (more bool, err error)) (int, error) {
	if a.Start < 1 || a.MaxBoots < a.Start {
		return 0, fmt.Errorf("compare: adaptive run from %d to at most %d boots: need 1 <= start <= max", a.Start, a.MaxBoots)
	}
	step := max(a.Step, 1)
	for n := a.Start; ; n = min(n+step, a.MaxBoots) {
		if err := src.Measure(ctx, n); err != nil {
			return n, err
		}
		more, err := look(n)
		if err != nil {
			return n, err
		}
		if !more || n >= a.MaxBoots {
			return n, nil
		}
	}
}

// Sequence follows one comparison of A with B over the looks of an
// adaptive run: it owns the run's cap (Options.MaxBoots), what earlier
// looks spent and decided, so that every caller spends α the same way.
// Give every look all the results so far, not only the new ones.
type Sequence struct {
	opts Options
	last *Report
}

// NewSequence starts a sequence of looks with opts (Options.Previous must
// be nil: the sequence keeps it).
func NewSequence(opts Options) (*Sequence, error) {
	if opts.Previous != nil {
		return nil, errors.New("compare: a new sequence has no previous look")
	}
	if _, err := opts.withDefaults(); err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	return &Sequence{opts: opts}, nil
}

// Look compares results (every boot of both sides so far) as the next look
// of the run. Rows decided at an earlier look keep their verdict and the
// p-value of the claim that decided them.
func (s *Sequence) Look(results []*benchfmt.Result) (*Report, error) {
	opts := s.opts
	if s.last != nil && opts.MaxBoots > 0 {
		opts.Previous = &s.last.Look
	}
	rep, err := Build(results, opts)
	if err != nil {
		return nil, err
	}
	s.last = rep
	return rep, nil
}

// Last returns the report of the last look, nil before the first.
func (s *Sequence) Last() *Report { return s.last }

// MaxBootsLimit is the most boots per side (pairs) a comparison may take.
const MaxBootsLimit = 200

// BootsError is a number of boots out of its range: Option is "boots"
// (between 1 and the max_boots of MaxOption) or "max_boots" (between 1
// and MaxBootsLimit).
type BootsError struct {
	Option    string
	N, Max    int
	MaxOption string // "" when Max is MaxBootsLimit
}

func (e *BootsError) Error() string {
	limit := fmt.Sprint(e.Max)
	if e.MaxOption != "" {
		limit = e.MaxOption + " " + limit
	}
	return fmt.Sprintf("%s %d must be between 1 and %s", e.Option, e.N, limit)
}

// DefaultMaxBoots is the cap of an adaptive comparison's boots per side
// (pairs) when none is given: compare's, a bisection's for each kernel,
// and the configuration's default.
const DefaultMaxBoots = 10

// FirstLook is what the boots of a comparison's first look depend on.
type FirstLook struct {
	// Boots asked for (0: decide).
	Boots int
	// Rows compared, Paired when the boots come in pairs.
	Rows   int
	Paired bool
	// Deterministic: the deterministic rule decides every row (then
	// DeterministicBoots are enough).
	Deterministic bool
	// Both verdicts must be reachable from the first look, not either: a
	// bisection's candidate must be able to come out SAME as one end and
	// DIFFERENT from the other.
	Both bool
}

// Start returns the boots per side (pairs, when paired) at which an
// adaptive comparison under opts first looks: f.Boots when given (not 0),
// else DeterministicBoots when the deterministic rule decides every row,
// else StartBoots. It checks opts.MaxBoots and the start against their
// ranges (*BootsError). This is the one rule of the first look for a
// comparison and a bisection alike.
func Start(opts Options, f FirstLook) (int, error) {
	if opts.MaxBoots < 1 || opts.MaxBoots > MaxBootsLimit {
		return 0, &BootsError{Option: "max_boots", N: opts.MaxBoots, Max: MaxBootsLimit}
	}
	boots := f.Boots
	if boots == 0 && f.Deterministic {
		boots = DeterministicBoots
	}
	if boots == 0 {
		var err error
		if boots, err = StartBoots(opts, f.Rows, f.Paired, f.Both); err != nil {
			return 0, err
		}
	}
	if boots < 1 || boots > opts.MaxBoots {
		return 0, &BootsError{Option: "boots", N: boots, Max: opts.MaxBoots, MaxOption: "max_boots"}
	}
	return boots, nil
}

// StartBoots returns the boots per side (pairs, when paired) at which an
// adaptive comparison of rows rows under opts should first look: the
// fewest at which either verdict is possible, at least 2, at most
// opts.MaxBoots (or the fewest for both verdicts, with both set).
func StartBoots(opts Options, rows int, paired, both bool) (int, error) {
	minToDecide := minBootsToDecide
	if paired {
		minToDecide = minPairsToDecide
	}
	same, different, err := minToDecide(opts, max(1, rows))
	if err != nil {
		return 0, err
	}
	if same == 0 && different == 0 {
		return 0, fmt.Errorf("compare: no verdict is reachable within %d %s (allow more boots or a larger alpha)", opts.MaxBoots, Units(paired))
	}
	n := positiveMin(same, different)
	if both {
		if same == 0 || different == 0 {
			return 0, fmt.Errorf("compare: SAME and DIFFERENT are not both reachable within %d %s (allow more boots or a larger alpha)", opts.MaxBoots, Units(paired))
		}
		n = max(same, different)
	}
	if opts.MaxBoots > 0 {
		n = min(n, opts.MaxBoots)
	}
	return max(2, n), nil
}

func positiveMin(a, b int) int {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}

// Decide runs an adaptive comparison of A with B to its end: it starts at
// start boots per side (see StartBoots), looks after every step and adds
// boots while a selected row is UNKNOWN (Report.NeedMoreBoots), up to
// opts.MaxBoots; with opts.MaxBoots 0 it is a fixed-size comparison of
// start boots, one look with all of α. It returns the last look's report
// (nil if no look happened) with the source's error, if any.
func Decide(ctx context.Context, src ABSource, opts Options, start int, selected func(bench string) bool) (*Report, error) {
	return DecideWithin(ctx, src, opts, start, opts.MaxBoots, selected)
}

// DecideWithin is Decide for a run cut short at last boots per side
// (at most opts.MaxBoots): α is spent as in a run capped at
// opts.MaxBoots, so its verdicts are those that run would have reached by
// then. Package calibrate runs its self-compares of split halves so, with
// the cap of the comparisons they calibrate.
func DecideWithin(ctx context.Context, src ABSource, opts Options, start, last int, selected func(bench string) bool) (*Report, error) {
	if start < 1 {
		return nil, fmt.Errorf("compare: a comparison starts at 1 boot or more, not %d", start)
	}
	fixed := opts.MaxBoots == 0
	if !fixed && (last < start || last > opts.MaxBoots) {
		return nil, fmt.Errorf("compare: a run from %d boots cut at %d: need start <= last <= max boots %d", start, last, opts.MaxBoots)
	}
	seq, err := NewSequence(opts)
	if err != nil {
		return nil, err
	}
	a := Adaptive{Start: start, Step: 1, MaxBoots: last}
	if fixed {
		a.MaxBoots = start
	}
	_, runErr := a.Run(ctx, src, func(int) (bool, error) {
		rep, err := seq.Look(src.Results())
		if err != nil {
			return false, err
		}
		return rep.NeedMoreBoots(selected), nil
	})
	return seq.Last(), runErr
}

// AsSide returns copies of results labelled as side (SideA or SideB), with
// the side as their kernel label too: one side may pool results labelled
// with several releases (a rebuilt tree, boots of one image from several
// runs), and Build needs one kernel label per side. Boots keep their
// numbers.
func AsSide(results []*benchfmt.Result, side string) []*benchfmt.Result {
	out := make([]*benchfmt.Result, len(results))
	for i, r := range results {
		c := r.Clone()
		c.SetConfig(wire.KeySide, side)
		c.SetConfig(wire.KeyKernel, side)
		out[i] = c
	}
	return out
}

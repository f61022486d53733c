package nightly

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/lpmbisect/lpmbisect/config"
	"github.com/lpmbisect/lpmbisect/flow/bisect"
	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/wire"
)

// Options say what one nightly run does.
type Options struct {
	// Config holds [nightly], the series and the defaults they override.
	Config *config.File
	// Date is the night, YYYY-MM-DD ("" for today).
	Date string
	// Only names the series to run (nil: every series of Config).
	Only []string
	// Wait is how long to wait for another nightly holding the history's
	// lock (0: refuse at once).
	Wait time.Duration
	// SetupFor makes the boot setup of a series from its configuration
	// (config.File.ForSeries) with runDir for its boots' logs; reference
	// is the series' reference kernel, a real kernel that probes KVM when
	// the series' accelerator is auto.
	SetupFor func(cfg *config.File, runDir, reference string) (*bisect.Bisector, error)
	// WriteMail and MailSubject render the mail of a night's new change
	// points: its body in Markdown and its subject line (the command gives
	// report.WriteChangePointMail and report.MailSubject). Without them no
	// mail is written, and the change points wait for a night that has.
	WriteMail   func(w io.Writer, m view.Mail) error
	MailSubject func(m view.Mail) string
	Log         *log.Logger
}

// Outcome is what a night means for whoever runs nightly from cron, in
// increasing severity.
type Outcome int

const (
	Quiet        Outcome = iota // nothing new, or an improvement (reported)
	Inconclusive                // the night could not tell (UNKNOWN verdicts, a drifting host)
	Regression                  // a new regression
	Failure                     // the host or the kernel failed: no build, no boot, no fetch
)

func (o Outcome) String() string {
	return [...]string{"quiet", "inconclusive", "regression", "failure"}[o]
}

// Night is what one series' night found.
type Night struct {
	Series history.Series
	Night  history.Night
	Rows   []history.NightRow
	// Verdicts are the night's comparisons (nil reports when it measured
	// nothing).
	Verdicts Verdicts
	Outcome  Outcome
	// Alerts are one line each: the night's own verdicts worth reading
	// (regressions, improvements, a host that moved, a failure).
	Alerts []string
	// Changes are the change points this night added, moved or withdrew.
	Changes []Change
	// Excursions are the nights the change-point pass found far from the
	// nights on both sides of them that the history did not hold as such
	// yet: the night before last or the one before, when tonight came
	// back (see package changepoint).
	Excursions []history.Excursion
	// Insight is the insight block of the tip against the last measured
	// tip (InsightAgainst says which), or against the reference on a
	// series' first night: stored with the night. nil without the guest's
	// insight pass (--no-insight).
	Insight        *insight.Diff
	InsightAgainst string
	// Mail is the mail body written for the night's new change points
	// ("" for none).
	Mail string
	// Resumed counts boots stored by an earlier, interrupted run of this
	// night; Booted those this run made.
	Resumed, Booted int
	Took            time.Duration
}

// Change is a change point that this night added, moved or withdrew.
type Change struct {
	Point history.ChangePoint
	What  string // "new", "moved", "withdrawn"
}

// ErrNoSeries is wrapped when the configuration has no series to run.
var ErrNoSeries = errors.New("no series to run")

// Run does one night's work for every series and returns what each found.
// An error means nightly could not run at all (no history database, the
// lock held by another nightly, a series that does not exist); a series
// whose night fails is recorded and reported in its Night, and the others
// go on.
func Run(ctx context.Context, o Options) ([]*Night, error) {
	cfg := o.Config
	if o.Date == "" {
		o.Date = time.Now().Format(time.DateOnly)
	}
	if _, err := time.Parse(time.DateOnly, o.Date); err != nil {
		return nil, fmt.Errorf("night %q is not a date (want YYYY-MM-DD)", o.Date)
	}
	series := cfg.Series
	if len(o.Only) > 0 {
		series = nil
		for _, name := range o.Only {
			i := slices.IndexFunc(cfg.Series, func(s config.Series) bool { return s.Name == name })
			if i < 0 {
				return nil, fmt.Errorf("%w: the configuration has no series %q", ErrNoSeries, name)
			}
			series = append(series, cfg.Series[i])
		}
	}
	if len(series) == 0 {
		return nil, fmt.Errorf("%w: the configuration has no [[series]]", ErrNoSeries)
	}
	db, err := OpenHistory(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	lock, err := db.Lock(ctx, "nightly", o.Wait)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	if o.Log != nil {
		o.Log.Printf("night %s of %d series, history in %s", o.Date, len(series), db.Location())
	}
	state, err := stateDir(cfg)
	if err != nil {
		return nil, err
	}
	var nights []*Night
	for _, s := range series {
		if err := ctx.Err(); err != nil {
			return nights, context.Cause(ctx)
		}
		r := &seriesRun{o: o, db: db, conf: s, cfg: cfg.ForSeries(s), dir: filepath.Join(state, s.Name), log: o.Log}
		if s.Accel == "" {
			r.cfg.Measure.Accel = string(defaultAccel)
		}
		n, err := r.run(ctx)
		if err != nil && ctx.Err() != nil {
			return append(nights, n), context.Cause(ctx)
		}
		nights = append(nights, n)
	}
	return nights, nil
}

// defaultAccel is the accelerator of a series that names none, whatever
// [measure] says: instruction counts, because wall time changes with every
// build's memory layout.
const defaultAccel = wire.AccelIcount

// OpenHistory opens the configuration's history database (see
// HistoryLocation).
func OpenHistory(ctx context.Context, cfg *config.File) (*history.DB, error) {
	loc, err := HistoryLocation(cfg)
	if err != nil {
		return nil, err
	}
	return history.Open(ctx, loc)
}

// HistoryLocation is where the configuration's history database is: its
// [nightly] db (a SQLite file or a postgres:// URL), else nightly.db in the
// cache directory.
func HistoryLocation(cfg *config.File) (string, error) {
	if cfg.Nightly.DB != "" {
		return cfg.Nightly.DB, nil
	}
	cache, err := cacheDir(cfg)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", fmt.Errorf("history: %w", err)
	}
	return filepath.Join(cache, "nightly.db"), nil
}

// stateDir is where builds, bisections and run logs of the nights go:
// [nightly] state, else <cache>/nightly.
func stateDir(cfg *config.File) (string, error) {
	if cfg.Nightly.State != "" {
		return cfg.Nightly.State, nil
	}
	cache, err := cacheDir(cfg)
	return filepath.Join(cache, "nightly"), err
}

func cacheDir(cfg *config.File) (string, error) {
	if cfg.Measure.CacheDir != "" {
		return cfg.Measure.CacheDir, nil
	}
	return measure.DefaultCacheDir()
}

func (r *seriesRun) logf(format string, args ...any) {
	if r.log != nil {
		r.log.Printf("%s: "+format, append([]any{r.conf.Name}, args...)...)
	}
}

// Summary is the night as the morning report tells it (report.WriteMorning).
func (n *Night) Summary() view.NightSummary {
	s := view.NightSummary{Series: n.Series, Night: n.Night, Rows: n.Rows, Outcome: n.Outcome.String(), Alerts: n.Alerts,
		Excursions: n.Excursions, Mail: n.Mail, Took: n.Took, Booted: n.Booted, Resumed: n.Resumed}
	for _, c := range n.Changes {
		if c.What != "updated" {
			s.Changes = append(s.Changes, view.NightChange{What: c.What, Point: c.Point})
		}
	}
	return s
}

// Worst is the most severe outcome of nights: a failure over a regression
// over an inconclusive night over a quiet one.
func Worst(nights []*Night) Outcome {
	o := Quiet
	for _, n := range nights {
		if n != nil {
			o = max(o, n.Outcome)
		}
	}
	return o
}

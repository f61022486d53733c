package nightly

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/flow/calibrate"
	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/wire"
)

// ErrImport is wrapped by Import's errors about its input.
var ErrImport = errors.New("cannot import")

// Imported says what Import did.
type Imported struct {
	Series  history.Series
	Nights  int // nights stored (a night imported again replaces its rows)
	Boots   int // boots stored; a boot stored before is not stored again
	Changes []Change
	// Excursions are the nights the pass now finds far from the nights on
	// both sides of them that the history did not hold as such before.
	Excursions []history.Excursion
}

// Import stores benchfmt results (from lpmbisect run or compare, or any
// tool) in a series' history, one night per date, and runs the
// change-point pass over the series. Every result must carry a date key
// (YYYY-MM-DD, or an RFC 3339 time) and a commit key; results are grouped
// into boots by their boot key within each file. Without a reference on a
// night, its kernel line is the tip's own value (the host is not divided
// out), and it has no host line.
//
// Each night is judged as a measured night is (judgeTips, with opts, the
// levels of a measured night's campaign.Judge): its tip against the last
// measured tip before it (the night before in the files, else the
// history's), and against its reference when it has one. The jitter
// bounds that let the deterministic rule decide instruction counts are
// the ones the results recorded (calibrate.FromResults, as lpmbisect stat
// reads them), else, under icount, the documented defaults
// (calibrate.DefaultBounds); opts' own bounds, if any, win. A night whose
// verdicts against the last tip stay UNKNOWN says why in its note (too few
// boots, say). opts' minimum effect is also the change-point pass's
// minimum magnitude.
func Import(ctx context.Context, db *history.DB, s history.Series, opts compare.Options, files []string) (*Imported, error) {
	nights, dates, err := readImportNights(files)
	if err != nil {
		return nil, err
	}
	imp := &Imported{}
	err = db.Write(ctx, func(tx *history.Tx) error {
		var err error
		imp.Series, err = tx.PutSeries(ctx, s)
		return err
	})
	if err != nil {
		return nil, err
	}
	accel := ""
	var prevTip [][]*benchfmt.Result // the last measured tip before the night
	for i, d := range dates {
		n := nights[d]
		tip, ref, err := n.sortBoots()
		if err != nil {
			return nil, err
		}
		if i == 0 {
			if prevTip, err = lastMeasuredTip(ctx, db, imp.Series.ID, d); err != nil {
				return nil, err
			}
		}
		nightOpts, err := importOptions(opts, n.accel, tip)
		if err != nil {
			return nil, fmt.Errorf("%w: night %s: %w", ErrImport, d, err)
		}
		rows, note, err := importedRows(ref, tip, prevTip, nightOpts)
		if err != nil {
			return nil, fmt.Errorf("%w: night %s: %w", ErrImport, d, err)
		}
		prevTip = tip
		accel = cmp.Or(accel, n.accel)
		if err := imp.store(ctx, db, n, rows, note); err != nil {
			return imp, err
		}
	}
	pass, err := updateChanges(ctx, db, imp.Series, changeOptions(accel, 100*opts.MinEffect), nil, nil)
	if err != nil {
		return imp, err
	}
	err = db.Write(ctx, func(tx *history.Tx) error { return pass.store(ctx, tx, imp.Series.ID) })
	imp.Changes, imp.Excursions = pass.changes, pass.newExcursions
	return imp, err
}

// importBoot names a boot of an imported night: its role (as its results
// say; "" when they do not), its file and its boot and side keys.
type importBoot struct {
	role       history.Role
	file, boot string
}

// importNight is one night of imported results.
type importNight struct {
	date, commit string
	boots        map[importBoot][]*benchfmt.Result
	order        []importBoot
	sides        map[string]bool
	accel        string
	kernel       map[history.Role]history.Kernel
	// roles are the boots' roles, once sortBoots decided them.
	roles map[importBoot]history.Role
}

// readImportNights reads the results files and groups their results into
// nights, by date, and boots; dates are the nights' dates in order.
func readImportNights(files []string) (nights map[string]*importNight, dates []string, err error) {
	nights = map[string]*importNight{}
	for _, path := range files {
		results, err := measure.ReadResultsFile(path)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrImport, err)
		}
		if len(results) == 0 {
			return nil, nil, fmt.Errorf("%w: %s holds no results", ErrImport, path)
		}
		for _, r := range results {
			date, commit := r.GetConfig(wire.KeyDate), r.GetConfig(wire.KeyCommit)
			if t, err := time.Parse(time.RFC3339, date); err == nil {
				date = t.UTC().Format(time.DateOnly)
			}
			file, line := r.Pos()
			if _, err := time.Parse(time.DateOnly, date); err != nil || commit == "" {
				return nil, nil, fmt.Errorf("%w: %s:%d: a result needs %q (YYYY-MM-DD) and %q configuration lines, has %q and %q",
					ErrImport, file, line, wire.KeyDate, wire.KeyCommit, date, commit)
			}
			n := nights[date]
			if n == nil {
				n = &importNight{date: date, commit: commit, boots: map[importBoot][]*benchfmt.Result{}, sides: map[string]bool{}, kernel: map[history.Role]history.Kernel{}}
				nights[date] = n
			}
			n.sides[r.GetConfig(wire.KeySide)] = true
			if n.accel == "" {
				n.accel = r.GetConfig(wire.KeyAccel)
			}
			k := importBoot{role: history.Role(r.GetConfig(wire.KeyRole)), file: path, boot: r.GetConfig(wire.KeyBoot) + "/" + r.GetConfig(wire.KeySide)}
			if _, ok := n.boots[k]; !ok {
				n.order = append(n.order, k)
			}
			n.boots[k] = append(n.boots[k], r)
		}
	}
	for d := range nights {
		dates = append(dates, d)
	}
	slices.Sort(dates)
	return nights, dates, nil
}

// sortBoots decides each boot's role (its own; else, on a night with both
// sides, side A is the reference), and returns the tip's boots and the
// reference's; it notes each role's kernel.
func (n *importNight) sortBoots() (tip, ref [][]*benchfmt.Result, err error) {
	both := n.sides[compare.SideA] && n.sides[compare.SideB]
	n.roles = map[importBoot]history.Role{}
	for _, k := range n.order {
		role := k.role
		if role == "" {
			role = history.RoleTip
			if both && strings.HasSuffix(k.boot, "/"+compare.SideA) {
				role = history.RoleReference
			}
		}
		if role != history.RoleTip && role != history.RoleReference {
			return nil, nil, fmt.Errorf("%w: %s: %s %q is neither tip nor reference", ErrImport, k.file, wire.KeyRole, role)
		}
		n.roles[k] = role
		if role == history.RoleTip {
			tip = append(tip, n.boots[k])
		} else {
			ref = append(ref, n.boots[k])
		}
		first := n.boots[k][0]
		n.kernel[role] = history.Kernel{Commit: first.GetConfig(wire.KeyCommit), Release: first.GetConfig(wire.KeyKernel), ImageSHA256: first.GetConfig(wire.KeyImage)}
	}
	if len(tip) == 0 {
		return nil, nil, fmt.Errorf("%w: night %s has reference results but no tip", ErrImport, n.date)
	}
	return tip, ref, nil
}

// store writes the night n, its boots and its rows in one transaction, and
// moves the series' tip to it.
func (imp *Imported) store(ctx context.Context, db *history.DB, n *importNight, rows []history.NightRow, note string) error {
	hn := history.Night{SeriesID: imp.Series.ID, Date: n.date, Status: history.StatusMeasured, Tip: n.kernel[history.RoleTip],
		Reference: n.kernel[history.RoleReference], Accel: n.accel, Note: note, Finished: time.Now()}
	err := db.Write(ctx, func(tx *history.Tx) error {
		id, err := tx.PutNight(ctx, hn)
		if err != nil {
			return err
		}
		index := map[history.Role]int{}
		for _, k := range n.order {
			role := n.roles[k]
			index[role]++
			ok, err := tx.PutBoot(ctx, bootRecord(id, role, index[role], "ok", n.boots[k]))
			if err != nil {
				return err
			}
			if ok {
				imp.Boots++
			}
		}
		if err := tx.SetNightRows(ctx, id, rows); err != nil {
			return err
		}
		return tx.SetTip(ctx, imp.Series.ID, hn.Tip.Commit, hn.Tip.ImageSHA256)
	})
	if err == nil {
		imp.Nights++
	}
	return err
}

// lastMeasuredTip reads the tip boots of the series' last measured night
// before date from the history; none when there is no such night.
func lastMeasuredTip(ctx context.Context, db *history.DB, seriesID int64, date string) ([][]*benchfmt.Result, error) {
	prev, err := db.LastMeasured(ctx, seriesID, date)
	if errors.Is(err, history.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	tip, _, err := readBoots(ctx, db, prev.ID)
	return tip, err
}

// importOptions are the comparison options opts for a night measured
// under accel (the results' accel key) whose tip boots are tip: with the
// jitter bounds the results recorded, else under icount the documented
// defaults.
func importOptions(opts compare.Options, accel string, tip [][]*benchfmt.Result) (compare.Options, error) {
	if len(opts.Bounds) > 0 {
		return opts, nil
	}
	if err := calibrate.FromResults(&opts, tip[0]); err != nil {
		return opts, err
	}
	if len(opts.Bounds) == 0 && wire.Accel(accel).CountsInstructions() {
		var names []string
		for _, boot := range tip {
			for _, r := range boot {
				names = append(names, r.Name.String())
			}
		}
		slices.Sort(names)
		opts.Bounds = calibrate.DefaultBounds(slices.Compact(names))
	}
	return opts, nil
}

// importedRows are an imported night's rows, judged as a measured night's
// (judgeTips: against the last tip prevTip, and the reference ref when it
// has one), and its note: "imported", and why its verdicts against the
// last tip are UNKNOWN when they are (the compared rows' own notes).
// Without a reference the kernel line is the tip's own value.
func importedRows(ref, tip, prevTip [][]*benchfmt.Result, opts compare.Options) ([]history.NightRow, string, error) {
	vsRef, vsPrev, err := judgeTips(ref, tip, prevTip, opts)
	if err != nil {
		return nil, "", err
	}
	note := "imported"
	if vsPrev == nil {
		note += "; the first night: no last tip to compare with"
	} else {
		var why []string
		for _, row := range vsPrev.Rows {
			if row.Compared() && !row.Control && row.Verdict == compare.Unknown {
				why = append(why, row.Notes...)
			}
		}
		slices.Sort(why)
		if why = slices.Compact(why); len(why) > 0 {
			note += "; vs the last tip UNKNOWN: " + strings.Join(why, "; ")
		}
	}
	if vsRef != nil {
		return nightRows(vsRef, vsPrev), note, nil
	}
	var all []*benchfmt.Result
	for _, b := range tip {
		all = append(all, b...)
	}
	sums, err := compare.Summarize(all)
	if err != nil {
		return nil, "", err
	}
	prev := previousRows(vsPrev)
	none := history.Estimate{Center: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	var rows []history.NightRow
	for _, s := range sums {
		m := history.Metric{Benchmark: s.Benchmark, Unit: s.Unit}
		nr := history.NightRow{Metric: m, Tip: estimate(s.A), Reference: none, Ratio: s.A.Center}
		if p, ok := prev[m]; ok && p.Compared() {
			nr.VsPrevious = comparison(p)
		}
		rows = append(rows, nr)
	}
	return rows, note, nil
}

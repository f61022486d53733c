package view

import (
	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/internal/shellquote"
)

// Mail is what a change-point mail says (report.WriteChangePointMail):
// the new change points of one series on one night, the nights either side
// of the step, and how to reproduce and answer them. One mail per night
// rather than per benchmark, because one commit usually moves several
// benchmarks at once; a mail of one change point is the same with one. The
// caller fills it from the database:
//
//	m := view.Mail{Series: s, Changes: newOnes, Config: configPath}
//	m.Before, err = db.Night(ctx, s.ID, newOnes[0].BeforeNight)
//	m.After, err = db.Night(ctx, s.ID, newOnes[0].Night)
//	m.BeforeRows, err = db.NightRows(ctx, m.Before.ID)
//	m.AfterRows, err = db.NightRows(ctx, m.After.ID)
//	m.Reproduce = view.Reproduction{Flags: flags, Before: beforeInput, After: afterInput}
type Mail struct {
	Series history.Series
	// Changes are the change points to tell, all of Series and of one
	// night; the first one worse than before leads the subject line
	// (else the first).
	Changes []history.ChangePoint
	// Before and After are the last night before the step and the first
	// after it (the change points' BeforeNight and Night), with their rows.
	Before, After         history.Night
	BeforeRows, AfterRows []history.NightRow
	// Reproduce is the comparison that shows the step again. Leave it zero
	// when no two kernels show it: for a change of the host line only, the
	// reference kernel moved, not the tip.
	Reproduce Reproduction
	// Config is the configuration file that the commands acknowledging or
	// muting the change points name.
	Config string
	// Excursions are the series' excursions worth telling beside the
	// change points: the nights between a change point's BeforeNight and
	// its Night that the pass left out (a bad night may hide which kernel
	// moved), and the night's new ones.
	Excursions []history.Excursion
	// Insight, when set, is the insight block of the two tips (before →
	// after), written after the setup as in compare's Markdown report.
	Insight *insight.Diff
}

// Reproduction is the compare command that shows a step again: the two
// nights' tips, measured as the nights measured them.
type Reproduction struct {
	// Flags are compare's flags, as the nights measured: "--accel",
	// "icount", "--bench", "lookup", ….
	Flags []string
	// Before and After are the kernel inputs of the two tips: images,
	// .deb packages or build directories.
	Before, After string
}

// Command is the command line, quoted for a POSIX shell.
func (r Reproduction) Command() string {
	return shellquote.Join(append(append([]string{"lpmbisect", "compare"}, r.Flags...), r.Before, r.After))
}

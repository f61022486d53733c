package series

import (
	"context"
	"os"

	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/present/view"
)

// Record stores a series run in the history, where lpmbisect serve lists
// it: v is the run as its reports show it, document what the history keeps
// to render it again (report.WriteSeriesRecord) and text its text report.
// It returns the run's ID.
func Record(ctx context.Context, db *history.DB, v view.Series, document, text string) (int64, error) {
	run := history.PatchSeriesRun{Repo: v.Repo, Base: v.Base, Title: v.Title, Patches: len(v.Patches),
		Outcome: v.Outcome.String(), Command: v.Command, Document: document, Report: text}
	if v.Reply == nil && len(v.Patches) > 0 {
		run.Tip = v.Patches[len(v.Patches)-1].Commit // a git range's last commit
	}
	run.Host, _ = os.Hostname()
	var id int64
	err := db.Write(ctx, func(tx *history.Tx) error {
		var err error
		id, err = tx.PutPatchSeriesRun(ctx, run)
		return err
	})
	return id, err
}

package series

import (
	"fmt"
	"strings"

	"github.com/lpmbisect/lpmbisect/internal/words"
	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
)

// View is the series as the reports show it, run by command, its outcome
// under failOn.
func (r *Result) View(command string, failOn compare.FailOn) view.Series {
	total := len(r.Patches)
	v := view.Series{
		Title: fmt.Sprintf("%s..%s", words.ShortHash(r.Base), words.ShortHash(r.tip())),
		Repo:  r.Repo, Base: r.Base, BaseSubject: r.BaseSubject, Stopped: r.Stopped,
		Environment: view.SeriesEnvironment(r.Environment),
		Command:     command, Outcome: r.Outcome(failOn), FailOn: failOn, State: r.State,
	}
	if r.Reply != nil {
		v.Reply = &view.SeriesReply{Subject: r.Reply.Subject, InReplyTo: r.Reply.InReplyTo, References: r.Reply.References}
		v.Title = strings.TrimPrefix(r.Reply.Subject, "Re: ")
	}
	index := map[string]int{} // benchmark (unit) → position in v.Benchmarks
	column := func(row compare.Row) *view.SeriesBenchmark {
		k := row.Benchmark + "\x00" + row.Unit
		i, ok := index[k]
		if !ok {
			i = len(v.Benchmarks)
			index[k] = i
			v.Benchmarks = append(v.Benchmarks, view.SeriesBenchmark{Benchmark: row.Benchmark, Unit: row.Unit, Base: row.A.Center, Cells: make([]view.SeriesCell, total)})
		}
		return &v.Benchmarks[i]
	}
	for i, p := range r.Patches {
		v.Patches = append(v.Patches, view.SeriesPatch{
			N: p.N, Total: total, Commit: p.Commit, Subject: p.Subject, Status: string(p.Status), Detail: p.Detail,
			LogTail: p.LogTail, Log: p.Log, AgainstN: p.AgainstN, Parent: p.AgainstN == p.N-1, Image: p.Image,
			BuildSeconds: p.BuildSeconds, Moved: p.Moved(), Insight: p.Insight,
		})
		if p.VsBase != nil {
			for _, row := range p.VsBase.Rows {
				if row.Control {
					continue
				}
				c := &column(row).Cells[i]
				c.Center, c.VsBase = row.B.Center, delta(row)
			}
		}
		if p.VsParent != nil {
			for _, row := range p.VsParent.Rows {
				if !row.Control {
					column(row).Cells[i].VsParent = delta(row)
				}
			}
		}
	}
	return v
}

func delta(row compare.Row) *view.SeriesDelta {
	d := &view.SeriesDelta{DeltaPct: row.DeltaPct, Verdict: row.Verdict, Boots: row.B.Boots}
	if row.Verdict == compare.Different {
		d.Direction = row.Direction().String()
	}
	return d
}

// tip is the last commit of the series that was made.
func (r *Result) tip() string {
	for i := len(r.Patches) - 1; i >= 0; i-- {
		if r.Patches[i].Commit != "" {
			return r.Patches[i].Commit
		}
	}
	return r.Base
}

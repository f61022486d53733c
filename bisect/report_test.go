package bisect

import (
	"errors"
	"testing"
)

// TestReportOutcome checks what counts as success: a culprit, confirmed by
// the re-check when there was one, and an image that differs from its
// parent's; anything else is inconclusive, with the verdict.
func TestReportOutcome(t *testing.T) {
	for _, c := range []struct {
		name string
		res  Result
		want string // "" for success
	}{
		{"not re-checked", Result{FirstBad: "abc"}, ""},
		{"confirmed", Result{FirstBad: "abc", Recheck: &Recheck{Confirmed: true}}, ""},
		{"no culprit", Result{Range: []string{"a", "b"}}, "inconclusive: inconclusive"},
		{"not confirmed", Result{FirstBad: "abc", Recheck: &Recheck{Parent: Verdict{Class: Good}, Culprit: Verdict{Class: Skip}}},
			"inconclusive: suspect: the re-check did not confirm it (parent good, culprit skip against the endpoints)"},
		{"same image", Result{FirstBad: "abc", Recheck: &Recheck{Confirmed: true, SameImage: true, Note: "same bzImage"}}, "inconclusive: suspect: same bzImage"},
	} {
		err := Report{State: &State{}, Result: &c.res}.Outcome()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: Outcome = %v; want success", c.name, err)
		case c.want != "" && (!errors.Is(err, ErrInconclusive) || err.Error() != c.want):
			t.Errorf("%s: Outcome = %v; want %q, an ErrInconclusive", c.name, err, c.want)
		}
	}
}

package bisect

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/internal/git"
)

// TestReportOutcome checks what counts as success: a culprit, confirmed by
// the re-check when there was one, and an image that differs from its
// parent's; anything else is inconclusive, with the verdict.
func TestReportOutcome(t *testing.T) {
	for _, c := range []struct {
		name string
		res  campaign.Result
		want string // "" for success
	}{
		{"not re-checked", campaign.Result{FirstBad: "abc"}, ""},
		{"confirmed", campaign.Result{FirstBad: "abc", Recheck: &campaign.Recheck{Confirmed: true}}, ""},
		{"no culprit", campaign.Result{Range: []string{"a", "b"}}, "inconclusive: inconclusive"},
		{"not confirmed", campaign.Result{FirstBad: "abc", Recheck: &campaign.Recheck{Parent: campaign.Verdict{Class: campaign.Good}, Culprit: campaign.Verdict{Class: campaign.Skip}}},
			"inconclusive: suspect: the re-check did not confirm it (parent good, culprit skip against the endpoints)"},
		{"same image", campaign.Result{FirstBad: "abc", Recheck: &campaign.Recheck{Confirmed: true, SameImage: true, Note: "same bzImage"}}, "inconclusive: suspect: same bzImage"},
	} {
		err := Report{State: &campaign.State{}, Result: &c.res}.Outcome()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: Outcome = %v; want success", c.name, err)
		case c.want != "" && (!errors.Is(err, ErrInconclusive) || err.Error() != c.want):
			t.Errorf("%s: Outcome = %v; want %q, an ErrInconclusive", c.name, err, c.want)
		}
	}
}

// TestSearchTarget checks that a target with images searches them and one
// without searches the repository.
func TestSearchTarget(t *testing.T) {
	s := &Bisector{&campaign.Setup{}}
	only := filepath.Join(t.TempDir(), "only.deb")
	os.WriteFile(only, []byte("a kernel"), 0o644)
	if _, _, err := s.Search(context.Background(), Target{Images: []string{only}, Repo: t.TempDir()}, "", ""); !errors.Is(err, ErrTooFewImages) {
		t.Errorf("Search(one image) = %v; want ErrTooFewImages (the images, not the repository)", err)
	}
	if _, _, err := s.Search(context.Background(), Target{Repo: t.TempDir(), Good: "a", Bad: "b"}, "", ""); !errors.Is(err, git.ErrNotRepo) {
		t.Errorf("Search(a directory outside git) = %v; want git.ErrNotRepo (the repository)", err)
	}
}

package campaign_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/testbed/testcampaign"
)

func TestBenchEndpoints(t *testing.T) {
	dir := t.TempDir()
	slow := testcampaign.WriteKernel(t, filepath.Join(dir, "slow"), 1065)
	fast := testcampaign.WriteKernel(t, filepath.Join(dir, "fast"), 838)
	slow2 := testcampaign.WriteKernel(t, filepath.Join(dir, "slow2"), 1065.3, "rebuilt")

	for _, c := range []struct {
		name      string
		good, bad string
		reverse   bool
		want      error
	}{
		{"regression", fast, slow, false, nil},
		{"improvement with --reverse", slow, fast, true, nil},
		{"improvement without --reverse", slow, fast, false, campaign.ErrWrongDirection},
		{"regression with --reverse", fast, slow, true, campaign.ErrWrongDirection},
		{"same image", slow, slow, false, campaign.ErrEndpointsNotDifferent},
		{"same performance", slow, slow2, false, campaign.ErrEndpointsNotDifferent},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := testcampaign.NewBench(t, &testcampaign.Measurer{}, t.TempDir(), c.reverse)
			eff, err := b.SetEndpoints(context.Background(), campaign.Candidate{Input: c.good}, campaign.Candidate{Input: c.bad})
			if !errors.Is(err, c.want) {
				t.Fatalf("SetEndpoints(%s) error = %v; want %v", c.name, err, c.want)
			}
			if err == nil && len(eff.Signal) != 1 {
				t.Errorf("SetEndpoints(%s).Signal = %v; want the lookup row", c.name, eff.Signal)
			}
			want := map[bool]string{false: "bisect for an improvement", true: "bisect for a regression"}[c.reverse]
			if errors.Is(err, campaign.ErrWrongDirection) && !strings.Contains(err.Error(), want) {
				t.Errorf("SetEndpoints(%s) error %q does not say to %s", c.name, err, want)
			}
		})
	}
}

func TestBenchClassify(t *testing.T) {
	dir := t.TempDir()
	good := testcampaign.WriteKernel(t, filepath.Join(dir, "good"), 1065)
	bad := testcampaign.WriteKernel(t, filepath.Join(dir, "bad"), 838)
	m := &testcampaign.Measurer{}
	b := testcampaign.NewBench(t, m, t.TempDir(), true)
	if _, err := b.SetEndpoints(context.Background(), campaign.Candidate{Input: good}, campaign.Candidate{Input: bad}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		kernel string
		want   campaign.Class
		reason string
	}{
		{"like good", testcampaign.WriteKernel(t, filepath.Join(dir, "c1"), 1065.4, "c1"), campaign.Good, "SAME"},
		{"like bad", testcampaign.WriteKernel(t, filepath.Join(dir, "c2"), 837.9, "c2"), campaign.Bad, "SAME"},
		{"the good image itself", good, campaign.Good, "SAME"},
		{"halfway", testcampaign.WriteKernel(t, filepath.Join(dir, "c3"), 950, "c3"), campaign.Skip, "UNKNOWN after 8 boots"},
		{"does not boot", testcampaign.WriteKernel(t, filepath.Join(dir, "c4"), 838, "noboot"), campaign.Skip, "did not boot"},
		{"not a kernel", filepath.Join(dir, "missing"), campaign.Skip, "no kernel"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, _, err := b.ClassifyKernel(context.Background(), campaign.Candidate{Input: c.kernel})
			if err != nil {
				t.Fatalf("Classify(%s) error: %v", c.name, err)
			}
			if v.Class != c.want || !strings.Contains(v.Reason, c.reason) {
				t.Errorf("Classify(%s) = %s: %s; want %s mentioning %q", c.name, v.Class, v.Reason, c.want, c.reason)
			}
		})
	}

	// Everything measured is in the store: a new Bench over the same store
	// classifies the same kernels without booting anything.
	m2 := &testcampaign.Measurer{}
	b2 := testcampaign.NewBench(t, m2, b.Store.Dir, true)
	if _, err := b2.SetEndpoints(context.Background(), campaign.Candidate{Input: good}, campaign.Candidate{Input: bad}); err != nil {
		t.Fatal(err)
	}
	if v, _, err := b2.ClassifyKernel(context.Background(), campaign.Candidate{Input: filepath.Join(dir, "c2")}); err != nil || v.Class != campaign.Bad {
		t.Errorf("Classify(like bad) from the store = %v, %v; want bad", v.Class, err)
	}
	if m2.Calls() != 0 {
		t.Errorf("a Bench over a filled store booted %d times; want 0", m2.Calls())
	}
}

func TestBenchRecheck(t *testing.T) {
	dir := t.TempDir()
	good := testcampaign.WriteKernel(t, filepath.Join(dir, "good"), 1000)
	bad := testcampaign.WriteKernel(t, filepath.Join(dir, "bad"), 1200)
	parent := testcampaign.WriteKernel(t, filepath.Join(dir, "parent"), 1000.1, "parent")
	culprit := testcampaign.WriteKernel(t, filepath.Join(dir, "culprit"), 1199.8, "culprit")
	b := testcampaign.NewBench(t, &testcampaign.Measurer{}, t.TempDir(), false)
	if _, err := b.SetEndpoints(context.Background(), campaign.Candidate{Input: good}, campaign.Candidate{Input: bad}); err != nil {
		t.Fatal(err)
	}
	rc, err := b.Recheck(context.Background(), campaign.Candidate{Input: parent}, campaign.Candidate{Input: culprit}, 4)
	if err != nil {
		t.Fatal(err)
	}
	if !rc.Confirmed || rc.Boots != 4 || rc.Parent.Class != campaign.Good || rc.Culprit.Class != campaign.Bad {
		t.Errorf("Recheck = confirmed %v, %d boots, parent %s, culprit %s; want confirmed, 4 boots, good, bad", rc.Confirmed, rc.Boots, rc.Parent.Class, rc.Culprit.Class)
	}
	rc, err = b.Recheck(context.Background(), campaign.Candidate{Input: culprit}, campaign.Candidate{Input: culprit}, 4)
	if err != nil || !rc.SameImage || rc.Confirmed {
		t.Errorf("Recheck(identical images) = same image %v, confirmed %v, %v; want a suspect result", rc.SameImage, rc.Confirmed, err)
	}
}

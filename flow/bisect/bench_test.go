package bisect

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/stats/compare"
	"golang.org/x/perf/benchfmt"
)

func TestBenchEndpoints(t *testing.T) {
	dir := t.TempDir()
	slow := writeKernel(t, filepath.Join(dir, "slow"), 1065)
	fast := writeKernel(t, filepath.Join(dir, "fast"), 838)
	slow2 := writeKernel(t, filepath.Join(dir, "slow2"), 1065.3, "rebuilt")

	for _, c := range []struct {
		name      string
		good, bad string
		reverse   bool
		want      error
	}{
		{"regression", fast, slow, false, nil},
		{"improvement with --reverse", slow, fast, true, nil},
		{"improvement without --reverse", slow, fast, false, ErrWrongDirection},
		{"regression with --reverse", fast, slow, true, ErrWrongDirection},
		{"same image", slow, slow, false, ErrEndpointsNotDifferent},
		{"same performance", slow, slow2, false, ErrEndpointsNotDifferent},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBench(t, &fakeMeasurer{}, t.TempDir(), c.reverse)
			eff, err := b.SetEndpoints(context.Background(), Candidate{Input: c.good}, Candidate{Input: c.bad})
			if !errors.Is(err, c.want) {
				t.Fatalf("SetEndpoints(%s) error = %v; want %v", c.name, err, c.want)
			}
			if err == nil && len(eff.Signal) != 1 {
				t.Errorf("SetEndpoints(%s).Signal = %v; want the lookup row", c.name, eff.Signal)
			}
			want := map[bool]string{false: "bisect for an improvement", true: "bisect for a regression"}[c.reverse]
			if errors.Is(err, ErrWrongDirection) && !strings.Contains(err.Error(), want) {
				t.Errorf("SetEndpoints(%s) error %q does not say to %s", c.name, err, want)
			}
		})
	}
}

func TestBenchClassify(t *testing.T) {
	dir := t.TempDir()
	good := writeKernel(t, filepath.Join(dir, "good"), 1065)
	bad := writeKernel(t, filepath.Join(dir, "bad"), 838)
	m := &fakeMeasurer{}
	b := newBench(t, m, t.TempDir(), true)
	if _, err := b.SetEndpoints(context.Background(), Candidate{Input: good}, Candidate{Input: bad}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		kernel string
		want   Class
		reason string
	}{
		{"like good", writeKernel(t, filepath.Join(dir, "c1"), 1065.4, "c1"), Good, "SAME"},
		{"like bad", writeKernel(t, filepath.Join(dir, "c2"), 837.9, "c2"), Bad, "SAME"},
		{"the good image itself", good, Good, "SAME"},
		{"halfway", writeKernel(t, filepath.Join(dir, "c3"), 950, "c3"), Skip, "UNKNOWN after 8 boots"},
		{"does not boot", writeKernel(t, filepath.Join(dir, "c4"), 838, "noboot"), Skip, "did not boot"},
		{"not a kernel", filepath.Join(dir, "missing"), Skip, "no kernel"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, _, err := b.ClassifyKernel(context.Background(), Candidate{Input: c.kernel})
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
	m2 := &fakeMeasurer{}
	b2 := newBench(t, m2, b.Store.Dir, true)
	if _, err := b2.SetEndpoints(context.Background(), Candidate{Input: good}, Candidate{Input: bad}); err != nil {
		t.Fatal(err)
	}
	if v, _, err := b2.ClassifyKernel(context.Background(), Candidate{Input: filepath.Join(dir, "c2")}); err != nil || v.Class != Bad {
		t.Errorf("Classify(like bad) from the store = %v, %v; want bad", v.Class, err)
	}
	if m2.calls != 0 {
		t.Errorf("a Bench over a filled store booted %d times; want 0", m2.calls)
	}
}

func TestBenchRecheck(t *testing.T) {
	dir := t.TempDir()
	good := writeKernel(t, filepath.Join(dir, "good"), 1000)
	bad := writeKernel(t, filepath.Join(dir, "bad"), 1200)
	parent := writeKernel(t, filepath.Join(dir, "parent"), 1000.1, "parent")
	culprit := writeKernel(t, filepath.Join(dir, "culprit"), 1199.8, "culprit")
	b := newBench(t, &fakeMeasurer{}, t.TempDir(), false)
	if _, err := b.SetEndpoints(context.Background(), Candidate{Input: good}, Candidate{Input: bad}); err != nil {
		t.Fatal(err)
	}
	rc, err := b.Recheck(context.Background(), Candidate{Input: parent}, Candidate{Input: culprit}, 4)
	if err != nil {
		t.Fatal(err)
	}
	if !rc.Confirmed || rc.Boots != 4 || rc.Parent.Class != Good || rc.Culprit.Class != Bad {
		t.Errorf("Recheck = confirmed %v, %d boots, parent %s, culprit %s; want confirmed, 4 boots, good, bad", rc.Confirmed, rc.Boots, rc.Parent.Class, rc.Culprit.Class)
	}
	rc, err = b.Recheck(context.Background(), Candidate{Input: culprit}, Candidate{Input: culprit}, 4)
	if err != nil || !rc.SameImage || rc.Confirmed {
		t.Errorf("Recheck(identical images) = same image %v, confirmed %v, %v; want a suspect result", rc.SameImage, rc.Confirmed, err)
	}
}

// A verdict reached at an early look is final, and compare does not test
// the row again; the sequence keeps the p-value it was reached with, so a
// step's confidence stays meaningful.
func TestJudgeCarriesDecidedClaims(t *testing.T) {
	boots := func(value float64, n, from int) []*benchfmt.Result {
		var out []*benchfmt.Result
		for i := from; i < from+n; i++ {
			r := &benchfmt.Result{Name: benchfmt.Name("LPMTrie/op=lookup"), Iters: 1, Values: []benchfmt.Value{{Value: value * (1 + 1e-4*float64(i%3)), Unit: "insn/op"}}}
			r.SetConfig("boot", fmt.Sprint(i+1))
			out = append(out, r)
		}
		return out
	}
	j := Judge{Alpha: 0.05, MinEffectPct: 1}
	s, err := j.sequence(8)
	if err != nil {
		t.Fatal(err)
	}
	a := boots(1000, 8, 0)
	first, err := j.look(s, a, boots(1000, 4, 0))
	if err != nil {
		t.Fatal(err)
	}
	k := RowKey{"LPMTrie/op=lookup", "insn/op"}
	if first[k].Verdict != compare.Same || first[k].PClaim >= 1 {
		t.Fatalf("first look = %s p(same)=%v; want SAME with its p", first[k].Verdict, first[k].PClaim)
	}
	second, err := j.look(s, a, boots(1000, 8, 0))
	if err != nil {
		t.Fatal(err)
	}
	if second[k].Verdict != compare.Same || second[k].PClaim != first[k].PClaim {
		t.Errorf("second look = %s p(same)=%v; want SAME carried with p(same)=%v", second[k].Verdict, second[k].PClaim, first[k].PClaim)
	}
}

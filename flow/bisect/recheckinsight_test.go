package bisect

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/testbed/testcampaign"
	"github.com/lpmbisect/lpmbisect/wire"
)

// insightMeasurer is a fakeMeasurer that can run the guest's insight
// pass: each kernel's guest sends kallsyms and a profile whose samples
// fall in longest_prefix_match.isra.0 in proportion to the kernel's value
// above 1000 (none for the culprit, 1000, as when it was inlined).
type insightMeasurer struct {
	testcampaign.Measurer
	asked []bool // per call of MeasureInsight: whether the pass was asked for
}

func (m *insightMeasurer) MeasureInsight(ctx context.Context, kernels []campaign.Candidate, boots int, in *measure.Insight) ([][]campaign.BootResults, [][]byte, error) {
	m.asked = append(m.asked, in != nil)
	out, err := m.Measure(ctx, kernels, boots)
	docs := make([][]byte, len(kernels))
	for i, k := range kernels {
		lpm := uint64(0)
		if strings.Contains(k.Input, "parent") {
			lpm = 60
		}
		doc := &wire.InsightDoc{
			Kallsyms: "ffffffff84200000 T _text\nffffffff84200100 T trie_lookup_elem\nffffffff84200400 t longest_prefix_match.isra.0\nffffffff84200600 T _etext\n",
			Profile: &wire.ProfileDoc{Event: wire.EventCPUClock, Weight: "instructions", Period: 20011, Text: 0xffffffff84200000,
				Benchmarks: []wire.BenchProfile{{Benchmark: "LPMTrie/op=lookup/keys=random/entries=10000", Ops: 1000, Count: 100 * 20011, Samples: 100,
					Sites: []wire.ProfileSite{{IP: 0xffffffff84200410, Samples: lpm}, {IP: 0xffffffff84200120, Samples: 100 - lpm}}}}},
		}
		if docs[i], err = wire.EncodeInsight(doc); err != nil {
			return out, docs, err
		}
	}
	return out, docs, err
}

// TestRecheckKeepsGuestInsight checks that the re-check, and only the
// re-check, asks for the guest's pass when the bench has an Insight, that
// the store keeps each kernel's document, and that the re-check's report
// shows the profile of the parent against the culprit from them.
func TestRecheckKeepsGuestInsight(t *testing.T) {
	dir := t.TempDir()
	good := testcampaign.WriteKernel(t, filepath.Join(dir, "good"), 1200)
	bad := testcampaign.WriteKernel(t, filepath.Join(dir, "bad"), 1000)
	parent := testcampaign.WriteKernel(t, filepath.Join(dir, "parent"), 1199.8, "parent")
	culprit := testcampaign.WriteKernel(t, filepath.Join(dir, "culprit"), 1000.1, "culprit")
	m := &insightMeasurer{}
	b := testcampaign.NewBench(t, m, t.TempDir(), true)
	b.Insight = &measure.Insight{Guest: true, ProfilePeriod: insight.DefaultProfilePeriod}
	ctx := context.Background()
	if _, err := b.SetEndpoints(ctx, campaign.Candidate{Input: good}, campaign.Candidate{Input: bad}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Recheck(ctx, campaign.Candidate{Input: parent}, campaign.Candidate{Input: culprit}, 4); err != nil {
		t.Fatal(err)
	}
	if len(m.asked) != 1 || m.Calls() < 2 {
		t.Errorf("insight pass asked for in %d of %d calls; want the re-check's only", len(m.asked), m.Calls())
	}
	pk, _ := testcampaign.Resolve(parent)
	ck, _ := testcampaign.Resolve(culprit)
	if doc, err := b.Store.Insight(pk.SHA256); err != nil || doc == nil {
		t.Fatalf("stored insight of the parent: %v, %v; want the document", doc, err)
	}
	s := &campaign.Setup{Bench: b}
	d := s.Bench.Store.InsightDiff(b.Insight, pk, ck)
	if d == nil || len(d.Profiles) != 1 {
		t.Fatalf("re-check insight %+v; want a profile diff", d)
	}
	p := d.Profiles[0]
	if a, c := p.A.Share("longest_prefix_match.isra.0"), p.B.Share("longest_prefix_match.isra.0"); a != 0.6 || c != 0 {
		t.Errorf("share of longest_prefix_match.isra.0 parent %v → culprit %v; want 0.6 → 0", a, c)
	}
	// A report written later, by a run that asked for no pass (a night's
	// mail, a resumed bisection with --no-insight), still reads what the
	// pass found when it ran.
	if d := s.Bench.Store.InsightDiff(nil, pk, ck); d == nil || len(d.Profiles) != 1 {
		t.Errorf("re-check insight read by a run without the pass %+v; want the kept documents' profile diff", d)
	}
	if d := (*campaign.Store)(nil).InsightDiff(nil, pk, ck); d == nil || len(d.Profiles) != 0 {
		t.Errorf("insight without a store %+v; want the images' block, no profile", d)
	}
}

package nightly

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/lpmbisect/lpmbisect/flow/bisect"
	"github.com/lpmbisect/lpmbisect/flow/campaign"
	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/host/kernel"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/wire"
)

// TestTipsInsightFromKeptDocuments checks that the documents a night's
// guests sent are kept per image, and that a mail's block of the tip
// before a change against the tip after it, measured on other nights,
// profiles both from them; a tip whose night kept none has no profile
// side.
func TestTipsInsightFromKeptDocuments(t *testing.T) {
	dir := t.TempDir()
	resolve := func(in string) (*kernel.Kernel, error) {
		data, err := os.ReadFile(in)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		return &kernel.Kernel{Input: in, Image: in, SHA256: hex.EncodeToString(sum[:])}, nil
	}
	tip := func(name string, lpm uint64) (history.Kernel, *measure.Side) {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(name), 0o644)
		k, _ := resolve(path)
		doc := &wire.InsightDoc{
			Kallsyms: "ffffffff84200000 T _text\nffffffff84200100 T trie_lookup_elem\nffffffff84200400 t longest_prefix_match.isra.0\nffffffff84200600 T _etext\n",
			Profile: &wire.ProfileDoc{Event: wire.EventCPUClock, Weight: "instructions", Period: 20011, Text: 0xffffffff84200000,
				Benchmarks: []wire.BenchProfile{{Benchmark: "LPMTrie/op=lookup/keys=random/entries=1000", Ops: 1000, Count: 100 * 20011, Samples: 100,
					Sites: []wire.ProfileSite{{IP: 0xffffffff84200410, Samples: lpm}, {IP: 0xffffffff84200120, Samples: 100 - lpm}}}}},
		}
		gz, err := wire.EncodeInsight(doc)
		if err != nil {
			t.Fatal(err)
		}
		return history.Kernel{Input: path}, &measure.Side{Kernel: k, Insight: gz}
	}
	before, beforeSide := tip("6.1", 56)
	after, afterSide := tip("6.12", 0)
	r := &seriesRun{dir: dir, setup: &bisect.Bisector{Setup: &campaign.Setup{Bench: &campaign.Bench{Resolve: resolve, Params: "params",
		Insight: &measure.Insight{Guest: true, ProfilePeriod: insight.DefaultProfilePeriod}}}}}
	r.keepInsight([]*measure.Side{beforeSide, {Kernel: beforeSide.Kernel}}) // the night of the tip before
	r.keepInsight([]*measure.Side{afterSide})                               // a later night
	d := r.tipsInsight(before, after)
	if d == nil || len(d.Profiles) != 1 {
		t.Fatalf("tips' insight %+v; want a profile diff", d)
	}
	lpm := "longest_prefix_match.isra.0"
	if a, b := d.Profiles[0].A.Share(lpm), d.Profiles[0].B.Share(lpm); a != 0.56 || b != 0 {
		t.Errorf("share of %s %v → %v; want 0.56 → 0", lpm, a, b)
	}
	row := func(center float64) []history.NightRow {
		return []history.NightRow{{Metric: history.Metric{Benchmark: "LPMTrie/op=lookup/keys=random/entries=1000", Unit: "insn/op"}, Tip: history.Estimate{Center: center, Boots: 2}}}
	}
	attributeTips(d, row(777.5), row(650.6))
	if p := d.Profiles[0]; p.PerOpSource != "timed" || p.PerOpA != 777.5 || p.Rows[0].Function != lpm || math.Abs(p.Rows[0].PerOpA-0.56*777.5) > 1e-9 {
		t.Errorf("attributed profile %+v; want the tips' timed 777.5 → 650.6 split by share", p)
	}
	other, _ := tip("6.12-other", 0)
	if d := r.tipsInsight(before, other); d == nil || len(d.Profiles) != 1 || d.Profiles[0].B != nil || d.B.ProfileSummary != nil {
		t.Errorf("tips' insight with a tip whose night kept no document: %+v; want the profile of the tip before only", d)
	}
	if d := r.tipsInsight(before, history.Kernel{}); d != nil {
		t.Errorf("tips' insight with an unknown tip = %v; want none", fmt.Sprint(d))
	}
	// Pruning keeps the documents of the kernels it keeps.
	keep := afterSide.Kernel.SHA256
	if n := r.insightStore().PruneInsight(func(sha string) bool { return sha == keep }); n != 1 {
		t.Errorf("PruneInsight removed %d documents; want the one of the tip before", n)
	}
	if d := r.tipsInsight(before, after); d == nil || len(d.Profiles) != 1 || d.Profiles[0].A != nil || d.Profiles[0].B == nil {
		t.Errorf("tips' insight after pruning the tip before's document: %+v; want the profile of the tip after only", d)
	}
}

package serve

import (
	"context"
	"encoding/json"
	"html"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/present/report"
)

// testInsight is an insight block with a profile on each side: the
// lookups' top functions on Debian 6.1 and 6.12 under icount, and a
// function whose name is markup (a guest's kallsyms is untrusted).
func testInsight() *insight.Diff {
	const bench = "LPMTrie/op=lookup/keys=random/entries=1000"
	profile := func(fns ...insight.FunctionShare) []insight.Profile {
		var total uint64
		for _, f := range fns {
			total += f.Samples
		}
		for i := range fns {
			fns[i].Share = float64(fns[i].Samples) / float64(total)
		}
		return []insight.Profile{{Benchmark: bench, Event: "cpu-clock", Weight: "instructions", Period: 20011,
			Samples: total, Ops: 200000, PerOp: 900, Functions: fns}}
	}
	a := &insight.Side{Source: "kallsyms (approximate sizes)", Profiles: profile(
		insight.FunctionShare{Function: "longest_prefix_match.isra.0", Samples: 5280},
		insight.FunctionShare{Function: "trie_lookup_elem", Samples: 3072},
		insight.FunctionShare{Function: "<script>alert(1)</script>", Samples: 900})}
	b := &insight.Side{Source: "kallsyms (approximate sizes)", Profiles: profile(
		insight.FunctionShare{Function: "trie_lookup_elem", Samples: 8220})}
	a.ProfileSummary = &insight.ProfileSummary{Event: "cpu-clock", Weight: "instructions", Period: 20011, Cost: 289921858}
	b.ProfileSummary = &insight.ProfileSummary{Event: "cpu-clock", Weight: "instructions", Period: 20011, Cost: 317725750}
	return insight.Compare(a, b, insight.Options{})
}

// putInsight stores d as the insight block of the series' night on date,
// as nightly does.
func putInsight(t *testing.T, db *history.DB, series, date string, d *insight.Diff) {
	t.Helper()
	ctx := context.Background()
	all, err := db.AllSeries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		if s.Name != series {
			continue
		}
		n, err := db.Night(ctx, s.ID, date)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := insight.EncodeDiff(&b, d); err != nil {
			t.Fatal(err)
		}
		err = db.Write(ctx, func(tx *history.Tx) error {
			return tx.PutNightInsight(ctx, history.NightInsight{NightID: n.ID, Against: "A: the tip of yesterday, B: tonight's tip", Document: b.String()})
		})
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("no series %s", series)
}

// A night's page shows the insight block stored with the night, as
// compare's page does (the text block and a chart per profile), escaped,
// and its JSON carries it; a night without one shows none.
func TestNightInsight(t *testing.T) {
	ts, db := testServer(t, "")
	cps := openChanges(t, db)
	date := cps[0].Night
	putInsight(t, db, "public", date, testInsight())
	night := report.NightPath("public", date)
	code, page := get(t, ts.Client(), ts.URL+night)
	if code != 200 {
		t.Fatalf("GET %s = %d %s", night, code, page)
	}
	for _, want := range []string{"<h2>Why it changed</h2>", "A: the tip of yesterday, B: tonight&#39;s tip",
		"Profile of LPMTrie/op=lookup/keys=random/entries=1000 (A → B)", "longest_prefix_match.isra.0", "<figure>", "<svg"} {
		if !strings.Contains(page, want) {
			t.Errorf("the night's page lacks %q", want)
		}
	}
	if strings.Contains(page, "<script>") || !strings.Contains(html.UnescapeString(page), "<script>alert(1)</script>") {
		t.Errorf("the profile's function named as markup is not escaped on the page")
	}
	code, body := get(t, ts.Client(), ts.URL+night+"?format=json")
	var doc report.HistoryDocument
	if err := json.Unmarshal([]byte(body), &doc); code != 200 || err != nil || len(doc.Series) != 1 || len(doc.Series[0].Nights) != 1 {
		t.Fatalf("the night's JSON: %d %v\n%s", code, err, body)
	}
	in := doc.Series[0].Nights[0].Insight
	if in == nil || !strings.Contains(in.Against, "tonight's tip") || len(in.Block.Profiles) != 1 || len(in.Block.ProfileLines) == 0 {
		t.Errorf("the night's JSON insight: %+v; want the stored block with its profile", in)
	}
	// Another night has none, and the series' JSON carries no block.
	other := report.NightPath("public", cps[1].Night)
	if _, page := get(t, ts.Client(), ts.URL+other); strings.Contains(page, "Why it changed") {
		t.Errorf("night %s shows an insight block it does not have", cps[1].Night)
	}
	if _, body := get(t, ts.Client(), ts.URL+report.SeriesPath("public")+"?format=json"); strings.Contains(body, `"insight"`) {
		t.Errorf("the series' JSON carries insight blocks; they are the night pages'")
	}
}

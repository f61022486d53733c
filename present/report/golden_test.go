package report

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lpmbisect/lpmbisect/flow/calibrate"
	"github.com/lpmbisect/lpmbisect/guest/workloads"
	"github.com/lpmbisect/lpmbisect/history"
	"github.com/lpmbisect/lpmbisect/host/insight"
	"github.com/lpmbisect/lpmbisect/host/measure"
	"github.com/lpmbisect/lpmbisect/host/vmrunner"
	"github.com/lpmbisect/lpmbisect/present/view"
	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/wire"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestGolden (testdata/golden)")

// goldenDir holds the output of every renderer from the fixed inputs of
// goldenCases, byte for byte: a change of the package that changes one of
// them changes what users read, and must say so.
const goldenDir = "testdata/golden"

// goldenCase renders one golden file.
type goldenCase struct {
	name   string // file name in goldenDir
	render func(t *testing.T, w io.Writer) error
}

// TestGolden renders every renderer from fixed inputs and compares the
// bytes with testdata/golden; go test -run TestGolden -update rewrites
// them. Every file there must have its case, so a renderer that goes away
// takes its golden file with it.
func TestGolden(t *testing.T) {
	cases := goldenCases(t)
	names := map[string]bool{}
	for _, c := range cases {
		if names[c.name] {
			t.Fatalf("two golden cases write %s", c.name)
		}
		names[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := c.render(t, &b); err != nil {
				t.Fatalf("render %s: %v", c.name, err)
			}
			path := filepath.Join(goldenDir, c.name)
			if *update {
				if err := os.MkdirAll(goldenDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden file: %v (go test -run TestGolden -update writes it)", err)
			}
			if got := b.Bytes(); !bytes.Equal(got, want) {
				t.Errorf("output differs from %s at %s (go test -run TestGolden -update rewrites it)", path, firstDifference(string(got), string(want)))
			}
		})
	}
	entries, err := os.ReadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !names[e.Name()] {
			t.Errorf("%s has no golden case: delete it, or add its case", filepath.Join(goldenDir, e.Name()))
		}
	}
}

// firstDifference says where got and want part: the line number and both
// lines.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl || i >= len(g) || i >= len(w) {
			return fmt.Sprintf("line %d:\ngot:  %q\nwant: %q", i+1, gl, wl)
		}
	}
	return "the end"
}

// goldenCases are the renderers and their fixed inputs: the comparison
// report in every format (instruction counts with every run field and the
// insight block, the same without any, a paired wall-time run, controls
// that moved, environment drift, floors that keep rows undecided), the
// history in every format (the fortnight, a series of images, no series),
// the change-point mails, the bisection report, the morning report, the
// calibration, the insight block, the benchmark list and the progress
// lines.
func goldenCases(t *testing.T) []goldenCase {
	var cases []goldenCase
	comparison := func(name string, rep func(t *testing.T) *compare.Report, meta view.Meta, formats ...Format) {
		for _, f := range formats {
			cases = append(cases, goldenCase{name + "." + goldenExt(f), func(t *testing.T, w io.Writer) error { return Write(w, f, rep(t), meta) }})
		}
	}
	all := []Format{FormatText, FormatMarkdown, FormatJSON, FormatHTML}
	full := testMeta
	full.ResultsFile, full.FailedBoots, full.Host = "results.txt", 1, "bench-1 (Intel(R) Xeon(R) Gold 6230, 2 CPUs)"
	full.Insight = insightDiff()
	full.BootCost = [2]*wire.BootCost{{Boots: 2, Phases: []wire.PhaseCost{
		{Phase: wire.PhaseToInit, Ticks: 466, Idle: 60, Boots: 2}, {Phase: wire.PhaseBenchmarks, Ticks: 278.4, Idle: 120, Boots: 2},
		{Phase: wire.PhaseInsight, Ticks: 2332.2, Boots: 1}, {Phase: wire.PhaseAll, Ticks: 744.4, Idle: 180, Boots: 2}}}}
	full.CPU = [2]*view.SideCPU{goldenCPU(false), goldenCPU(false)}
	comparison("compare-icount", icountReport, full, all...)
	// One kernel on the default model against zen2 with mitigations=off
	// (compare --cpu-profile-b zen2 --append-b mitigations=off K K).
	twoCPUs := testMeta
	twoCPUs.B = testMeta.A
	twoCPUs.CPU = [2]*view.SideCPU{goldenCPU(false), goldenCPU(true)}
	comparison("compare-two-cpus", func(t *testing.T) *compare.Report {
		rep := icountReport(t)
		rep.B.Kernel, rep.OneKernel = rep.A.Kernel, true
		rep.Differences = []compare.Difference{{Key: wire.KeyCPUModel, A: twoCPUs.CPU[0].Model, B: twoCPUs.CPU[1].Model}, {Key: wire.KeyAppend, B: "mitigations=off"}}
		return rep
	}, twoCPUs, all...)
	comparison("compare-bare", icountReport, view.Meta{}, all...)
	profiled := testMeta
	profiled.Insight = profileDiff()
	comparison("compare-profile", icountReport, profiled, FormatHTML)
	comparison("compare-failon-change", icountReport, view.Meta{FailOn: compare.FailOnChange}, FormatText)
	comparison("compare-paired", pairedReport, pairedMeta, all...)
	comparison("compare-paired-incomplete", func(t *testing.T) *compare.Report {
		return build(t, pairedText(8, pairedInput, "B5"), compare.Options{})
	}, pairedMeta, FormatText, FormatJSON)
	for _, tc := range []struct {
		name   string
		factor float64
	}{{"compare-controls-moved", 1.13}, {"compare-drift", 1.6}} {
		comparison(tc.name, func(t *testing.T) *compare.Report {
			benches := slices.Clone(icountInput[:2])
			noop := icountInput[3]
			noop.b = slices.Clone(noop.a)
			for i := range noop.b {
				noop.b[i] *= tc.factor
			}
			return build(t, resultsText("insn/op", append(benches, noop)), compare.Options{})
		}, testMeta, FormatText, FormatMarkdown, FormatJSON)
	}
	// A user's program under instruction counts, no calibration: its
	// harness (and bpf_loop's) moved with the kernel, which is no drift,
	// and its own work is a line of its own.
	comparison("compare-harness-icount", func(t *testing.T) *compare.Report {
		return build(t, strings.Replace(resultsText("insn/op", harnessInput), "accel: tcg-icount", "accel: icount", 1), compare.Options{Bounds: harnessBounds})
	}, view.Meta{FailOn: compare.FailOnRegression, Insight: harnessProfile()}, FormatText, FormatJSON)
	comparison("compare-floors", func(*testing.T) *compare.Report { return floorsReport() }, view.Meta{}, FormatText, FormatMarkdown, FormatJSON)

	historyCase := func(name string, h func() view.History) {
		for _, f := range all {
			cases = append(cases, goldenCase{name + "." + goldenExt(f), func(t *testing.T, w io.Writer) error { return WriteHistory(w, f, h()) }})
		}
	}
	historyCase("history", testHistory)
	historyCase("history-images", func() view.History { return view.History{Series: []view.HistorySeries{imageSeries()}} })
	historyCase("history-none", func() view.History { return view.History{} })
	historyCase("history-no-nights", func() view.History {
		return view.History{Series: []view.HistorySeries{{Series: history.Series{Name: "new", Kind: history.GitSeries, Source: "/src/bpf-next"}}}}
	})

	mail := func(name string, m func(t *testing.T) view.Mail) {
		cases = append(cases, goldenCase{name, func(t *testing.T, w io.Writer) error {
			msg := m(t)
			if _, err := fmt.Fprintf(w, "MailSubject: %s\n\n", MailSubject(msg)); err != nil {
				return err
			}
			return WriteChangePointMail(w, msg)
		}})
	}
	mail("mail-culprit.md", func(t *testing.T) view.Mail { return testMail(t, 7) })
	mail("mail-insight.md", func(t *testing.T) view.Mail {
		m := testMail(t, 7)
		m.Insight = insightDiff()
		return m
	})
	mail("mail-host.md", func(t *testing.T) view.Mail {
		m := testMail(t, 9)
		m.Reproduce = view.Reproduction{}
		return m
	})
	mail("mail-several.md", func(t *testing.T) view.Mail { return testMail(t, 10, 9) })
	mail("mail-bisect-failed.md", func(t *testing.T) view.Mail {
		m := testMail(t, 7)
		m.Changes[0].Bisect = history.Bisection{State: history.BisectFailed, Reason: "every step was skipped"}
		m.Changes[0].DeltaPct = -21.3
		return m
	})

	for name, b := range map[string]func() view.Bisection{"bisection-commits": commitsBisection, "bisection-images": imagesBisection} {
		cases = append(cases,
			goldenCase{name + ".txt", func(t *testing.T, w io.Writer) error { return WriteBisectionText(w, b()) }},
			goldenCase{name + ".html", func(t *testing.T, w io.Writer) error { return WriteBisectionHTML(w, b()) }})
	}

	for _, f := range []Format{FormatText, FormatMarkdown, FormatJSON} {
		cases = append(cases,
			goldenCase{"morning." + goldenExt(f), func(t *testing.T, w io.Writer) error { return WriteMorning(w, f, morningNights()) }},
			goldenCase{"calibration." + goldenExt(f), func(t *testing.T, w io.Writer) error {
				v, err := testCalibration().View()
				if err != nil {
					return err
				}
				return WriteCalibration(w, f, v)
			}})
	}
	cases = append(cases,
		goldenCase{"insight.txt", func(t *testing.T, w io.Writer) error { return writeInsightText(w, insightDiff()) }},
		goldenCase{"insight.md", func(t *testing.T, w io.Writer) error { return writeInsightMarkdown(w, insightDiff()) }},
		goldenCase{"insight.json", func(t *testing.T, w io.Writer) error { return WriteInsightJSON(w, insightDiff()) }},
		goldenCase{"insight-profile.txt", func(t *testing.T, w io.Writer) error { return writeInsightText(w, profileDiff()) }},
		goldenCase{"insight-profile.md", func(t *testing.T, w io.Writer) error { return writeInsightMarkdown(w, profileDiff()) }},
		goldenCase{"insight-profile.json", func(t *testing.T, w io.Writer) error { return WriteInsightJSON(w, profileDiff()) }},
		goldenCase{"insight-exact-profile.txt", func(t *testing.T, w io.Writer) error { return writeInsightText(w, exactProfileDiff()) }},
		goldenCase{"insight-exact-profile.json", func(t *testing.T, w io.Writer) error { return WriteInsightJSON(w, exactProfileDiff()) }},
		goldenCase{"cpu-profiles.txt", func(t *testing.T, w io.Writer) error {
			return WriteCPUProfiles(w, append([]vmrunner.CPUProfile{{}}, vmrunner.CPUProfiles...))
		}},
		goldenCase{"benchmarks.txt", func(t *testing.T, w io.Writer) error {
			return WriteBenchmarks(w, testBenchmarks(), workloads.Params{Entries: 10000, PrefixLen: 32, BatchEntries: 1000})
		}},
		goldenCase{"progress.txt", writeProgress},
	)
	return cases
}

func goldenExt(f Format) string {
	switch f {
	case FormatText:
		return "txt"
	case FormatMarkdown:
		return "md"
	}
	return string(f)
}

// floorsReport is a paired report of rows that calibrated floors keep
// undecided (TestUndecidedNamesTheFloor's).
func floorsReport() *compare.Report {
	row := func(name string, minEffect, delta float64, need compare.Verdict, boots int, hides bool) compare.Row {
		return compare.Row{Benchmark: name, Unit: "sec/op", Verdict: compare.Unknown, MinEffect: minEffect, DeltaPct: delta, NeedFor: need, BootsNeeded: boots,
			FloorHides: hides, Paired: true, Pairs: 10, A: compare.Summary{Boots: 10, Center: 1}, B: compare.Summary{Boots: 10, Center: 1 + delta/100}}
	}
	return &compare.Report{Alpha: 0.05, MinEffect: 0.01, Confidence: 0.95, Paired: true,
		A: compare.SideInfo{Name: "A", Kernel: "6.1.0-57-cloud-amd64"}, B: compare.SideInfo{Name: "B", Kernel: "6.12.117+deb12-cloud-amd64"},
		Look: compare.Look{Number: 2, Boots: 10, MaxBoots: 10, History: []int{8, 10}}, Rows: []compare.Row{
			row("withheld", 0.50, -17.76, compare.Different, 8, true),
			row("just inside", 0.30, -29.34, compare.Same, compare.MaxBootsNeeded+1, false),
			row("reaching it", 0.30, -31.79, compare.Different, 8, false),
			row("user's floor", 0.01, -3, compare.Different, 14, false),
			row("small change", 0.15, 2.08, compare.Same, 12, false),
		}}
}

// imageSeries is a series of prebuilt kernels (TestHistoryImageSeries').
func imageSeries() view.HistorySeries {
	sha := func(c byte) string { return strings.Repeat(string(c), 64) }
	return view.HistorySeries{
		Series: history.Series{Name: "ci-images", Kind: history.ImageSeries, Source: "/srv/ci/kernels", Reference: "ref.deb"},
		Nights: []history.Night{
			{Date: "2026-11-02", Status: history.StatusMeasured, Tip: history.Kernel{ImageSHA256: sha('b'), Release: "6.1.0-50-cloud-amd64"}},
			{Date: "2026-11-01", Status: history.StatusMeasured, Tip: history.Kernel{ImageSHA256: sha('a'), Release: "6.1.0-47-cloud-amd64"}},
			{Date: "2026-11-03", Status: history.StatusBootFailed, Reason: "boot-timeout", Tip: history.Kernel{ImageSHA256: sha('c')}},
		},
		ChangePoints: []history.ChangePoint{{ID: 1, Metric: metricLookup, Line: history.LineKernel, Night: "2026-11-02", BeforeNight: "2026-11-01",
			DeltaPct: -16.7, P: 1e-5, Status: history.ChangeOpen, Bisect: history.Bisection{State: history.BisectSkipped, Reason: "no images between the nights"}}},
	}
}

// commitsBisection is a git bisection that found and confirmed its
// culprit, with the insight block and a page for the re-check.
func commitsBisection() view.Bisection {
	bench := "LPMTrie/op=lookup/keys=random/entries=10000"
	return view.Bisection{
		Culprit: "first bad commit: 1a4a0cb7985f bpf/lpm_trie: inline longest_prefix_match() in the lookup fast path",
		Verdict: "confirmed by the re-check",
		Effect: []view.BisectionRow{{Benchmark: bench, Unit: "insn/op", A: 1065.1, B: 838.2, DeltaPct: -21.3, Verdict: compare.Different, P: 0.0022,
			BootsA: 5, BootsB: 5, Comparison: "DIFFERENT (-21.3%, p=0.0022)"}},
		Recheck: []view.BisectionRow{{Benchmark: bench, Unit: "insn/op", A: 1065.0, B: 838.3, DeltaPct: -21.29, Verdict: compare.Different, P: 0.0079,
			BootsA: 4, BootsB: 4, Comparison: "DIFFERENT (-21.3%, p=0.0079)"}},
		Drift:      []string{"LPMTrie/op=noop insn/op"},
		Confidence: 0.9513, RecheckP: 0.0079,
		Steps: []view.BisectionStep{
			{N: 1, What: "5be2d1f07c3a bpf: selftests: cover LPM trie batch lookups", Image: "aa11bb22cc33", Boots: 4, Class: "good",
				Reason: "SAME as good", LogLine: "step 1: 5be2d1f07c3a good (4 boots): SAME as good"},
			{N: 2, What: "9d8c7b6a5f4e bpf: verifier: track precision", Image: "", Boots: 0, Class: "skip",
				Reason: "build failed", LogLine: "step 2: 9d8c7b6a5f4e skip: build failed"},
			{N: 3, What: "1a4a0cb7985f bpf/lpm_trie: inline longest_prefix_match()", Image: "dd44ee55ff66", Boots: 5, Class: "bad",
				Reason: "DIFFERENT from good, SAME as bad", LogLine: "step 3: 1a4a0cb7985f bad (5 boots): DIFFERENT from good, SAME as bad"},
		},
		Measured: 4, Instructions: true,
		StatePath: "/var/cache/lpmbisect/bisect/state.json", LogPath: "/var/cache/lpmbisect/bisect/state.log",
		RecheckHTML: "state.report.recheck.html",
		Insight:     insightDiff(),
	}
}

// imagesBisection is a bisection over prebuilt kernels that ended with
// skipped steps and no single culprit.
func imagesBisection() view.Bisection {
	return view.Bisection{
		Culprit: "no single culprit: skipped steps leave 2 candidates: linux-image-6.1.0-50.deb linux-image-6.1.0-51.deb",
		Verdict: "inconclusive",
		Effect: []view.BisectionRow{{Benchmark: "LPMTrie/op=update/keys=random/entries=10000", Unit: "sec/op", A: 1.21e-6, B: 1.34e-6, DeltaPct: 10.7,
			Verdict: compare.Different, P: 0.03, BootsA: 8, BootsB: 8, Comparison: "DIFFERENT (+10.7%, p=0.030)"}},
		Confidence: 0.8, RecheckP: -1,
		Steps: []view.BisectionStep{
			{N: 1, What: "#3 linux-image-6.1.0-50.deb", Image: "0f0f0f0f0f0f", Boots: 0, Class: "skip", Reason: "boot-timeout", LogLine: "step 1: #3 skip: boot-timeout"},
			{N: 2, What: "#4 linux-image-6.1.0-51.deb", Image: "1e1e1e1e1e1e", Boots: 2, Class: "skip", Reason: "UNKNOWN against both", LogLine: "step 2: #4 skip: UNKNOWN against both"},
		},
		Measured: 4, Images: true,
		StatePath: "state.json", LogPath: "state.log",
	}
}

// morningNights are two series' nights: the fortnight's night 8 with its
// new change point, and a night that failed to build.
func morningNights() []view.NightSummary {
	hs := testHistorySeries()
	v := newSeriesView(hs)
	n8, _ := v.night("2026-11-08")
	n5, _ := v.night("2026-11-05")
	var cp history.ChangePoint
	for _, c := range hs.ChangePoints {
		if c.ID == 7 {
			cp = c
		}
	}
	images := history.Series{Name: "ci-images", Kind: history.ImageSeries, Source: "/srv/ci/kernels", Reference: "ref.deb"}
	return []view.NightSummary{
		{Series: hs.Series, Night: n8, Rows: v.rows[n8.Date], Outcome: "regression",
			Alerts:  []string{"LPMTrie/op=lookup/keys=random/entries=10000: +7.20% insn/op (worse) against the last tip"},
			Changes: []view.NightChange{{What: "new", Point: cp}},
			Mail:    "/var/cache/lpmbisect/nightly/bpf-next/mail/2026-11-08.md", Took: 14*time.Minute + 31*time.Second + 400*time.Millisecond, Booted: 8, Resumed: 2},
		{Series: images, Night: n5, Outcome: "failure", Took: 4 * time.Minute},
	}
}

// testCalibration is a calibration of two benchmarks under icount and one
// under wall time.
func testCalibration() *calibrate.Calibration {
	return &calibrate.Calibration{
		Version: 1,
		Key: calibrate.Key{Host: calibrate.Host{Name: "bench-1", CPU: "Intel(R) Xeon(R) Gold 6230", CPUs: 2}, Accel: "icount",
			QEMU: "7.2.22", CPUModel: "Westmere-v1", Samples: 5, Rounds: 2000},
		Date:   time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC),
		Kernel: "6.12.117+deb12-cloud-amd64", Image: "391d229a7c64", Boots: 8,
		Method: calibrate.Method{Quantile: 0.9, SafetyFactor: 3, BoundFloor: 0.001, Quantum: 1, MaxJitter: 0.005, MaxBound: 0.05, ModeGap: 0.01,
			Grid: []float64{0.005, 0.01, 0.02}, SameShare: 0.95, SplitBoots: 4, Splits: 35, Exhaustive: true},
		Benchmarks: []calibrate.Benchmark{
			{Name: "LPMTrie/op=lookup/keys=random/entries=10000", Unit: "insn/op", Boots: 8, Medians: []float64{838, 838.1, 838, 838.2, 838, 838.1, 838, 838},
				Centre: 838, MaxDiff: 0.00024, QuantileDiff: 0.00012, Bound: 0.001, Deterministic: true, Floor: 0.005, FloorReached: true, SameShare: []float64{1, 1, 1}},
			{Name: "LPMTrie/op=update/keys=random/entries=10000", Unit: "insn/op", Boots: 8, Centre: 2150, MaxDiff: 0.08, QuantileDiff: 0.05, Bound: 0.15,
				Why: "largest difference 8% over 0.5%", SameShare: []float64{0, 0.2, 0.6}},
			{Name: "LPMTrie/op=noop", Unit: "sec/op", Boots: 8, Centre: 4.1e-8, MaxDiff: 0.2, QuantileDiff: 0.12, Floor: 0.02, FloorReached: true,
				SameShare: []float64{0.5, 0.9, 0.97}, FalseDifferent: 0.03},
		},
	}
}

// testBenchmarks is a fixed list of benchmarks: one with a kernel minimum
// and a vCPU need, one without, two of one family.
func testBenchmarks() []*workloads.Benchmark {
	return []*workloads.Benchmark{
		{Name: "LPMTrie/op=lookup/keys=random", Doc: "lookups of random keys in an LPM trie, in a bpf_loop", Params: []string{"entries", "prefix_len"},
			Requires: []workloads.Requirement{{Feature: "bpf_loop", MinKernel: "5.17"}}},
		{Name: "LPMTrie/op=lookup/keys=sequential", Doc: "lookups of random keys in an LPM trie, in a bpf_loop", Params: []string{"entries"},
			Requires: []workloads.Requirement{{Feature: "bpf_loop", MinKernel: "5.17"}}},
		{Name: "LPMTrie/op=noop", Doc: "the harness alone: an empty bpf_loop body"},
		{Name: "MapBatch/op=lookup", Doc: "batched lookups from user space", Params: []string{"batch_entries"}, MinCPUs: 2,
			Requires: []workloads.Requirement{{Feature: "batch ops", MinKernel: "5.6"}, {Feature: "LPM batch ops", MinKernel: "5.13"}}},
	}
}

// writeProgress writes the progress lines of a boot that completed and one
// that panicked, as a log (not a terminal) gets them. The elapsed time is
// the wall clock's: it is masked.
func writeProgress(t *testing.T, w io.Writer) error {
	var b bytes.Buffer
	p := NewProgress(&b)
	a := &measure.Side{Name: "A", Label: "6.1.0-57-cloud-amd64"}
	bs := &measure.Side{Name: "B", Label: "6.12.117+deb12-cloud-amd64"}
	p.BootStarts(a, 1, 0, 4)
	p.BootEnded(measure.BootReport{Side: a, Boot: 1, Done: 1, Total: 4, Written: 30,
		Result: &vmrunner.Result{Outcome: vmrunner.OK, Channel: "virtio", Accel: wire.AccelIcount, Duration: 7234 * time.Millisecond}})
	p.BootStarts(bs, 1, 1, 4)
	p.BootEnded(measure.BootReport{Side: bs, Boot: 1, Done: 2, Total: 4,
		Result: &vmrunner.Result{Outcome: vmrunner.Panic, Detail: "Kernel panic - not syncing: VFS", Accel: wire.AccelIcount,
			Duration: 1960 * time.Millisecond, ConsoleLog: "run/B-1/console.log"}})
	p.Done()
	out := regexp.MustCompile(`elapsed [0-9.hms]+`).ReplaceAllString(b.String(), "elapsed ELAPSED")
	_, err := io.WriteString(w, out)
	return err
}

// harnessInput is a user's program on Debian 6.1 and 6.12 in instruction
// counts (two boots a side, as measured): the bpf_loop noop 16 → 18, the
// program's noop 61 → 90, the program 261 → 275.
var harnessInput = []benchBoots{
	{"LPMTrie/op=noop", []float64{16, 16}, []float64{18, 18}},
	{"Workload/prog=xdp_lpm/op=noop", []float64{61, 61}, []float64{90, 90}},
	{"Workload/prog=xdp_lpm", []float64{261, 261}, []float64{275, 275}},
}

// harnessBounds are the default bounds a comparison without calibration
// gives them under icount.
var harnessBounds = map[string]float64{"LPMTrie/op=noop": 0.002, "Workload/prog=xdp_lpm/op=noop": 0.002,
	"Workload/prog=xdp_lpm": 0.002, "Workload/prog=xdp_lpm/op=own": 0.002}

// harnessProfile is a profile of the program's noop, which names the
// kernel functions its change is in.
func harnessProfile() *insight.Diff {
	d := profileDiff()
	d.Profiles = append(d.Profiles, insight.ProfileDiff{Benchmark: "Workload/prog=xdp_lpm/op=noop", PerOpSource: "timed", PerOpUnit: "insn/op",
		PerOpA: 61, PerOpB: 90, Rows: []insight.ProfileRow{
			{Function: "bpf_test_run", ShareA: 0.5, ShareB: 0.6, DeltaPP: 10, PerOpA: 30.5, PerOpB: 54},
			{Function: "xdp_test_run_batch", ShareA: 0.3, ShareB: 0.25, DeltaPP: -5, PerOpA: 18.3, PerOpB: 22.5}}})
	return d
}

// goldenCPU is a side's CPU as Debian 6.1 reports it on the default model,
// or on zen2 with mitigations=off.
func goldenCPU(zen2 bool) *view.SideCPU {
	if zen2 {
		return &view.SideCPU{Profile: "zen2", Model: "Westmere-v1,-cx16,-hypervisor,vendor=AuthenticAMD,family=23,model=49,stepping=0",
			Append: "mitigations=off", ReturnThunk: "none", Vulnerabilities: []wire.Vulnerability{
				{Name: "indirect_target_selection", Text: "Not affected"}, {Name: "meltdown", Text: "Not affected"},
				{Name: "retbleed", Text: "Vulnerable"}, {Name: "spec_rstack_overflow", Text: "Vulnerable"},
				{Name: "spectre_v2", Text: "Vulnerable; STIBP: disabled; PBRSB-eIBRS: Not affected; BHI: Not affected"}}}
	}
	return &view.SideCPU{Profile: "default", Model: "Westmere-v1,-cx16", ReturnThunk: "indirect_target_selection: Aligned branch/return thunks", Vulnerabilities: []wire.Vulnerability{
		{Name: "indirect_target_selection", Text: "Mitigation: Aligned branch/return thunks"}, {Name: "meltdown", Text: "Mitigation: PTI"},
		{Name: "retbleed", Text: "Not affected"}, {Name: "spec_rstack_overflow", Text: "Not affected"},
		{Name: "spectre_v2", Text: "Mitigation: Retpolines; STIBP: disabled; RSB filling; PBRSB-eIBRS: Not affected; BHI: Retpoline"}}}
}

package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/lpmbisect/lpmbisect/stats/compare"
)

const lookup = "LPMTrie/op=lookup/keys=random/entries=10000"

// sideText writes one benchmark's boots on one side as the host does: the
// side and kernel keys, then each boot's key and samples. A non-nil pairs
// names each boot's pair.
func sideText(side, kernel, bench, unit string, boots [][]float64, pairs []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "side: %s\n", side)
	if kernel != "" {
		fmt.Fprintf(&b, "kernel: %s\n", kernel)
	}
	for i, samples := range boots {
		fmt.Fprintf(&b, "boot: %d\n", i+1)
		if pairs != nil {
			fmt.Fprintf(&b, "pair: %s\n", pairs[i])
		}
		for _, v := range samples {
			fmt.Fprintf(&b, "Benchmark%s 1000 %v %s\n", bench, v, unit)
		}
	}
	return b.String()
}

// single returns one single-sample boot per value.
func single(vs ...float64) [][]float64 {
	out := make([][]float64, len(vs))
	for i, v := range vs {
		out[i] = []float64{v}
	}
	return out
}

// three returns one boot per median m, with the samples m-1, m and m+1.
func three(ms ...float64) [][]float64 {
	out := make([][]float64, len(ms))
	for i, m := range ms {
		out[i] = []float64{m - 1, m, m + 1}
	}
	return out
}

// alike returns n boots of the same samples.
func alike(n int, samples ...float64) [][]float64 {
	out := make([][]float64, n)
	for i := range out {
		out[i] = samples
	}
	return out
}

// numbered returns "1", "2", … "n".
func numbered(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint(i + 1)
	}
	return out
}

func table(t *testing.T, rep *compare.Report) string {
	t.Helper()
	var b strings.Builder
	if err := WriteTable(&b, rep); err != nil {
		t.Fatalf("WriteTable() = %v; want no error", err)
	}
	return b.String()
}

// tableText has a significant change with enough boots for an interval
// (lookup), a change too small in boots to be significant (update), and a
// benchmark that only side A ran (free).
func tableText() string {
	const a, b = "6.1.0-57-cloud-amd64", "6.12.117+deb12-cloud-amd64"
	const upd = "LPMTrie/op=update/keys=random/entries=10000"
	return sideText("A", a, lookup, "ns/op", [][]float64{{630, 632, 629}, {641, 640, 643}, {628, 630, 627}, {635, 633, 636}, {650, 648, 652}, {631, 631, 632}}, nil) +
		sideText("A", a, upd, "ns/op", [][]float64{{1210, 1220}, {1190, 1200}, {1230, 1225}}, nil) +
		sideText("A", a, "LPMTrie/op=free", "insn/op", single(1065, 1065, 1066, 1065), nil) +
		sideText("B", b, lookup, "ns/op", [][]float64{{520, 522, 519}, {530, 529, 531}, {518, 517, 520}, {524, 526, 523}, {521, 520, 522}, {540, 538, 541}}, nil) +
		sideText("B", b, upd, "ns/op", [][]float64{{1150, 1160}, {1140, 1145}, {1155, 1150}}, nil)
}

// tableGolden was checked by hand: lookup A boot medians 628 630 631 635 641
// 650 give 633 with the 95 % interval [628, 650] (+2.7 %); B 519 … 540 give
// 522.5 (+3.3 %); 522.5/633 = -17.46 %; 6+6 separated boots give p = 2/924,
// below the Holm level 0.05/2 of the two compared rows. Update's 3+3 boots
// can give p = 0.1 at best, so it cannot be DIFFERENT; its medians 1215 and
// 1152.5 differ by -5.14 %.
const tableGolden = `boots are the unit: each boot counts once, as the median of its samples
centre = median over boots ± 95% confidence interval; in-boot = median over boots of (max-min)/median; α=0.05
verdict (look 1): DIFFERENT = significant at α=0.05 over all rows and looks, and shown beyond ±1%; SAME = shown within ±1%; else UNKNOWN

                                            │ A: 6.1.0-57-cloud-amd64 │ B: 6.12.117+deb12-cloud-amd64                              │
                                            │ sec/op          in-boot │ sec/op          in-boot      vs A                verdict   │
LPMTrie/op=lookup/keys=random/entries=10000   633.0n ± 2.7%     0.47%   522.5n ± 3.3%     0.56%   -17.46%  p=0.002 n=6+6 DIFFERENT
LPMTrie/op=update/keys=random/entries=10000   1.215µ ± ∞        0.82%   1.153µ ± ∞        0.44%    -5.14%  p=0.100 n=3+3 UNKNOWN   ¹²³
¹ need ≥6 boots per side for a 95% confidence interval
² DIFFERENT out of reach at 3+3 boots (smallest possible p 0.1 > level 0.025: α=0.05 shared by 2 rows and the looks)
³ confirming the -5.14% change (DIFFERENT) would need ~5 boots per side at this spread

                │ A: 6.1.0-57-cloud-amd64 │ B: 6.12.117+deb12-cloud-amd64             │
                │ insn/op         in-boot │ insn/op    in-boot   vs A         verdict │
LPMTrie/op=free    1.065k ± ∞           -         -                     n=4+0 UNKNOWN ¹²
¹ need ≥6 boots per side for a 95% confidence interval
² only on side A: 6.1.0-57-cloud-amd64: not compared
`

func TestWriteTableGolden(t *testing.T) {
	rep := build(t, tableText(), compare.Options{})
	if got := table(t, rep); got != tableGolden {
		t.Errorf("WriteTable() =\n%s\nwant\n%s", got, tableGolden)
	}
}

// pairedTableText is a paired results file: a lookup in 7 complete pairs,
// B at 0.79 to 0.81 of A in each, and an eighth pair whose B boot failed;
// an update in 3 pairs with identical counts on both sides.
func pairedTableText() string {
	const a, b = "6.1.0-57-cloud-amd64", "6.12.117+deb12-cloud-amd64"
	const upd = "LPMTrie/op=update/keys=random/entries=10000"
	// B/A per pair: 0.80 0.81 0.79 0.80 0.805 0.795 0.80.
	return sideText("A", a, lookup, "ns/op", three(600, 690, 630, 660, 570, 640, 620, 610), numbered(8)) +
		sideText("A", a, upd, "insn/op", alike(3, 1065, 1066, 1065), numbered(3)) +
		sideText("B", b, lookup, "ns/op", three(480, 558.9, 497.7, 528, 458.85, 508.8, 496), numbered(7)) +
		sideText("B", b, upd, "insn/op", alike(3, 1065, 1066, 1065), numbered(3))
}

// pairedTableGolden was checked by hand: the lookup's pairs all fall by
// 19–21 %, so all 7 changes are negative, the two-sided signed-rank p is
// 2/2^7 = 0.016 and so is the minimum-effect p (all below ln 0.99): Holm
// over the two rows gives 0.031 <= 0.05, DIFFERENT. The median change is
// the 4th of 0.79 0.795 0.80 0.80 0.80 0.805 0.81, −20 %. A's centre is the
// median of 8 boots (pair 8 included), 625, in [570, 660] (−8.8 %); B's
// 497.7 of 7 in [458.85, 558.9] (+12 %). The update's pairs are identical:
// p = 1, and 3 pairs give at best 2/8 = 0.25; SAME needs 1/2^n <= 0.05, 5
// pairs.
const pairedTableGolden = `paired: boots ran in pairs, one A and one B alive at once on one host CPU, taking samples in turn; tests are Wilcoxon signed-rank on per-pair log(B/A)
pairs are the unit: each boot counts as the median of its samples; vs A = median over pairs of B/A − 1; n = complete pairs
centre = median over a side's boots ± 95% confidence interval (moves with host state, which the pairs cancel); in-boot = median over boots of (max-min)/median; α=0.05
verdict (look 1): DIFFERENT = significant at α=0.05 over all rows and looks, and shown beyond ±1%; SAME = shown within ±1%; else UNKNOWN

                                            │ A: 6.1.0-57-cloud-amd64 │ B: 6.12.117+deb12-cloud-amd64                                 │
                                            │ sec/op          in-boot │ sec/op         in-boot      vs A                    verdict   │
LPMTrie/op=lookup/keys=random/entries=10000   625.0n ± 8.8%     0.32%   497.7n ± 12%     0.40%   -20.00%  p=0.016 n=7 pairs DIFFERENT ¹
¹ pair 8: only side A delivered; left out

                                            │ A: 6.1.0-57-cloud-amd64 │ B: 6.12.117+deb12-cloud-amd64                            │
                                            │ insn/op         in-boot │ insn/op       in-boot    vs A                    verdict │
LPMTrie/op=update/keys=random/entries=10000    1.065k ± ∞       0.09%    1.065k ± ∞     0.09%   0.00%  p=1.000 n=3 pairs UNKNOWN ¹²³
¹ need ≥6 boots per side for a 95% confidence interval
² DIFFERENT out of reach at 3 pairs (smallest possible p 0.25 > level 0.025: α=0.05 shared by 2 rows and the looks)
³ showing B within ±1% of A (SAME) would need ~5 pairs at this spread
`

func TestWriteTablePairedGolden(t *testing.T) {
	rep := build(t, pairedTableText(), compare.Options{})
	if got := table(t, rep); got != pairedTableGolden {
		t.Errorf("WriteTable(paired) =\n%s\nwant\n%s", got, pairedTableGolden)
	}
	want := "LPMTrie/op=lookup/keys=random/entries=10000: -20.0% sec/op (better), DIFFERENT, p=0.016, 7 pairs"
	if got := Headline(rep.Rows[0]); got != want {
		t.Errorf("Headline(Rows[0]) = %q; want %q", got, want)
	}
	if got := bootsLabel(rep.Rows[1]); got != "3 pairs" {
		t.Errorf("BootsLabel(Rows[1]) = %q; want \"3 pairs\"", got)
	}
}

// TestWriteTablePairedIdentical: pairs with identical values print no
// change, not "+0.00%" or "-0.00%".
func TestWriteTablePairedIdentical(t *testing.T) {
	same := alike(6, 980, 980, 981)
	rep := build(t, sideText("A", "k", lookup, "insn/op", same, numbered(6))+sideText("B", "k", lookup, "insn/op", same, numbered(6)), compare.Options{})
	if got, want := table(t, rep), "0.00%  p=1.000 n=6 pairs SAME"; !strings.Contains(got, want) {
		t.Errorf("WriteTable(identical pairs) lacks %q:\n%s", want, got)
	}
}

func TestHeadline(t *testing.T) {
	rep := build(t, sideText("A", "6.1", lookup, "insn/op", single(1065, 1065.2, 1064.9, 1065.1), nil)+
		sideText("B", "6.12", lookup, "insn/op", single(834, 834.2, 833.9, 834.1), nil), compare.Options{})
	want := "LPMTrie/op=lookup/keys=random/entries=10000: -21.7% insn/op (better), DIFFERENT, p=0.029, 4+4 boots"
	if got := Headline(rep.Rows[0]); got != want {
		t.Errorf("Headline(Rows[0]) = %q; want %q", got, want)
	}

	for _, tc := range []struct {
		name string
		row  compare.Row
		want string
	}{
		{"control moved", compare.Row{Benchmark: "LPMTrie/op=noop", Unit: "insn/op", Control: true, Better: -1, Verdict: compare.Different,
			DeltaPct: 30, P: 0.002, A: compare.Summary{Boots: 6}, B: compare.Summary{Boots: 6}},
			"LPMTrie/op=noop: +30.0% insn/op (control moved), DIFFERENT, p=0.002, 6+6 boots"},
		{"worse", compare.Row{Benchmark: "x", Unit: "sec/op", Better: -1, Verdict: compare.Different,
			DeltaPct: 2.5, P: 0.0001, A: compare.Summary{Boots: 8}, B: compare.Summary{Boots: 8}},
			"x: +2.50% sec/op (worse), DIFFERENT, p=<0.001, 8+8 boots"},
		{"same", compare.Row{Benchmark: "x", Unit: "sec/op", Better: -1, Verdict: compare.Same,
			DeltaPct: 0.004, P: 0.5, A: compare.Summary{Boots: 8}, B: compare.Summary{Boots: 8}},
			"x: +4.0e-03% sec/op, SAME, p=0.500, 8+8 boots"},
		{"one side", compare.Row{Benchmark: "x", Paired: true, A: compare.Summary{Boots: 2}},
			"x: UNKNOWN, ran on one side only, 2+0 boots"},
		{"no complete pair", compare.Row{Benchmark: "x", Paired: true, A: compare.Summary{Boots: 2}, B: compare.Summary{Boots: 1}},
			"x: UNKNOWN, no complete pair, 2+1 boots"},
	} {
		if got := Headline(tc.row); got != tc.want {
			t.Errorf("Headline(%s) = %q; want %q", tc.name, got, tc.want)
		}
	}
}

// TestUndecidedOneSideOnce checks that a benchmark measured on one side
// only is one line of the undecided list, with its units, however many
// units it has.
func TestUndecidedOneSideOnce(t *testing.T) {
	rep := &compare.Report{Rows: []compare.Row{
		{Benchmark: "Ringbuf/op=overwrite", Unit: "insn/op", B: compare.Summary{Boots: 2}},
		{Benchmark: "Ringbuf/op=overwrite", Unit: "drops/op", B: compare.Summary{Boots: 2}},
		{Benchmark: "y", Unit: "insn/op", A: compare.Summary{Boots: 2}},
	}}
	want := []string{
		"Ringbuf/op=overwrite: UNKNOWN, ran on one side only, 0+2 boots (insn/op, drops/op)",
		"y: UNKNOWN, ran on one side only, 2+0 boots (insn/op)",
	}
	if got := undecided(rep); !slices.Equal(got, want) {
		t.Errorf("undecided = %q; want %q", got, want)
	}
}

func TestVerdictRule(t *testing.T) {
	for _, tc := range []struct {
		name string
		rep  compare.Report
		want string
	}{
		{"fixed", compare.Report{Alpha: 0.05, MinEffect: 0.01, Look: compare.Look{Number: 1}},
			"verdict (look 1): DIFFERENT = significant at α=0.05 over all rows and looks, and shown beyond ±1%; SAME = shown within ±1%; else UNKNOWN"},
		{"adaptive", compare.Report{Alpha: 0.01, MinEffect: 0.005, Look: compare.Look{Number: 3, MaxBoots: 12}},
			"verdict (look 3 of ≤12 boots per side): DIFFERENT = significant at α=0.01 over all rows and looks, and shown beyond ±0.5%; SAME = shown within ±0.5%; else UNKNOWN"},
		{"paired", compare.Report{Alpha: 0.05, MinEffect: 0.01, Paired: true, Look: compare.Look{Number: 1, MaxBoots: 10, Paired: true}},
			"verdict (look 1 of ≤10 pairs): DIFFERENT = significant at α=0.05 over all rows and looks, and shown beyond ±1%; SAME = shown within ±1%; else UNKNOWN"},
	} {
		if got := verdictRule(&tc.rep); got != tc.want {
			t.Errorf("VerdictRule(%s) = %q; want %q", tc.name, got, tc.want)
		}
	}
}

// TestRowNotes: an undecided row's notes end in what more boots would
// decide; other rows keep compare's notes as they are.
func TestRowNotes(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		// 3+3 boots far apart: the U test's smallest p is 0.1.
		{"3+3 boots, +50%", sideText("A", "a", lookup, "ns/op", single(1000, 1010, 990), nil) + sideText("B", "b", lookup, "ns/op", single(1500, 1490, 1510), nil),
			"confirming the +50.0% change (DIFFERENT) would need ~4 boots per side at this spread"},
		// Every pair +20 %: 3 pairs cannot be DIFFERENT, 6 is the discrete floor.
		{"3 pairs, +20%", sideText("A", "k", lookup, "ns/op", single(1000, 1100, 900), numbered(3)) + sideText("B", "k", lookup, "ns/op", single(1200, 1320, 1080), numbered(3)),
			"confirming the +20.0% change (DIFFERENT) would need ~6 pairs at this spread"},
		{"1+1 boots", sideText("A", "a", lookup, "ns/op", single(1000), nil) + sideText("B", "b", lookup, "ns/op", single(1500), nil),
			"too few boots to estimate the spread between boots"},
	} {
		rep := build(t, tc.text, compare.Options{})
		r := rep.Rows[0]
		notes := rowNotes(rep, r)
		if len(notes) != len(r.Notes)+1 || notes[len(notes)-1] != tc.want {
			t.Errorf("rowNotes(%s) = %q; want compare's %q, then %q", tc.name, notes, r.Notes, tc.want)
		}
	}

	rep := &compare.Report{MinEffect: 0.01}
	undecided := compare.Row{Verdict: compare.Unknown, A: compare.Summary{Boots: 2, Center: 1}, B: compare.Summary{Boots: 2, Center: 1}}
	outOfReach := undecided
	outOfReach.NeedFor, outOfReach.BootsNeeded = compare.Same, compare.MaxBootsNeeded+1
	onePair := undecided
	onePair.Paired, onePair.Pairs = true, 1
	calibrated := undecided
	calibrated.MinEffect, calibrated.DeltaPct, calibrated.NeedFor, calibrated.BootsNeeded = 0.30, -37.8, compare.Different, 89
	calibratedSame := undecided
	calibratedSame.MinEffect, calibratedSame.DeltaPct, calibratedSame.NeedFor, calibratedSame.BootsNeeded = 0.20, 0.54, compare.Same, 13
	spentSame := undecided
	spentSame.MinEffect, spentSame.DeltaPct, spentSame.NeedFor, spentSame.BootsNeeded, spentSame.Paired, spentSame.Pairs = 0.15, 2.08, compare.Same, 5, true, 10
	justInside := undecided
	justInside.MinEffect, justInside.DeltaPct, justInside.NeedFor, justInside.BootsNeeded, justInside.Paired, justInside.Pairs = 0.30, -29.34, compare.Same, compare.MaxBootsNeeded+1, true, 10
	hidden := undecided
	hidden.MinEffect, hidden.DeltaPct, hidden.FloorHides, hidden.Paired, hidden.Pairs = 0.50, -17.76, true, true, 10
	adaptive := &compare.Report{MinEffect: 0.01, Look: compare.Look{MaxBoots: 10}}
	for _, tc := range []struct {
		name string
		row  compare.Row
		want string
	}{
		{"out of reach", outOfReach, "showing B within ±1% of A (SAME) would need more than 1000 boots per side at this spread"},
		{"paired, one pair", onePair, "too few pairs to estimate the spread of the pairs' changes"},
		{"calibrated floor", calibrated, "the calibrated floor ±30% is too close to the -37.8% change to show it at the 10 boots per side allowed: " +
			"confirming the -37.8% change (DIFFERENT) would need ~89 boots per side at this spread (this host's boots of one kernel spread that wide; icount counts instructions without that spread)"},
		{"calibrated floor hides", hidden, "the calibrated floor ±50% is too close to the -17.8% change to show it at 10 pairs: SAME is withheld while the change is significant, DIFFERENT needs more than ±50% " +
			"(this host's boots of one kernel spread that wide; icount counts instructions without that spread)"},
		{"estimate below the pairs taken", spentSame, "showing B within ±15% of A (SAME) was not reached at the 10 pairs taken (at all of α this spread would need ~5; each look has only a share of it)"},
		{"calibrated floor just beyond the change", justInside, "the calibrated floor ±30% is too close to the -29.3% change to show it at the 10 pairs allowed: " +
			"showing B within ±30% of A (SAME) would need more than 1000 pairs at this spread (this host's boots of one kernel spread that wide; icount counts instructions without that spread)"},
		{"calibrated floor, no change", calibratedSame, "showing B within ±20% of A (SAME) would need ~13 boots per side at this spread"},
	} {
		r := rep
		if tc.row.MinEffect != 0 {
			r = adaptive
		}
		if got := needNote(r, tc.row); got != tc.want {
			t.Errorf("needNote(%s) = %q; want %q", tc.name, got, tc.want)
		}
	}

	// Decided and untested rows keep compare's notes, and the slice is
	// never written to.
	notes := make([]string, 1, 4)
	notes[0] = "compare's"
	for _, r := range []compare.Row{
		{Verdict: compare.Same, Notes: notes, A: compare.Summary{Boots: 6, Center: 1}, B: compare.Summary{Boots: 6, Center: 1}},
		{Verdict: compare.Unknown, Notes: notes, A: compare.Summary{Boots: 6, Center: 1}},
		{Verdict: compare.Unknown, Notes: notes, A: compare.Summary{Boots: 6}, B: compare.Summary{Boots: 6}},
	} {
		if got := rowNotes(rep, r); len(got) != 1 || got[0] != "compare's" {
			t.Errorf("rowNotes(%v row, A %d boots at %v, B %d boots) = %q; want compare's notes only",
				r.Verdict, r.A.Boots, r.A.Center, r.B.Boots, got)
		}
	}
	undecided.Notes = notes
	rowNotes(rep, undecided)
	if extra := notes[:2][1]; extra != "" {
		t.Errorf("rowNotes(undecided) wrote %q into the row's Notes array; want it left alone", extra)
	}
}

func TestFormatPct(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{0, "0%"}, {0.004, "<0.01%"}, {0.032, "0.03%"}, {0.47, "0.47%"}, {2.74, "2.7%"}, {17.4, "17%"}, {math.Inf(1), "∞"}, {math.NaN(), "?"},
	} {
		if got := formatPct(tc.in); got != tc.want {
			t.Errorf("FormatPct(%v) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

func TestSuperscript(t *testing.T) {
	for n, want := range map[int]string{1: "¹", 2: "²", 10: "¹⁰", 23: "²³"} {
		if got := superscript(n); got != want {
			t.Errorf("superscript(%d) = %q; want %q", n, got, want)
		}
	}
}

// TestUndecidedNamesTheFloor: the headline of an undecided row names the
// calibrated floor when the floor, not the boots, keeps it from a verdict.
func TestUndecidedNamesTheFloor(t *testing.T) {
	rep := floorsReport()
	lines := undecided(rep)
	if len(lines) != 5 {
		t.Fatalf("undecided = %q; want 5 lines", lines)
	}
	for i, floor := range []bool{true, true, true, false, false} {
		if got := strings.Contains(lines[i], "the calibrated floor"); got != floor {
			t.Errorf("%s: %q; names the floor %v, want %v", rep.Rows[i].Benchmark, lines[i], got, floor)
		}
	}
}

package compare

import (
	"strings"
	"testing"
)

// goldenInput has a significant change with enough boots for an interval
// (lookup), a change too small in boots to be significant (update), and a
// benchmark that only side A ran (free).
var goldenInput = []side{
	{"A", "6.1.0-57-cloud-amd64", "LPMTrie/op=lookup/keys=random/entries=10000", "ns/op",
		[][]float64{{630, 632, 629}, {641, 640, 643}, {628, 630, 627}, {635, 633, 636}, {650, 648, 652}, {631, 631, 632}}},
	{"A", "6.1.0-57-cloud-amd64", "LPMTrie/op=update/keys=random/entries=10000", "ns/op",
		[][]float64{{1210, 1220}, {1190, 1200}, {1230, 1225}}},
	{"A", "6.1.0-57-cloud-amd64", "LPMTrie/op=free", "insn/op",
		[][]float64{{1065}, {1065}, {1066}, {1065}}},
	{"B", "6.12.117+deb12-cloud-amd64", "LPMTrie/op=lookup/keys=random/entries=10000", "ns/op",
		[][]float64{{520, 522, 519}, {530, 529, 531}, {518, 517, 520}, {524, 526, 523}, {521, 520, 522}, {540, 538, 541}}},
	{"B", "6.12.117+deb12-cloud-amd64", "LPMTrie/op=update/keys=random/entries=10000", "ns/op",
		[][]float64{{1150, 1160}, {1140, 1145}, {1155, 1150}}},
}

// goldenText was checked by hand: lookup A boot medians 628 630 631 635 641
// 650 give 633 with the 95 % interval [628, 650] (+2.7 %); B 519 … 540 give
// 522.5 (+3.3 %); 522.5/633 = -17.46 %; 6+6 separated boots give p = 2/924,
// below the Holm level 0.05/2 of the two compared rows. Update's 3+3 boots
// can give p = 0.1 at best, so it cannot be DIFFERENT; its medians 1215 and
// 1152.5 differ by -5.14 %.
const goldenText = `boots are the unit: each boot counts once, as the median of its samples
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

func TestWriteTextGolden(t *testing.T) {
	rep := mustBuild(t, results(t, goldenInput...))
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatalf("WriteText() = %v; want no error", err)
	}
	if got := b.String(); got != goldenText {
		t.Errorf("WriteText() =\n%s\nwant\n%s", got, goldenText)
	}
}

func TestFormatPct(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{0, "0%"}, {0.004, "<0.01%"}, {0.032, "0.03%"}, {0.47, "0.47%"}, {2.74, "2.7%"}, {17.4, "17%"},
	} {
		if got := FormatPct(tc.in); got != tc.want {
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

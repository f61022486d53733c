package compare

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/aclements/go-moremath/stats"
	"github.com/lpmbisect/lpmbisect/stats/sample"
	"github.com/lpmbisect/lpmbisect/wire"
	"golang.org/x/perf/benchfmt"
)

// pairBook checks the pair keys of the results while Build reads them.
type pairBook struct {
	paired, unpaired        int                  // results with and without a pair key
	firstWith, firstWithout *benchfmt.Result     // for the error message
	pairOf                  [2]map[string]string // per side: boot → pair
	bootOf                  [2]map[string]string // per side: pair → boot
}

func (pb *pairBook) add(res *benchfmt.Result, side int, boot, pair string) error {
	if pair == "" {
		pb.unpaired++
		if pb.firstWithout == nil {
			pb.firstWithout = res
		}
		return nil
	}
	pb.paired++
	if pb.firstWith == nil {
		pb.firstWith = res
	}
	if pb.pairOf[side] == nil {
		pb.pairOf[side] = make(map[string]string)
		pb.bootOf[side] = make(map[string]string)
	}
	name := []string{SideA, SideB}[side]
	if p, ok := pb.pairOf[side][boot]; ok && p != pair {
		return fmt.Errorf("compare: %s: boot %s of side %s is in pair %s and in pair %s (a boot belongs to one pair)",
			pos(res), boot, name, p, pair)
	}
	if b, ok := pb.bootOf[side][pair]; ok && b != boot {
		return fmt.Errorf("compare: %s: pair %s has boots %s and %s of side %s (a pair holds one boot of each side)",
			pos(res), pair, b, boot, name)
	}
	pb.pairOf[side][boot], pb.bootOf[side][pair] = pair, boot
	return nil
}

// check rejects a mix of paired and unpaired results.
func (pb *pairBook) check(results int) error {
	if pb.paired > 0 && pb.unpaired > 0 {
		return fmt.Errorf("compare: %d of %d results carry a %q key and %d do not (%s has one, %s has none): "+
			"mixed paired and unpaired input; a run is either paired or not, compare each kind on its own",
			pb.paired, results, wire.KeyPair, pb.unpaired, pos(pb.firstWith), pos(pb.firstWithout))
	}
	return nil
}

func pairedName(paired bool) string {
	if paired {
		return "paired"
	}
	return "unpaired"
}

// pairedRow sets the pairs, the change and the two-sided signed-rank test of
// a paired row whose sides both have boots.
func pairedRow(row *Row, opts Options) {
	d, notes := pairChanges(row.A, row.B)
	for _, n := range notes {
		row.addNote(n)
	}
	row.Pairs = len(d)
	if len(d) == 0 {
		row.addNote("no complete pair: not compared")
		return
	}
	row.DeltaPct = 100 * math.Expm1(sample.Median(d))
	p, err := signedRankP(d, 0, stats.LocationDiffers)
	if err != nil {
		row.addNote(fmt.Sprintf("not tested: %v", err))
		return
	}
	row.P = p
	row.Significant = p <= opts.Alpha
}

// pairChanges matches the boots of a and b by their pair and returns the
// change ln(B/A) of the per-boot medians of each complete pair, in the
// order of the pairs (numerically where they are numbers), with a note for
// each pair left out: one side missing, or a median that is not positive.
func pairChanges(a, b Summary) (d []float64, notes []string) {
	type medians struct {
		m   [2]float64
		has [2]bool
	}
	byPair := map[string]*medians{}
	var ids []string
	for i, s := range []Summary{a, b} {
		for _, bt := range s.PerBoot {
			p, ok := byPair[bt.Pair]
			if !ok {
				p = new(medians)
				byPair[bt.Pair] = p
				ids = append(ids, bt.Pair)
			}
			p.m[i], p.has[i] = bt.Median, true
		}
	}
	slices.SortStableFunc(ids, ComparePairs)
	for _, id := range ids {
		p := byPair[id]
		switch {
		case !p.has[1]:
			notes = append(notes, fmt.Sprintf("pair %s: only side %s delivered; left out", id, SideA))
		case !p.has[0]:
			notes = append(notes, fmt.Sprintf("pair %s: only side %s delivered; left out", id, SideB))
		case !(p.m[0] > 0 && p.m[1] > 0):
			notes = append(notes, fmt.Sprintf("pair %s: a median is not positive (A %v, B %v), so ln(B/A) is undefined; left out", id, p.m[0], p.m[1]))
		default:
			// A difference of logarithms is exactly antisymmetric, so
			// changes of equal size in opposite directions tie in rank.
			d = append(d, math.Log(p.m[1])-math.Log(p.m[0]))
		}
	}
	return d, notes
}

// ComparePairs orders pair values (the pair key) as numbers where both are,
// numbers first, and as strings otherwise.
func ComparePairs(x, y string) int {
	nx, errX := strconv.Atoi(x)
	ny, errY := strconv.Atoi(y)
	switch {
	case errX == nil && errY == nil:
		return cmp.Compare(nx, ny)
	case errX == nil:
		return -1
	case errY == nil:
		return 1
	}
	return strings.Compare(x, y)
}

// pairedEffectP is effectP for pairs: twice the one-sided signed-rank
// p-value that the changes d lie above ln(1+eff) when the observed change is
// an increase, or below ln(1−eff) when it is a decrease, capped at 1.
func pairedEffectP(d []float64, deltaPct, eff float64) float64 {
	if deltaPct == 0 {
		return 1
	}
	alt, shift := stats.LocationGreater, math.Log1p(eff)
	if deltaPct < 0 {
		alt, shift = stats.LocationLess, math.Log1p(-eff)
	}
	p, err := signedRankP(d, shift, alt)
	if err != nil {
		return 1
	}
	return math.Min(1, 2*p)
}

// pairedEquivalenceP is equivalenceP for pairs (TOST): the larger p-value of
// the one-sided signed-rank tests that the changes d lie below ln(1+eff)
// and above ln(1−eff).
func pairedEquivalenceP(d []float64, eff float64) float64 {
	below, err1 := signedRankP(d, math.Log1p(eff), stats.LocationLess)
	above, err2 := signedRankP(d, math.Log1p(-eff), stats.LocationGreater)
	if err := errors.Join(err1, err2); err != nil {
		return 1
	}
	return math.Max(below, above)
}

// pairsNeeded is bootsNeeded for pairs: n = (z₁+z₂)²·(σ_d/gap)² inflated by
// π/3 for the signed-rank test's efficiency relative to the t test, with
// σ_d the standard deviation of the pairs' changes ln(B/A) and the gap as in
// bootsNeeded, floored at the pairs the discrete test needs at all. It
// returns 0 with fewer than two pairs.
func pairsNeeded(d []float64, deltaPct, alpha, eff float64, m int) (Verdict, int) {
	if len(d) < 2 {
		return Unknown, 0
	}
	sigma := math.Sqrt(sumSquares(d) / float64(len(d)-1))
	return unitsNeeded(sigma, 1, deltaPct, alpha, eff, m, minPairs)
}

// minPairsToDecide is minBootsToDecide for a paired run: the smallest
// number of pairs at which a first look can reach SAME and DIFFERENT, for a
// comparison of rows rows under opts (MaxBoots is then the cap on pairs).
// The signed-rank test's smallest p-value is 1/2^n one-sided and 2/2^n
// two-sided, larger than the U test's 1/C(2n,n) and 2/C(2n,n) for the same
// boots per side, so a paired run needs more units. It returns 0 for a
// verdict that needs more than 50 pairs.
//
// For α=0.05, MaxBoots=10 and 4 rows: SAME at 6 (1/64 against a level of
// 0.035; 1/32 just misses 0.031 at 5), DIFFERENT at 8 (2/256 against
// 0.043/4). Without a cap (one look) and one row: SAME at 5, DIFFERENT at 6.
func minPairsToDecide(opts Options, rows int) (same, different int, err error) {
	return minUnitsToDecide(opts, rows, signedRankMinP)
}

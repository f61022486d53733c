package calibrate

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"golang.org/x/perf/benchfmt"

	"github.com/lpmbisect/lpmbisect/stats/compare"
	"github.com/lpmbisect/lpmbisect/wire"
)

// split is one self-compare: the boots (indices) on side A and on side B.
type split struct{ a, b []int }

// floors runs the self-compares of c's boots for every minimum effect of
// the grid and sets each row's floor and shares. Each self-compare is run
// as compare runs a comparison (compare.DecideWithin): from the boots
// compare would start at to the split's k boots per side (pairs), α spent
// over its looks as in a run capped at o.MaxBoots. Boots that ran in pairs
// (labelled with KeyPair, both sides of each pair one image) give paired
// self-compares over subsets of the pairs; others, unpaired ones over
// splits of the boots into two halves.
func floors(c *Calibration, boots [][]*benchfmt.Result, o Options) error {
	var sides [2][][]*benchfmt.Result
	var splits []split
	var exhaustive bool
	paired := false
	if pairs := pairsOf(boots); len(pairs) > 0 {
		paired = true
		sides = pairedSides(boots, pairs)
		k := len(pairs) / 2
		if o.MaxBoots > 0 {
			k = min(k, o.MaxBoots)
		}
		c.Method.SplitBoots = k
		splits, exhaustive = makeSubsets(len(pairs), k, o.Splits, o.Seed)
	} else {
		sides = labelSides(boots)
		k := len(boots) / 2
		c.Method.SplitBoots = k
		splits, exhaustive = makeSplits(len(boots), k, o.Splits, o.Seed)
	}
	c.Method.Paired, c.Method.Splits, c.Method.Exhaustive = paired, len(splits), exhaustive
	k := c.Method.SplitBoots
	if k == 0 {
		return nil
	}
	c.Method.MaxBoots = o.MaxBoots
	last := k
	if o.MaxBoots > 0 {
		last = min(k, o.MaxBoots)
	}
	// Per grid step, the options and first look every split shares: m as
	// each benchmark's own minimum effect, above compare's default (the
	// floor a comparison with auto gives it, with the rule that keeps such
	// a floor from hiding a change).
	opts := make([]compare.Options, len(o.Grid))
	starts := make([]int, len(o.Grid))
	for g, m := range o.Grid {
		opts[g] = compare.Options{Alpha: o.Alpha, MaxBoots: o.MaxBoots, MinEffects: map[string]float64{}}
		for _, b := range c.Benchmarks {
			opts[g].MinEffects[b.Name] = m
		}
		starts[g] = last
		if o.MaxBoots > 0 {
			s, err := compare.StartBoots(opts[g], len(c.Benchmarks), paired, false)
			if err != nil {
				return fmt.Errorf("calibrate: self-compare at %.3g%%: %w", 100*m, err)
			}
			starts[g] = min(s, last)
		}
	}
	same, diff := map[rowKey][]int{}, map[rowKey][]int{}
	for _, sp := range splits {
		for g, m := range o.Grid {
			src := &splitSource{sides: sides, split: sp}
			rep, err := compare.DecideWithin(context.Background(), src, opts[g], starts[g], last, nil)
			if err != nil {
				return fmt.Errorf("calibrate: self-compare at %.3g%%: %w", 100*m, err)
			}
			for _, row := range rep.Rows {
				rk := rowKey{row.Benchmark, row.Unit}
				if same[rk] == nil {
					same[rk], diff[rk] = make([]int, len(o.Grid)), make([]int, len(o.Grid))
				}
				switch row.Verdict {
				case compare.Same:
					same[rk][g]++
				case compare.Different:
					diff[rk][g]++
				}
			}
		}
	}
	total := float64(len(splits))
	for i := range c.Benchmarks {
		b := &c.Benchmarks[i]
		rk := rowKey{b.Name, b.Unit}
		b.SameShare = make([]float64, len(o.Grid))
		for g, m := range o.Grid {
			if same[rk] == nil {
				break
			}
			b.SameShare[g] = float64(same[rk][g]) / total
			b.FalseDifferent = math.Max(b.FalseDifferent, float64(diff[rk][g])/total)
			if !b.FloorReached && b.SameShare[g] >= o.SameShare {
				b.Floor, b.FloorReached = m, true
			}
		}
	}
	return nil
}

// pairsOf returns, for boots that ran in pairs, the indices of each
// complete pair's boots of side A and B, in the order of the pair numbers;
// nil when a boot has no pair label (unpaired boots).
func pairsOf(boots [][]*benchfmt.Result) [][2]int {
	byPair := map[int]*[2]int{}
	for i, b := range boots {
		pair, err := strconv.Atoi(b[0].GetConfig(wire.KeyPair))
		if err != nil || pair < 1 {
			return nil
		}
		if byPair[pair] == nil {
			byPair[pair] = &[2]int{-1, -1}
		}
		switch b[0].GetConfig(wire.KeySide) {
		case compare.SideA:
			byPair[pair][0] = i
		case compare.SideB:
			byPair[pair][1] = i
		}
	}
	var pairs [][2]int
	for _, n := range slices.Sorted(maps.Keys(byPair)) {
		if p := byPair[n]; p[0] >= 0 && p[1] >= 0 {
			pairs = append(pairs, *p)
		}
	}
	return pairs
}

// pairedSides returns the boots of each pair as the pair's side A and B,
// labelled as compare reads a paired run: pair j (from 1) on both sides,
// boot j on each.
func pairedSides(boots [][]*benchfmt.Result, pairs [][2]int) (sides [2][][]*benchfmt.Result) {
	for j, p := range pairs {
		for s, name := range []string{compare.SideA, compare.SideB} {
			sides[s] = append(sides[s], asBoot(boots[p[s]], name, j+1, j+1))
		}
	}
	return sides
}

// makeSubsets returns the k-subsets of n pairs, each as a split whose A and
// B are the same pairs: all of them when there are at most max
// (exhaustive), else max drawn with seed.
func makeSubsets(n, k, max int, seed uint64) (splits []split, exhaustive bool) {
	if k == 0 {
		return nil, true
	}
	if binomial(n, k) <= float64(max) {
		for _, a := range subsets(seq(n), k) {
			splits = append(splits, split{a, a})
		}
		return splits, true
	}
	rng := rand.New(rand.NewPCG(seed, 0x70616972)) // "pair"
	for range max {
		a := slices.Clone(rng.Perm(n)[:k])
		slices.Sort(a)
		splits = append(splits, split{a, a})
	}
	return splits, false
}

// labelSides returns each boot's results as side A and as side B, with only
// what compare reads: a boot's number stays its own, so the two halves of a
// split never share a boot ID.
func labelSides(boots [][]*benchfmt.Result) (sides [2][][]*benchfmt.Result) {
	for i, b := range boots {
		for s, name := range []string{compare.SideA, compare.SideB} {
			sides[s] = append(sides[s], asBoot(b, name, i+1, 0))
		}
	}
	return sides
}

// asBoot returns copies of one boot's results with only what compare
// reads, labelled as boot boot of side and, when pair is not 0, as pair
// pair.
func asBoot(results []*benchfmt.Result, side string, boot, pair int) []*benchfmt.Result {
	rs := make([]*benchfmt.Result, 0, len(results))
	for _, r := range results {
		nr := &benchfmt.Result{Name: r.Name, Iters: r.Iters, Values: r.Values}
		nr.SetConfig(wire.KeySide, side)
		nr.SetConfig(wire.KeyBoot, strconv.Itoa(boot))
		if pair > 0 {
			nr.SetConfig(wire.KeyPair, strconv.Itoa(pair))
		}
		rs = append(rs, nr)
	}
	return rs
}

// splitSource is a compare.ABSource over one split: its first n boots per
// side, as if they had just been booted.
type splitSource struct {
	sides [2][][]*benchfmt.Result
	split split
	n     int
}

func (s *splitSource) Measure(_ context.Context, n int) error {
	if n > len(s.split.a) {
		return fmt.Errorf("calibrate: a split has %d boots per side, not %d", len(s.split.a), n)
	}
	s.n = n
	return nil
}

func (s *splitSource) Results() []*benchfmt.Result {
	var results []*benchfmt.Result
	for _, i := range s.split.a[:s.n] {
		results = append(results, s.sides[0][i]...)
	}
	for _, i := range s.split.b[:s.n] {
		results = append(results, s.sides[1][i]...)
	}
	return results
}

// makeSplits returns the splits of n boots into two sides of k: all of them
// when there are at most max (exhaustive), else max drawn with seed. A
// split and its mirror (A and B swapped) count once.
func makeSplits(n, k, max int, seed uint64) (splits []split, exhaustive bool) {
	if k == 0 {
		return nil, true
	}
	if distinctSplits(n, k) <= float64(max) {
		for _, a := range subsets(seq(n), k) {
			rest := slices.DeleteFunc(seq(n), func(i int) bool { return slices.Contains(a, i) })
			for _, b := range subsets(rest, k) {
				if a[0] < b[0] {
					splits = append(splits, split{a, b})
				}
			}
		}
		return splits, true
	}
	rng := rand.New(rand.NewPCG(seed, 0x63616c69)) // "cali"
	for range max {
		p := rng.Perm(n)
		a, b := slices.Clone(p[:k]), slices.Clone(p[k:2*k])
		slices.Sort(a)
		slices.Sort(b)
		splits = append(splits, split{a, b})
	}
	return splits, false
}

// distinctSplits counts the unordered pairs of disjoint k-subsets of n:
// C(n, k)·C(n−k, k)/2.
func distinctSplits(n, k int) float64 {
	return binomial(n, k) * binomial(n-k, k) / 2
}

func binomial(n, k int) float64 {
	c := 1.0
	for i := 1; i <= k; i++ {
		c = c * float64(n-k+i) / float64(i)
	}
	return c
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// subsets returns the k-element subsets of set, each in set's order.
func subsets(set []int, k int) [][]int {
	if k == 0 {
		return [][]int{nil}
	}
	var out [][]int
	for i := 0; i+k <= len(set); i++ {
		for _, rest := range subsets(set[i+1:], k-1) {
			out = append(out, append([]int{set[i]}, rest...))
		}
	}
	return out
}

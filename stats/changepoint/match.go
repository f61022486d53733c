package changepoint

import (
	"cmp"
	"math"
	"slices"
)

// A Pair links a change point of an earlier pass to the one of a later pass
// that is the same change: positions in the slices given to Match.
type Pair struct {
	Prev, Next int
}

// A Matching says what a later pass made of an earlier pass's change
// points, for a caller that must report each change once.
type Matching struct {
	// Pairs are the same change seen by both passes. Its index or its
	// statistics may have moved: update the stored change point.
	Pairs []Pair
	// Added are positions in next with no partner: new change points.
	Added []int
	// Withdrawn are positions in prev with no partner: the later pass no
	// longer finds them (a provisional change point the next nights did
	// not confirm, or one that more data merged into a neighbour).
	Withdrawn []int
}

// Match pairs the change points of an earlier pass (prev) with those of a
// later pass (next) over the same series, grown by nights appended at its
// end. Two change points are the same change when they go in the same
// direction and their indices differ by at most maxDistance nights
// (DefaultMatchDistance is what the simulations support; see the package
// documentation). Closer pairs are matched first, then earlier ones; each
// change point is in at most one pair. Pairs, Added and Withdrawn are
// sorted by position.
//
// Indices are positions in the values given to Detect: a caller that keys
// nights by date must pass the same nights in the same order to both
// passes, or translate indices to dates and back before matching.
func Match(prev, next []ChangePoint, maxDistance int) Matching {
	type cand struct{ i, j, dist int }
	var cands []cand
	for i, p := range prev {
		for j, q := range next {
			dist := q.Index - p.Index
			if dist < 0 {
				dist = -dist
			}
			if dist <= maxDistance && sameDirection(p, q) {
				cands = append(cands, cand{i, j, dist})
			}
		}
	}
	slices.SortFunc(cands, func(a, b cand) int {
		return cmp.Or(cmp.Compare(a.dist, b.dist), cmp.Compare(a.i, b.i), cmp.Compare(a.j, b.j))
	})
	usedPrev, usedNext := make([]bool, len(prev)), make([]bool, len(next))
	var m Matching
	for _, c := range cands {
		if usedPrev[c.i] || usedNext[c.j] {
			continue
		}
		usedPrev[c.i], usedNext[c.j] = true, true
		m.Pairs = append(m.Pairs, Pair{Prev: c.i, Next: c.j})
	}
	slices.SortFunc(m.Pairs, func(a, b Pair) int { return cmp.Compare(a.Next, b.Next) })
	for i, used := range usedPrev {
		if !used {
			m.Withdrawn = append(m.Withdrawn, i)
		}
	}
	for j, used := range usedNext {
		if !used {
			m.Added = append(m.Added, j)
		}
	}
	return m
}

func sameDirection(a, b ChangePoint) bool {
	sa, sb := math.Signbit(a.After-a.Before), math.Signbit(b.After-b.Before)
	return sa == sb
}

package bisect

import (
	"context"
	"errors"

	"github.com/lpmbisect/lpmbisect/flow/campaign"
)

// searchList finds the first bad element of an ordered list of n candidates
// whose first element is good and last is bad, calling test for elements in
// between, as git bisect does over a linear history: each test halves the
// range, so a list of n needs about ⌈log2(n−1)⌉ tests.
//
// A skipped element is left out and the nearest untested element to the
// middle is tested instead (alternating after and before it). When only
// skipped elements separate the last good from the first bad, the answer is
// a range: first is -1 and rng lists the indices that may hold the change
// (the skipped ones and the first bad).
func searchList(ctx context.Context, n int, test func(ctx context.Context, i int) (campaign.Class, error)) (first int, rng []int, err error) {
	if n < 2 {
		return -1, nil, errors.New("bisect: need at least two candidates, a good and a bad one")
	}
	lo, hi := 0, n-1 // lo is good, hi is bad
	skipped := map[int]bool{}
	for hi-lo > 1 {
		i := pick(lo, hi, skipped)
		if i < 0 {
			for j := lo + 1; j <= hi; j++ {
				rng = append(rng, j)
			}
			return -1, rng, nil
		}
		if err := ctx.Err(); err != nil {
			return -1, nil, context.Cause(ctx)
		}
		c, err := test(ctx, i)
		if err != nil {
			return -1, nil, err
		}
		switch c {
		case campaign.Good:
			lo = i
		case campaign.Bad:
			hi = i
		default:
			skipped[i] = true
		}
	}
	return hi, nil, nil
}

// pick returns the untested, unskipped index nearest the middle of (lo, hi),
// or -1 when every index in between was skipped.
func pick(lo, hi int, skipped map[int]bool) int {
	mid := lo + (hi-lo)/2
	for d := 0; d < hi-lo; d++ {
		for _, i := range []int{mid + d, mid - d} {
			if i > lo && i < hi && !skipped[i] {
				return i
			}
		}
	}
	return -1
}

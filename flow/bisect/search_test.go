package bisect

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/lpmbisect/lpmbisect/flow/campaign"
)

// listOracle answers for a list: indices below change are good, the others
// bad, except those in skip.
func listOracle(change int, skip ...int) (func(context.Context, int) (campaign.Class, error), *[]int) {
	var tested []int
	return func(_ context.Context, i int) (campaign.Class, error) {
		tested = append(tested, i)
		switch {
		case slices.Contains(skip, i):
			return campaign.Skip, nil
		case i < change:
			return campaign.Good, nil
		}
		return campaign.Bad, nil
	}, &tested
}

func TestSearchListFindsEveryChange(t *testing.T) {
	for n := 2; n <= 40; n++ {
		for change := 1; change < n; change++ {
			test, tested := listOracle(change)
			first, rng, err := searchList(context.Background(), n, test)
			if err != nil || first != change || rng != nil {
				t.Fatalf("SearchList(n=%d, change at %d) = %d, %v, %v; want %d", n, change, first, rng, err, change)
			}
			if bound := int(math.Ceil(math.Log2(float64(n - 1)))); len(*tested) > bound {
				t.Errorf("SearchList(n=%d, change at %d) tested %d candidates %v; want at most ⌈log2(%d)⌉ = %d", n, change, len(*tested), *tested, n-1, bound)
			}
		}
	}
}

func TestSearchListSkips(t *testing.T) {
	for _, c := range []struct {
		n, change int
		skip      []int
		first     int
		rng       []int
	}{
		{n: 9, change: 5, skip: []int{4}, first: -1, rng: []int{4, 5}},
		{n: 9, change: 5, skip: []int{2}, first: 5},
		{n: 9, change: 5, skip: []int{3, 6}, first: 5},
		{n: 9, change: 5, skip: []int{4, 5}, first: -1, rng: []int{4, 5, 6}},
		{n: 9, change: 5, skip: []int{5}, first: -1, rng: []int{5, 6}},
		{n: 3, change: 1, skip: []int{1}, first: -1, rng: []int{1, 2}},
		{n: 6, change: 3, skip: []int{1, 2, 3, 4}, first: -1, rng: []int{1, 2, 3, 4, 5}},
	} {
		t.Run(fmt.Sprintf("n=%d change=%d skip=%v", c.n, c.change, c.skip), func(t *testing.T) {
			test, tested := listOracle(c.change, c.skip...)
			first, rng, err := searchList(context.Background(), c.n, test)
			if err != nil || first != c.first || !slices.Equal(rng, c.rng) {
				t.Errorf("SearchList = %d, %v, %v; want %d, %v (tested %v)", first, rng, err, c.first, c.rng, *tested)
			}
			seen := map[int]bool{}
			for _, i := range *tested {
				if seen[i] {
					t.Errorf("SearchList tested %d twice (tested %v)", i, *tested)
				}
				seen[i] = true
			}
		})
	}
}

func TestSearchListStopsOnError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	_, _, err := searchList(ctx, 100, func(context.Context, int) (campaign.Class, error) {
		calls++
		cancel()
		return campaign.Good, nil
	})
	if err == nil || calls != 1 {
		t.Errorf("SearchList after cancel: %d calls, error %v; want 1 call and an error", calls, err)
	}
	if _, _, err := searchList(context.Background(), 1, nil); err == nil {
		t.Errorf("SearchList(n=1) succeeded; want an error")
	}
}

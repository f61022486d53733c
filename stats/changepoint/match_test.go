package changepoint_test

import (
	"reflect"
	"testing"

	"github.com/lpmbisect/lpmbisect/stats/changepoint"
)

func up(index int) changepoint.ChangePoint {
	return changepoint.ChangePoint{Index: index, Before: 1, After: 1.05, ChangePct: 5}
}

func down(index int) changepoint.ChangePoint {
	return changepoint.ChangePoint{Index: index, Before: 1.05, After: 1, ChangePct: -4.8}
}

func TestMatch(t *testing.T) {
	type cps = []changepoint.ChangePoint
	cases := []struct {
		name       string
		prev, next cps
		want       changepoint.Matching
	}{
		{"same", cps{up(10), down(50)}, cps{up(10), down(50)},
			changepoint.Matching{Pairs: []changepoint.Pair{{0, 0}, {1, 1}}}},
		{"moved within distance", cps{up(10)}, cps{up(13)},
			changepoint.Matching{Pairs: []changepoint.Pair{{0, 0}}}},
		{"moved too far", cps{up(10)}, cps{up(14)},
			changepoint.Matching{Added: []int{0}, Withdrawn: []int{0}}},
		{"direction differs", cps{up(10)}, cps{down(11)},
			changepoint.Matching{Added: []int{0}, Withdrawn: []int{0}}},
		{"withdrawn and added", cps{up(10), down(30)}, cps{up(10), up(80)},
			changepoint.Matching{Pairs: []changepoint.Pair{{0, 0}}, Added: []int{1}, Withdrawn: []int{1}}},
		{"closest first", cps{up(10), up(14)}, cps{up(13)},
			changepoint.Matching{Pairs: []changepoint.Pair{{1, 0}}, Withdrawn: []int{0}}},
		{"nothing before", nil, cps{down(5)}, changepoint.Matching{Added: []int{0}}},
	}
	for _, c := range cases {
		got := changepoint.Match(c.prev, c.next, changepoint.DefaultMatchDistance)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Match(%v, %v, %d) = %+v; want %+v", c.name, indices(c.prev), indices(c.next),
				changepoint.DefaultMatchDistance, got, c.want)
		}
	}
}

package dist

import (
	"math"
	"slices"
	"testing"
)

// TestShardBalanced checks that the shares partition idx, keep its order, and that the ranks'
// costs differ by at most the largest single cost — where the position split (Shard) of the
// same lengths is far apart.
func TestShardBalanced(t *testing.T) {
	lengths := []int{900, 100, 850, 120, 800, 90, 700, 150, 60, 400, 30, 420}
	idx := []int{3, 0, 7, 11, 1, 5, 9, 2, 4, 6, 8, 10}
	cost := func(i int) float64 { return float64(lengths[i]) }
	for _, size := range []int{1, 2, 3, 5} {
		var all []int
		loads := make([]float64, size)
		for r := range size {
			w := &World{Place: Place{Rank: r, Size: size}}
			mine := w.ShardBalanced(idx, cost)
			pos := -1
			for _, i := range mine {
				p := slices.Index(idx, i)
				if p <= pos {
					t.Fatalf("size %d rank %d: share %v is not in idx's order", size, r, mine)
				}
				pos = p
				loads[r] += cost(i)
			}
			all = append(all, mine...)
		}
		slices.Sort(all)
		want := slices.Sorted(slices.Values(idx))
		if !slices.Equal(all, want) {
			t.Fatalf("size %d: shares hold %v, want each of %v once", size, all, want)
		}
		lo, hi := slices.Min(loads), slices.Max(loads)
		if hi-lo > 900 {
			t.Errorf("size %d: costs %v differ by %g, more than the largest item (900)", size, loads, hi-lo)
		}
	}
	// The position split of the same step: ranks 0 and 1 get 3 of the 4 long items and 1.
	var pos [2]float64
	for r := range 2 {
		for _, i := range (&World{Place: Place{Rank: r, Size: 2}}).Shard([]int{0, 2, 4, 6, 1, 3}) {
			pos[r] += cost(i)
		}
	}
	var bal [2]float64
	for r := range 2 {
		for _, i := range (&World{Place: Place{Rank: r, Size: 2}}).ShardBalanced([]int{0, 2, 4, 6, 1, 3}, cost) {
			bal[r] += cost(i)
		}
	}
	if !(math.Abs(bal[0]-bal[1]) < math.Abs(pos[0]-pos[1])) {
		t.Errorf("balanced costs %v are no closer than the position split's %v", bal, pos)
	}
}

package model

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestPack(t *testing.T) {
	for _, c := range []struct {
		lengths []int
		L       int
		want    [][]int
		bad     bool
	}{
		{[]int{5, 3, 4, 2, 6}, 8, [][]int{{0, 1}, {2, 3}, {4}}, false},
		{[]int{7, 7, 1, 1, 1}, 8, [][]int{{0, 2}, {1, 3}, {4}}, false}, // first fit: earlier rows first
		{[]int{2, 8, 6, 3}, 8, [][]int{{0, 2}, {1}, {3}}, false},       // a later short one fills a gap
		{[]int{8, 8}, 8, [][]int{{0}, {1}}, false},                     // exactly full rows
		{nil, 8, nil, false},        // nothing to pack
		{[]int{3, 9}, 8, nil, true}, // longer than a row
		{[]int{3, 0}, 8, nil, true}, // empty sequence
	} {
		got, err := Pack(c.lengths, c.L)
		if (err != nil) != c.bad || !slices.EqualFunc(got, c.want, slices.Equal) {
			t.Errorf("Pack(%v, %d) = %v, %v; want %v (error %v)", c.lengths, c.L, got, err, c.want, c.bad)
		}
	}
}

// The tree gives what a plain scan over the rows gives, on many random inputs.
func TestPackIsFirstFit(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		L := 1 + rng.IntN(50)
		lengths := make([]int, rng.IntN(60))
		for i := range lengths {
			lengths[i] = 1 + rng.IntN(L)
		}
		var want [][]int
		var used []int
		for i, n := range lengths {
			r := slices.IndexFunc(used, func(u int) bool { return u+n <= L })
			if r < 0 {
				r = len(want)
				want, used = append(want, nil), append(used, 0)
			}
			want[r], used[r] = append(want[r], i), used[r]+n
		}
		got, err := Pack(lengths, L)
		if err != nil || !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("Pack(%v, %d) = %v, %v; scan gives %v", lengths, L, got, err, want)
		}
	}
}

func TestPackedBatch(t *testing.T) {
	ids := [][]int32{{1, 2, 3}, {4, 5}, {6}}
	weights := [][]float32{{0, 1, 1}, {0, 2}, {3}}
	b := PackedBatch([][]int{{0, 2}, {1}}, ids, weights, 5, 9)
	if !slices.Equal(b.IDs, []int32{1, 2, 3, 6, 9, 4, 5, 9, 9, 9}) ||
		!slices.Equal(b.Weights, []float32{0, 1, 1, 3, 0, 0, 2, 0, 0, 0}) ||
		!slices.EqualFunc(b.Docs, [][]int{{3, 1}, {2}}, slices.Equal) || b.B != 2 || b.L != 5 {
		t.Errorf("PackedBatch = %+v", b)
	}
	if PackedBatch([][]int{{0}}, ids, nil, 3, 0).Weights != nil {
		t.Error("nil weights: want Batch.Weights nil")
	}
}

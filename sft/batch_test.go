package sft

import (
	"slices"
	"testing"
)

// examplesOfLengths makes examples with the given token counts, every token after the first a target.
func examplesOfLengths(lengths ...int) []Example {
	ex := make([]Example, len(lengths))
	for i, n := range lengths {
		ex[i] = Example{Row: i + 1, IDs: make([]int32, n), Mask: make([]bool, n)}
		for j := range n {
			ex[i].IDs[j] = int32(i + 1)
			ex[i].Mask[j] = true
		}
	}
	return ex
}

func TestPackFitsEveryExampleOnce(t *testing.T) {
	lengths := []int{90, 10, 50, 50, 120, 30, 70, 5, 100, 40, 60, 25}
	ex := examplesOfLengths(lengths...)
	idx := []int{0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11} // 120 is left out on purpose
	rows := Pack(ex, idx, 100)
	var seen []int
	total := 0
	for _, r := range rows {
		if r.length(ex) > 100 {
			t.Errorf("row %v has %d tokens, limit 100", r, r.length(ex))
		}
		seen = append(seen, r...)
		total += r.length(ex)
	}
	slices.Sort(seen)
	if !slices.Equal(seen, idx) {
		t.Fatalf("packed %v, want each of %v once", seen, idx)
	}
	if min := (total + 99) / 100; len(rows) > min+1 {
		t.Errorf("%d rows for %d tokens (at least %d needed): first fit should come close", len(rows), total, min)
	}
	if !slices.EqualFunc(rows, Pack(ex, idx, 100), func(a, b row) bool { return slices.Equal(a, b) }) {
		t.Error("packing is not deterministic")
	}
	if over := Pack(ex, []int{4, 1}, 100); len(over) != 2 || !slices.Equal(over[0], row{4}) {
		t.Errorf("an example over the limit should get its own row, got %v", over)
	}
}

// A step's passes hold every example once, at most maxTokens tokens each (an example over it
// alone), as one row with no padding, in as few passes as first fit decreasing takes.
func TestPassesBoundTokensAndPadNothing(t *testing.T) {
	ex := examplesOfLengths(100, 20, 95, 22, 50, 48, 300)
	step := []int{0, 1, 2, 3, 4, 5, 6}
	passes := passesOf(ex, step, 200)
	var seen []int
	for _, p := range passes {
		b, real := buildBatch(ex, []row{p}, 1)
		if b.B != 1 || (b.L > 200 && len(p) > 1) {
			t.Errorf("pass %v: %d×%d, want one row of at most 200 tokens", p, b.B, b.L)
		}
		if real != b.B*b.L {
			t.Errorf("pass %v: %d real tokens in %d×%d: padded", p, real, b.B, b.L)
		}
		seen = append(seen, p...)
	}
	slices.Sort(seen)
	if !slices.Equal(seen, step) {
		t.Fatalf("passes hold %v, want %v", seen, step)
	}
	// Longest first, first fit: 300 alone | 100 95 | 50 48 22 20 — three passes, as few as the
	// 635 tokens allow with 300 alone.
	want := []row{{6}, {0, 2}, {4, 5, 3, 1}}
	if !slices.EqualFunc(passes, want, slices.Equal) {
		t.Errorf("passes %v, want %v", passes, want)
	}
}

func TestBuildBatchWeights(t *testing.T) {
	ex := examplesOfLengths(4, 2)
	ex[0].Mask = []bool{true, false, true, true} // token 0 never counts: nothing predicts it
	b, real := buildBatch(ex, []row{{0}, {1}}, 0.25)
	wantIDs := []int32{1, 1, 1, 1, 2, 2, 0, 0}
	wantW := []float32{0, 0, 0.25, 0.25, 0, 0.25, 0, 0}
	if b.B != 2 || b.L != 4 || real != 6 || !slices.Equal(b.IDs, wantIDs) || !slices.Equal(b.Weights, wantW) {
		t.Errorf("batch %d×%d real %d ids %v weights %v, want 2×4 real 6 ids %v weights %v", b.B, b.L, real, b.IDs, b.Weights, wantIDs, wantW)
	}
	// A packed row: the second document's first token is not predicted from the first document.
	p, _ := buildBatch(ex, []row{{0, 1}}, 1)
	if !slices.Equal(p.Weights, []float32{0, 0, 1, 1, 0, 1}) {
		t.Errorf("packed weights %v", p.Weights)
	}
}

func TestPlanIsSeededPermutationPerEpoch(t *testing.T) {
	ex := examplesOfLengths(10, 20, 30, 40, 50, 60, 70)
	plan := makePlan(ex, 2, 3, 0, 9)
	if len(plan) != 6 { // 3+3+1 per epoch
		t.Fatalf("%d steps, want 6", len(plan))
	}
	for epoch := range 2 {
		var seen []int
		for _, s := range plan {
			if s.Epoch == epoch {
				seen = append(seen, s.Examples...)
			}
		}
		slices.Sort(seen)
		if !slices.Equal(seen, []int{0, 1, 2, 3, 4, 5, 6}) {
			t.Errorf("epoch %d covers %v", epoch, seen)
		}
	}
	again := makePlan(ex, 2, 3, 0, 9)
	other := makePlan(ex, 2, 3, 0, 10)
	same := func(a, b []planStep) bool {
		return slices.EqualFunc(a, b, func(x, y planStep) bool { return x.Epoch == y.Epoch && slices.Equal(x.Examples, y.Examples) })
	}
	if !same(plan, again) || same(plan, other) {
		t.Error("the plan should be a function of the seed")
	}
	byTokens := makePlan(ex, 1, 1, 100, 9)
	for k, s := range byTokens {
		n := 0
		for _, i := range s.Examples {
			n += len(ex[i].IDs)
		}
		lastLen := len(ex[s.Examples[len(s.Examples)-1]].IDs)
		if (n < 100 && k < len(byTokens)-1) || n-lastLen >= 100 {
			t.Errorf("step %d: %v holds %d tokens, want the fewest examples reaching 100", k, s.Examples, n)
		}
	}
}

func TestSplitHeldOut(t *testing.T) {
	ex := examplesOfLengths(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	train, held := splitHeldOut(ex, 0.2, 1)
	if len(train) != 8 || len(held) != 2 {
		t.Fatalf("split %d/%d, want 8/2", len(train), len(held))
	}
	if tr, h := splitHeldOut(ex[:1], 0.5, 1); len(tr) != 1 || len(h) != 0 {
		t.Errorf("one example: split %d/%d, want it kept for training", len(tr), len(h))
	}
}

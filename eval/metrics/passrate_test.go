package metrics

import (
	"testing"
)

// The keep rule of a pass-rate filter: a problem stays when its share of correct samples is at
// most the threshold; rStar2's "not solved 8/8" is the threshold 0.875.
func TestPassRateAtMost(t *testing.T) {
	for _, c := range []struct {
		correct, samples int
		max              float64
		keep             bool
	}{
		{0, 8, 0.875, true},
		{7, 8, 0.875, true},
		{8, 8, 0.875, false},
		{8, 8, NotAlwaysSolved(8), false},
		{7, 8, NotAlwaysSolved(8), true},
		{0, 8, 0, true},
		{1, 8, 0, false},
		{8, 8, 1, true},
		{2, 3, 0.6667, true}, // a threshold written to four digits keeps the count it names
		{2, 3, 0.666, false},
		{2, 3, NotAlwaysSolved(3), true},
		{3, 3, NotAlwaysSolved(3), false},
		{4, 8, 0.5, true},
		{5, 8, 0.5, false},
		{0, 1, NotAlwaysSolved(1), true}, // one sample: keep what it did not solve
		{1, 1, NotAlwaysSolved(1), false},
	} {
		p := PassRate{Correct: c.correct, Samples: c.samples}
		if got := p.AtMost(c.max); got != c.keep {
			t.Errorf("%d/%d at most %g: %v, want %v", c.correct, c.samples, c.max, got, c.keep)
		}
	}
}

// PassRates counts per problem whatever order the samples come in, with the caller's rule of
// correctness.
func TestPassRates(t *testing.T) {
	type sample struct {
		problem int
		reward  float64
	}
	samples := []sample{{2, 1}, {0, 0}, {1, 1}, {0, 1}, {2, 1}, {1, 1}, {0, 0}, {1, 1}, {2, 0}}
	got := PassRates([]string{"a", "b", "c"}, 3, samples, func(s sample) (int, bool) { return s.problem, s.reward > 0 })
	want := []PassRate{{"a", 3, 1, 1.0 / 3}, {"b", 3, 3, 1}, {"c", 3, 2, 2.0 / 3}}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("problem %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

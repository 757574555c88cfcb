package rl

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// pos is a correct rollout with penalty failed/10 (ten calls, one answer block).
func pos(failed int) Sample {
	return Sample{Reward: 1, ToolCalls: 10, FailedCalls: failed, AnswerTags: 1, Turns: 3}
}

// neg is a wrong rollout with penalty failed/10.
func neg(failed int) Sample {
	s := pos(failed)
	s.Reward = 0
	return s
}

func newRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

func TestParseMode(t *testing.T) {
	for _, s := range []string{"paper", "release", "none"} {
		if m, err := ParseMode(s); err != nil || string(m) != s {
			t.Errorf("ParseMode(%q) = %q, %v", s, m, err)
		}
	}
	for _, s := range []string{"", "Paper", "roc"} {
		if _, err := ParseMode(s); err == nil {
			t.Errorf("ParseMode(%q) accepted", s)
		}
	}
}

func TestDownsampleSmallGroupsAndZeroKeep(t *testing.T) {
	group := []Sample{pos(0), neg(0), pos(3)}
	for _, mode := range []Mode{ModePaper, ModeRelease, ModeNone} {
		kept, rejected := Downsample(mode, group, 3, newRNG(1))
		if rejected || !slices.Equal(kept, []int{0, 1, 2}) {
			t.Errorf("%s, keep = n: kept %v rejected %v, want the whole group", mode, kept, rejected)
		}
		kept, rejected = Downsample(mode, group, 0, newRNG(1))
		if rejected || kept != nil {
			t.Errorf("%s, keep 0: kept %v rejected %v, want nothing", mode, kept, rejected)
		}
	}
	for _, mode := range []Mode{ModePaper, ModeNone} {
		if kept, rejected := Downsample(mode, group, 5, newRNG(1)); rejected || len(kept) != 3 {
			t.Errorf("%s, keep > n: kept %v rejected %v, want the whole group", mode, kept, rejected)
		}
	}
	if kept, rejected := Downsample(ModeRelease, group, 5, nil); !rejected || kept != nil {
		t.Errorf("release, keep > n: kept %v rejected %v, want rejected", kept, rejected)
	}
}

func TestDownsampleUnknownModePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for an unknown mode")
		}
	}()
	Downsample(Mode("grpo"), []Sample{pos(0), neg(0)}, 1, newRNG(1))
}

// countKept splits kept indices into negatives and positives of group.
func countKept(group []Sample, kept []int) (nNeg, nPos int) {
	for _, i := range kept {
		if group[i].Positive() {
			nPos++
		} else {
			nNeg++
		}
	}
	return nNeg, nPos
}

// group makes nNeg negatives followed by nPos positives, penalties spread over [0, 1].
func group(nNeg, nPos int) []Sample {
	var g []Sample
	for i := range nNeg {
		g = append(g, neg(i%11))
	}
	for i := range nPos {
		g = append(g, pos(i%11))
	}
	return g
}

func checkKept(t *testing.T, kept []int, n, keep int) {
	t.Helper()
	if len(kept) != keep || !slices.IsSorted(kept) || len(slices.Compact(slices.Clone(kept))) != keep ||
		kept[0] < 0 || kept[keep-1] >= n {
		t.Fatalf("kept %v: want %d distinct sorted indices below %d", kept, keep, n)
	}
}

func TestDownsamplePaperCounts(t *testing.T) {
	tests := []struct {
		name             string
		nNeg, nPos, keep int
		wantNeg, wantPos int
	}{
		{"paper's 2G → G, half negatives", 16, 16, 16, 8, 8},
		{"odd negatives round down", 17, 15, 16, 8, 8},
		{"one negative keeps none", 1, 31, 16, 0, 16},
		{"all negatives", 32, 0, 16, 16, 0},
		{"all positives", 0, 32, 16, 0, 16},
		{"one positive", 31, 1, 16, 15, 1},
		{"oversample 3x keeps the negatives' share", 12, 12, 8, 4, 4},
		{"3 negatives of 8, keep 4", 3, 5, 4, 1, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := group(tc.nNeg, tc.nPos)
			for seed := range uint64(20) {
				kept, rejected := Downsample(ModePaper, g, tc.keep, newRNG(seed))
				if rejected {
					t.Fatal("paper mode rejected a group")
				}
				checkKept(t, kept, len(g), tc.keep)
				if nNeg, nPos := countKept(g, kept); nNeg != tc.wantNeg || nPos != tc.wantPos {
					t.Fatalf("seed %d: kept %d negatives and %d positives, want %d and %d",
						seed, nNeg, nPos, tc.wantNeg, tc.wantPos)
				}
			}
		})
	}
}

// keepRates runs Downsample draws times with one seeded generator and returns how often each
// rollout was kept.
func keepRates(mode Mode, g []Sample, keep, draws int) []float64 {
	rng := newRNG(42)
	rates := make([]float64, len(g))
	for range draws {
		kept, _ := Downsample(mode, g, keep, rng)
		for _, i := range kept {
			rates[i] += 1 / float64(draws)
		}
	}
	return rates
}

func TestDownsamplePaperFavoursCleanPositives(t *testing.T) {
	// Two negatives (one kept, uniformly) and two positives of p = 0.1 and p = 1 competing for one
	// slot: the clean one wins with probability (1/0.1) / (1/0.1 + 1/1) = 10/11.
	g := []Sample{neg(0), pos(1), neg(10), pos(10)}
	rates := keepRates(ModePaper, g, 2, 10000)
	if rates[1] <= rates[3] {
		t.Fatalf("p=0.1 positive kept %.3f of the time, p=1 one %.3f: want the cleaner more often", rates[1], rates[3])
	}
	want := []float64{0.5, 10.0 / 11, 0.5, 1.0 / 11}
	for i := range g {
		if math.Abs(rates[i]-want[i]) > 0.02 {
			t.Errorf("rollout %d kept %.4f of the time, want %.4f", i, rates[i], want[i])
		}
	}
}

func TestDownsamplePaperFloorsZeroPenalty(t *testing.T) {
	// A flawless positive (p = 0, weight 1/PenaltyFloor = 100) against one with p = 0.5 (weight 2).
	flawless := pos(0)
	noTool := Sample{Reward: 1, AnswerTags: 1, Turns: 1}
	g := []Sample{flawless, noTool, neg(0), neg(0)}
	rates := keepRates(ModePaper, g, 2, 10000)
	if want := 100.0 / 102; math.Abs(rates[0]-want) > 0.01 {
		t.Errorf("flawless positive kept %.4f of the time, want %.4f", rates[0], want)
	}
	// All flawless: weights are equal and finite, so the pick is uniform.
	rates = keepRates(ModePaper, []Sample{flawless, flawless, flawless, flawless}, 2, 10000)
	for i, r := range rates {
		if math.Abs(r-0.5) > 0.02 || math.IsNaN(r) {
			t.Errorf("flawless positive %d kept %.4f of the time, want 0.5", i, r)
		}
	}
}

func TestDownsampleIsReproducible(t *testing.T) {
	g := group(9, 23)
	for _, mode := range []Mode{ModePaper, ModeNone} {
		a, _ := Downsample(mode, g, 16, newRNG(7))
		b, _ := Downsample(mode, g, 16, newRNG(7))
		if !slices.Equal(a, b) {
			t.Errorf("%s: same seed gave %v and %v", mode, a, b)
		}
	}
}

func TestDownsampleNoneIsUniform(t *testing.T) {
	g := group(3, 7) // rewards and penalties must not matter
	rates := keepRates(ModeNone, g, 4, 10000)
	for i, r := range rates {
		if math.Abs(r-0.4) > 0.02 {
			t.Errorf("rollout %d kept %.4f of the time, want 0.4", i, r)
		}
	}
	kept, rejected := Downsample(ModeNone, []Sample{neg(0), neg(0), neg(0)}, 2, newRNG(3))
	if rejected || len(kept) != 2 {
		t.Errorf("all-equal group: kept %v rejected %v, want 2 kept", kept, rejected)
	}
}

func TestDownsampleRelease(t *testing.T) {
	tests := []struct {
		name     string
		group    []Sample
		keep     int
		want     []int
		rejected bool
	}{
		{"all wrong is rejected", []Sample{neg(0), neg(1), neg(2), neg(3)}, 2, nil, true},
		{"all right is rejected", []Sample{pos(0), pos(1), pos(2), pos(3)}, 2, nil, true},
		{"smaller than keep is rejected", []Sample{neg(0), pos(1)}, 4, nil, true},
		{"exactly keep is kept", []Sample{neg(0), pos(1), pos(2), neg(3)}, 4, []int{0, 1, 2, 3}, false},
		{
			// 4 of 8 each side → 2 and 2, each the lowest penalties.
			"lowest penalty first on both sides",
			[]Sample{pos(5), neg(9), pos(1), neg(2), pos(3), neg(0), pos(8), neg(4)}, 4,
			[]int{2, 3, 4, 5}, false,
		},
		{
			"penalty ties keep rollout order",
			[]Sample{neg(1), pos(2), neg(1), pos(2), neg(1), pos(2)}, 4,
			[]int{0, 1, 2, 3}, false,
		},
		{
			// 1 negative of 8: round(0.5) = 0 ≤ min(2, 1), so it is kept and positives get 3.
			"floor keeps a lone negative",
			[]Sample{pos(6), pos(5), pos(4), neg(9), pos(3), pos(2), pos(1), pos(0)}, 4,
			[]int{3, 5, 6, 7}, false,
		},
		{
			// 2 positives of 8 → round(1) = 1 ≤ 2 → 2 positives, 2 negatives, not 1 and 3.
			"floor of two positives",
			[]Sample{neg(0), neg(1), neg(2), neg(3), neg(4), neg(5), pos(9), pos(8)}, 4,
			[]int{0, 1, 6, 7}, false,
		},
		{
			// 10 positives of 12, keep 6: round(1) = 1 negative ≤ min(2, 2) → 2 negatives, 4 positives.
			"floor of two negatives",
			[]Sample{pos(0), pos(1), pos(2), pos(3), pos(4), pos(5), pos(6), pos(7), pos(8), pos(9), neg(5), neg(6)}, 6,
			[]int{0, 1, 2, 3, 10, 11}, false,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kept, rejected := Downsample(ModeRelease, tc.group, tc.keep, nil)
			if rejected != tc.rejected || !slices.Equal(kept, tc.want) {
				t.Errorf("kept %v rejected %v, want %v rejected %v", kept, rejected, tc.want, tc.rejected)
			}
		})
	}
}

func TestReleaseShares(t *testing.T) {
	tests := []struct {
		name                 string
		nNegAll, nPosAll     int
		keep, wantNeg, wantP int
	}{
		{"even split", 16, 16, 16, 8, 8},
		{"half to even balances odd counts", 17, 15, 16, 8, 8},
		{"half to even, other way", 15, 17, 16, 8, 8},
		{"both halves round down: positives take the missing one", 9, 9, 9, 4, 5},
		{"three negatives of 32 round to 2 (the floor)", 3, 29, 16, 2, 14},
		{"one negative", 1, 31, 16, 1, 15},
		{"one positive", 31, 1, 16, 15, 1},
		{"keep 3 lowers the floors to 1 and 2", 5, 1, 3, 2, 1},
		{"keep 2 lowers the floors to 1 and 1", 1, 5, 2, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nNeg, nPos := releaseShares(tc.nNegAll, tc.nPosAll, tc.keep)
			if nNeg != tc.wantNeg || nPos != tc.wantP {
				t.Errorf("shares %d negatives, %d positives; want %d and %d", nNeg, nPos, tc.wantNeg, tc.wantP)
			}
		})
	}
}

func TestReleaseSharesAlwaysFillKeep(t *testing.T) {
	for n := 2; n <= 40; n++ {
		for nNeg := 1; nNeg < n; nNeg++ {
			for keep := 2; keep <= n; keep++ {
				a, b := releaseShares(nNeg, n-nNeg, keep)
				if a+b != keep || a < 0 || b < 0 || a > nNeg || b > n-nNeg {
					t.Fatalf("n=%d neg=%d keep=%d: shares %d + %d", n, nNeg, keep, a, b)
				}
				if floor := min(ReleaseFloor, keep/2, nNeg); a < floor {
					t.Fatalf("n=%d neg=%d keep=%d: %d negatives, under the floor %d", n, nNeg, keep, a, floor)
				}
				if floor := min(ReleaseFloor, keep-min(ReleaseFloor, keep/2), n-nNeg); b < floor {
					t.Fatalf("n=%d neg=%d keep=%d: %d positives, under the floor %d", n, nNeg, keep, b, floor)
				}
			}
		}
	}
}

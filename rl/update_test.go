package rl

import (
	"math"
	"slices"
	"testing"

	"gorstar/dist"
	"gorstar/model"
	"gorstar/rollout"
)

// crafted is a trajectory with a 3-token prompt and a response whose generated and appended
// tokens alternate as a tool turn would: generated, appended (tool text), generated.
func crafted(prompt, gen1, appended, gen2 []int32, reward float64) rollout.Trajectory {
	tr := rollout.Trajectory{PromptIDs: prompt, Reward: reward}
	add := func(ids []int32, generated bool) {
		for _, id := range ids {
			tr.ResponseIDs = append(tr.ResponseIDs, id)
			tr.LossMask = append(tr.LossMask, generated)
			lp := float32(0)
			if generated {
				lp = -float32(id) / 100 // a log-probability the test can recognize by its token
			}
			tr.LogProbs = append(tr.LogProbs, lp)
		}
	}
	add(gen1, true)
	add(appended, false)
	add(gen2, true)
	return tr
}

// The packed batch holds each trajectory's exact ids, and the loss mask falls on exactly the
// generated ids, with the sampler's log-probability of each at the position that predicts it.
func TestGeneratedTokensAlignWithLogprobPositions(t *testing.T) {
	trajs := []rollout.Trajectory{
		crafted([]int32{1, 2, 3}, []int32{40, 41}, []int32{7, 8, 9}, []int32{42}, 1),
		crafted([]int32{1, 2}, []int32{50}, nil, nil, 0),
		crafted([]int32{4, 5, 6, 7}, []int32{60, 61, 62}, []int32{9}, []int32{63, 64}, 1),
	}
	var seqs []sequence
	for i, tr := range trajs {
		seqs = append(seqs, sequenceOf(tr, float64(i+1)))
	}
	passes, err := planPasses(seqs, []int{0, 1, 2}, 128) // 22 tokens: one pass, one row
	if err != nil {
		t.Fatal(err)
	}
	if len(passes) != 1 || len(passes[0].rows) != 1 {
		t.Fatalf("passes %+v, want one row", passes)
	}
	p := passes[0]
	b := p.batch(seqs)
	tb := p.tokenBatch(seqs, make([]float32, b.B*b.L), 0)
	var wantIDs []int32
	var wantGen []int32
	for _, k := range p.rows[0] {
		wantIDs = append(wantIDs, seqs[k].ids...)
	}
	for i, g := range tb.Mask {
		if g {
			wantGen = append(wantGen, b.IDs[i])
			if want := -float32(b.IDs[i]) / 100; tb.RolloutLogprobs[i] != want {
				t.Errorf("position %d (id %d): rollout logprob %g, want %g", i, b.IDs[i], tb.RolloutLogprobs[i], want)
			}
		}
	}
	if !slices.Equal(b.IDs[:len(wantIDs)], wantIDs) {
		t.Errorf("batch ids %v, want %v", b.IDs[:len(wantIDs)], wantIDs)
	}
	gen := 0
	for _, k := range p.rows[0] {
		gen += seqs[k].genTokens()
	}
	if len(wantGen) != gen || gen != 3+1+5 {
		t.Errorf("masked ids %v: %d, want the 9 generated ids", wantGen, len(wantGen))
	}
	for _, id := range wantGen {
		if id < 40 {
			t.Errorf("masked id %d is a prompt or appended id", id)
		}
	}
	docs := 0
	for _, k := range p.rows[0] {
		if b.Docs[0][docs] != len(seqs[k].ids) {
			t.Errorf("docs %v, want the sequences' lengths", b.Docs[0])
		}
		docs++
	}
}

// A crafted group of four rollouts, two right: with the old log-probabilities equal to the new
// (the first mini-batch) every generated token gets the weight Â/N into Backward, every other
// token 0.
func TestCraftedGroupGivesExpectedWeights(t *testing.T) {
	group := []rollout.Trajectory{
		crafted([]int32{1, 2}, []int32{40, 41}, []int32{7}, []int32{42}, 1),
		crafted([]int32{1, 2}, []int32{43}, nil, nil, 0),
		crafted([]int32{1, 2}, []int32{44, 45}, nil, nil, 0),
		crafted([]int32{1, 2}, []int32{46}, []int32{8, 9}, []int32{47}, 1),
	}
	adv := GroupAdvantages([]float64{1, 0, 0, 1})
	// mean 0.5, sample std sqrt(1/3): ±0.866
	if math.Abs(adv[0]-0.8660254) > 1e-5 || math.Abs(adv[1]+0.8660254) > 1e-5 {
		t.Fatalf("advantages %v", adv)
	}
	var seqs []sequence
	for i, tr := range group {
		s := sequenceOf(tr, adv[i])
		s.old = make([]float32, len(s.ids))
		copy(s.old, s.rollout)
		seqs = append(seqs, s)
	}
	passes, err := planPasses(seqs, []int{0, 1, 2, 3}, 8) // at most 8 tokens a pass: several passes
	if err != nil {
		t.Fatal(err)
	}
	const n = 3 + 1 + 2 + 2 // generated tokens of the group
	for _, p := range passes {
		logprobs := gather(p, seqs, func(s *sequence) []float32 { return s.old })
		res, err := PolicyLoss(DefaultLossConfig(), p.tokenBatch(seqs, logprobs, n))
		if err != nil {
			t.Fatal(err)
		}
		b := p.batch(seqs)
		for r, row := range p.rows {
			pos := r * p.L
			for _, k := range row {
				for i := range seqs[k].ids {
					want := 0.0
					if seqs[k].gen[i] {
						want = adv[k] / n
					}
					if got := float64(res.Weights[pos+i]); math.Abs(got-want) > 1e-6 {
						t.Errorf("rollout %d token %d (id %d): weight %g, want %g", k, i, b.IDs[pos+i], got, want)
					}
				}
				pos += len(seqs[k].ids)
			}
			for ; pos < (r+1)*p.L; pos++ {
				if res.Weights[pos] != 0 {
					t.Errorf("padding at %d has weight %g", pos, res.Weights[pos])
				}
			}
		}
	}
}

// Infra failures are re-rolled, model failures are not.
func TestInfraFailed(t *testing.T) {
	for _, c := range []struct {
		tr   rollout.Trajectory
		want bool
	}{
		{rollout.Trajectory{FailedToolCalls: 2, ToolCalls: 3}, false},
		{rollout.Trajectory{InternalToolErrors: 1, ToolCalls: 1}, true},
		{rollout.Trajectory{Finish: rollout.FinishError, Error: "engine closed"}, true},
		{rollout.Trajectory{Finish: rollout.FinishTruncated}, false},
	} {
		if got := infraFailed(c.tr); got != c.want {
			t.Errorf("%+v: infraFailed %v, want %v", c.tr, got, c.want)
		}
	}
	s := sampleOf(rollout.Trajectory{Reward: 1, ToolCalls: 3, FailedToolCalls: 1, InternalToolErrors: 1, NumTurns: 4, AnswerTags: 1,
		Finish: rollout.FinishTruncated, ResponseIDs: make([]int32, 9)})
	if s != (Sample{Reward: 1, ToolCalls: 3, FailedCalls: 1, AnswerTags: 1, Turns: 4, Truncated: true, ResponseTokens: 9}) {
		t.Errorf("sampleOf: %+v", s)
	}
}

// Each rank's share of a mini-batch is balanced by forward/backward cost, not split by position:
// with one long sequence and short ones, the long one's rank gets fewer; the shares cover the
// mini-batch once, and their costs differ by at most the costliest sequence's.
func TestShareBalancesCost(t *testing.T) {
	c, err := model.Preset("tiny", 0)
	if err != nil {
		t.Fatal(err)
	}
	m := &model.Model{Config: c}
	lengths := []int{400, 50, 60, 40, 55, 45, 50, 30}
	seqs := make([]sequence, len(lengths))
	for i, n := range lengths {
		seqs[i].ids = make([]int32, n)
	}
	idx := []int{0, 1, 2, 3, 4, 5, 6, 7}
	p, attn := float64(c.NumParams()), float64(c.QDim()*c.NumHiddenLayers)
	cost := func(i int) float64 { n := float64(lengths[i]); return n*p + n*n*attn }
	seen := map[int]int{}
	var loads []float64
	for r := range 2 {
		u := &updater{m: m, world: &dist.World{Place: dist.Place{Rank: r, Size: 2}}}
		load := 0.0
		for _, i := range u.share(seqs, idx) {
			seen[i]++
			load += cost(i)
		}
		loads = append(loads, load)
	}
	for _, i := range idx {
		if seen[i] != 1 {
			t.Errorf("sequence %d in %d shares, want 1", i, seen[i])
		}
	}
	if d := math.Abs(loads[0] - loads[1]); d > cost(0) {
		t.Errorf("shares cost %g and %g: %g apart, more than the costliest sequence's %g", loads[0], loads[1], d, cost(0))
	}
	// by position rank 0 would hold 400+60+55+50 tokens against 175
	if loads[0] > 1.5*loads[1] || loads[1] > 1.5*loads[0] {
		t.Errorf("shares cost %g and %g, want within a factor 1.5", loads[0], loads[1])
	}
}

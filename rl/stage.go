package rl

import (
	"context"
	"math/rand/v2"

	"gorstar/config"
	"gorstar/data"
	"gorstar/eval/metrics"
	"gorstar/rollout"
)

// stageData is the problems of one stage and the order they are drawn in: each epoch a seeded
// permutation of them, so the count of problems drawn is the whole cursor.
type stageData struct {
	index    int
	problems []data.Problem
	seed     uint64
	epoch    int
	perm     []int
}

func newStageData(index int, problems []data.Problem, seed uint64) *stageData {
	return &stageData{index: index, problems: problems, seed: seed, epoch: -1}
}

// at returns the problem drawn at position pos of the stage's stream.
func (d *stageData) at(pos int) data.Problem {
	n := len(d.problems)
	if e := pos / n; e != d.epoch {
		d.epoch = e
		d.perm = rand.New(rand.NewPCG(d.seed^uint64(d.index)<<32, uint64(e))).Perm(n)
	}
	return d.problems[d.perm[pos%n]]
}

// draw returns the next n problems after the first `from` of the stream.
func (d *stageData) draw(from, n int) []data.Problem {
	out := make([]data.Problem, n)
	for i := range out {
		out[i] = d.at(from + i)
	}
	return out
}

// enterStage loads the data of the stage the next step belongs to; at a stage's first step it
// also runs the stage's set-up: the hard_only filter and the optimizer reset.
func (t *trainer) enterStage(ctx context.Context) error {
	idx, within := stageAt(t.o.RL.Stages, t.st.Step)
	stage := t.o.RL.Stages[idx]
	if t.stage != nil && t.stage.index == idx {
		return nil
	}
	problems := t.train
	if stage.Data != "" {
		var err error
		if problems, err = readProblems(stage.Data); err != nil {
			return err
		}
	}
	fresh := within == 0 && !(t.st.StageIndex == idx && t.st.StageReady)
	if fresh {
		t.st.StageIndex, t.st.Drawn, t.st.Hard, t.st.StageReady = idx, 0, nil, true
		if stage.HardOnly {
			problems = t.hardPool(idx, problems)
			hard, err := t.hardProblems(ctx, problems, stage)
			if err != nil {
				return err
			}
			t.st.Hard = hard
		}
		if stage.ResetOptimizer && idx > 0 {
			t.opt.Close()
			t.opt = t.m.NewOptimizer(t.adamW())
			t.o.logf("rl: stage %s: optimizer reset", stage.Name)
		}
		t.st.Stages = append(t.st.Stages, StageResult{Name: stage.Name})
	}
	if stage.HardOnly {
		problems = t.hardPool(idx, problems)
		kept := make([]data.Problem, len(t.st.Hard))
		for i, k := range t.st.Hard {
			kept[i] = problems[k]
		}
		problems = kept
	}
	if len(problems) == 0 {
		problems = t.trainOrStage(stage) // nothing hard left: keep training on the stage's data
		t.o.logf("rl: stage %s: the policy solves every problem in all %d samples; using them all", stage.Name, t.o.RL.HardOnlySamples)
	}
	t.stage = newStageData(idx, problems, t.o.Seed)
	t.st.Stages[len(t.st.Stages)-1].Problems = len(problems)
	return nil
}

// hardPool is what a hard_only stage's filter examines: the first rl.hard_only_pool problems of
// the stage's shuffled data (all when 0).
func (t *trainer) hardPool(idx int, problems []data.Problem) []data.Problem {
	n := t.o.RL.HardOnlyPool
	if n == 0 || n >= len(problems) {
		return problems
	}
	return newStageData(idx, problems, t.o.Seed).draw(0, n)
}

func (t *trainer) trainOrStage(stage config.Stage) []data.Problem {
	if stage.Data == "" {
		return t.train
	}
	ps, _ := readProblems(stage.Data)
	return ps
}

// hardProblems returns the indices of the problems the current policy does not solve in every
// one of rl.hard_only_samples samples (rStar2's stage 3 keeps those it did not solve 8/8 times).
func (t *trainer) hardProblems(ctx context.Context, problems []data.Problem, stage config.Stage) ([]int, error) {
	k := t.o.RL.HardOnlySamples
	o := t.loopOptions(stage.MaxTurns, stage.MaxResponseTokens, t.o.Rollout.Temperature, k, rollout.SampleSeed(t.o.Seed, -2, stage.MaxTurns))
	trajs, err := t.rollouts(ctx, problems, o)
	if err != nil {
		return nil, err
	}
	var hard []int
	ids := make([]string, len(problems))
	for i, p := range problems {
		ids[i] = p.ID
	}
	rates := metrics.PassRates(ids, k, trajs, func(tr rollout.Trajectory) (int, bool) { return tr.ProblemIndex, tr.Reward > 0 })
	for i, r := range rates {
		if r.AtMost(metrics.NotAlwaysSolved(k)) { // the rule of `gorstar data filter --max-pass-rate`
			hard = append(hard, i)
		}
	}
	t.o.logf("rl: stage %s: %d of %d problems not solved %d/%d times", stage.Name, len(hard), len(problems), k, k)
	return hard, nil
}

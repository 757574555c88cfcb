package rl

import (
	"context"
	"time"

	"gorstar/internal/schedule"
	"gorstar/model"
	"gorstar/rollout"
)

// runStep is one RL step: draw prompts, roll out oversample × group_size rollouts each, keep
// group_size by RoC, compute advantages, update the policy, log, checkpoint.
func (t *trainer) runStep(ctx context.Context) error {
	c := t.o.RL
	idx, _ := stageAt(c.Stages, t.st.Step)
	stage := c.Stages[idx]
	began := time.Now()
	t.stepRerolls = 0

	problems := t.stage.draw(t.st.Drawn, c.PromptsPerStep)
	per := c.Oversample * c.GroupSize
	seed := rollout.SampleSeed(t.o.Seed, -1, t.st.Step)
	o := t.loopOptions(stage.MaxTurns, stage.MaxResponseTokens, t.o.Rollout.Temperature, per, seed)
	trajs, err := t.rollouts(ctx, problems, o)
	if err != nil {
		return err
	}
	sum := rollout.Summarize(trajs, time.Since(began))
	rolloutS := time.Since(began).Seconds()

	kept, rejected, uniform := t.downsample(trajs, per)
	met := t.stepMetrics(trajs, kept)
	met.Stage, met.RejectedGroups, met.InfraRerolls = stage.Name, rejected+uniform, t.stepRerolls
	met.RolloutSeconds, met.ToolWaitFraction = rolloutS, sum.ToolWaitFraction
	met.ToolSeconds = toolSeconds(trajs)
	met.LR = schedule.LR(t.st.Step, t.totalSteps(), c.WarmupSteps, stageLR(c.LR, stage.LR), schedule.Constant)

	var seqs []sequence
	for _, g := range kept {
		for i, tr := range g.trajs {
			if g.advantages[i] != 0 {
				seqs = append(seqs, sequenceOf(tr, g.advantages[i]))
			}
		}
	}
	if len(seqs) == 0 {
		t.o.logf("rl: step %d: every group was rejected or had equal rewards; no update", t.st.Step+1)
	} else if err := t.update(ctx, seqs, met.LR, &met); err != nil {
		return err
	}
	t.st.Drawn += c.PromptsPerStep
	t.st.Step++
	met.Step = t.st.Step
	if t.o.StepTrajectories != nil {
		if err := t.o.StepTrajectories(stage.Name, t.st.Step, trajs); err != nil {
			return err
		}
	}
	if err := t.pushWeights(ctx); err != nil { // before the evaluation and the next step roll out
		return err
	}
	return t.endStep(ctx, met, time.Since(began).Seconds())
}

func stageLR(run, stage float64) float64 {
	if stage > 0 {
		return stage
	}
	return run
}

// update runs the policy update on the engine's goroutine (so its decoders repack the new
// weights) and records its figures. With remote rollouts the mismatch guard only measures: the
// servers' kernels are not the trainer's, and TIS (rl.tis_cap) corrects for the gap instead.
func (t *trainer) update(ctx context.Context, seqs []sequence, lr float64, met *StepMetrics) error {
	began := time.Now()
	maxDelta := t.o.RL.MaxLogprobDelta
	if t.remote != nil {
		maxDelta = 0
	}
	u := &updater{opt: t.opt, loss: t.loss, miniBatches: t.o.RL.MiniBatches, maxTokens: t.o.RL.MicroBatchTokens,
		maxDelta: maxDelta, lr: lr, rng: t.rng, logf: t.o.logf, world: t.o.World}
	var st updateStats
	err := t.withModel(ctx, func(m *model.Model) error {
		u.m = m
		var err error
		st, err = u.run(seqs)
		return err
	})
	met.LogprobDeltaMax, met.LogprobDeltaMean, met.Entropy = st.deltaMax, st.deltaMean, st.entropy
	if err != nil {
		return err
	}
	met.Loss, met.ClipFraction, met.ApproxKL, met.GradNorm = st.loss, st.clipFraction, st.approxKL, st.gradNorm
	met.TISCappedFraction = st.tisCapped
	met.TrainedTokens, met.SkippedUpdates = st.tokens, st.skipped
	met.UpdateSeconds = time.Since(began).Seconds()
	return nil
}

// stepMetrics summarizes the rollouts before and after RoC.
func (t *trainer) stepMetrics(all []rollout.Trajectory, kept []keptGroup) StepMetrics {
	before := make([]Sample, len(all))
	reward := 0.0
	for i, tr := range all {
		before[i] = sampleOf(tr)
		reward += tr.Reward
	}
	var after []Sample
	for _, g := range kept {
		for _, tr := range g.trajs {
			after = append(after, sampleOf(tr))
		}
	}
	b, a := Stats(before), Stats(after)
	return StepMetrics{
		RewardMean: reward / float64(max(len(all), 1)), AccuracyBefore: b.Accuracy, AccuracyAfter: a.Accuracy,
		FailedToolSharePositive: b.FailedCallSharePositive, FailedToolShareNegative: b.FailedCallShareNegative,
		KeptFailedSharePositive: a.FailedCallSharePositive,
		MeanTokensPositive:      a.MeanTokensPositive, MeanTokensNegative: a.MeanTokensNegative,
		TruncationRate: b.TruncationRate, TurnsPerRollout: b.TurnsPerRollout, CallsPerRollout: b.CallsPerRollout,
	}
}

func toolSeconds(trajs []rollout.Trajectory) float64 {
	ms := 0.0
	for _, tr := range trajs {
		for _, turn := range tr.Turns {
			ms += turn.DurationMS
		}
	}
	return ms / 1000
}

// endStep evaluates when due, writes the metrics line, checkpoints when due and reports progress.
func (t *trainer) endStep(ctx context.Context, met StepMetrics, seconds float64) error {
	c := t.o.RL
	idx, within := stageAt(c.Stages, t.st.Step-1)
	stageEnd := within+1 == c.Stages[idx].Steps
	last := t.st.Step == t.totalSteps()
	t.st.Seconds += seconds
	if t.held != nil && (last || c.EvalEvery > 0 && t.st.Step%c.EvalEvery == 0) {
		if err := t.evaluate(ctx, &met); err != nil {
			return err
		}
	}
	t.st.Last = met
	t.st.Stages[len(t.st.Stages)-1].add(met, within+1)
	if t.met != nil { // rank 0's alone under a launcher
		if err := t.met.Write(met); err != nil {
			return err
		}
	}
	if last || t.st.Step%weightCheckEvery == 0 {
		if err := t.checkSameWeights(t.st.Step); err != nil {
			return err
		}
	}
	if stageEnd || c.SaveEvery > 0 && t.st.Step%c.SaveEvery == 0 {
		if err := t.checkpoint(ctx); err != nil {
			return err
		}
	}
	if t.o.Progress != nil {
		t.o.Progress(Progress{Stage: met.Stage, Step: t.st.Step, Steps: t.totalSteps(), Metrics: met})
	}
	if stageEnd && t.o.StageEnd != nil {
		dir := model.CheckpointPath(checkpointsDir(t.o.Out), t.st.Step)
		if err := t.o.StageEnd(ctx, idx, c.Stages[idx].Name, dir); err != nil {
			return err
		}
	}
	return nil
}

// add folds a step into the stage's summary: running means of reward and accuracy, the last
// failed-call share and held-out accuracy.
func (s *StageResult) add(m StepMetrics, steps int) {
	s.Steps = steps
	k := float64(steps)
	s.RewardMean += (m.RewardMean - s.RewardMean) / k
	s.Accuracy += (m.AccuracyBefore - s.Accuracy) / k
	s.FailedToolSharePositive = m.FailedToolSharePositive
	if m.EvalAccuracy != nil {
		s.EvalAccuracy = *m.EvalAccuracy
	}
}

// finish publishes the final model and sums the run up.
func (t *trainer) finish() (Result, error) {
	if t.o.World.Root() {
		err := t.withModel(context.Background(), func(m *model.Model) error { return m.SaveInto(t.o.Out) })
		if err != nil {
			return Result{}, err
		}
	}
	if err := t.o.World.Collectives().Barrier(); err != nil { // the model is written before any rank reads it
		return Result{}, err
	}
	l := t.st.Last
	r := Result{Steps: t.st.Step, RewardMean: l.RewardMean, Accuracy: l.AccuracyBefore,
		FailedToolSharePositive: l.FailedToolSharePositive, Seconds: t.st.Seconds, Stages: t.st.Stages}
	if l.EvalAccuracy != nil {
		r.EvalAccuracy = *l.EvalAccuracy
	}
	return r, nil
}

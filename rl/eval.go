package rl

import (
	"context"

	"gorstar/rollout"
)

// evalSeed fixes the held-out samples' seeds for the whole run, so the accuracy at two steps
// differs by the weights alone.
func (t *trainer) evalSeed() uint64 { return rollout.SampleSeed(t.o.Seed, -3, 0) }

// evaluate measures the held-out accuracy (average pass@1 over eval.samples per problem, strict
// grading, the settings of [eval]) of the current policy and the failed-call share of its
// correct rollouts.
func (t *trainer) evaluate(ctx context.Context, met *StepMetrics) error {
	e := t.o.Eval
	o := t.loopOptions(e.MaxTurns, e.MaxResponseTokens, e.Temperature, e.Samples, t.evalSeed())
	trajs, err := t.rollouts(ctx, t.held, o)
	if err != nil {
		return err
	}
	samples := make([]Sample, len(trajs))
	for i, tr := range trajs {
		samples[i] = sampleOf(tr)
	}
	s := Stats(samples)
	met.EvalAccuracy, met.EvalFailedToolSharePositive = &s.Accuracy, &s.FailedCallSharePositive
	return nil
}

// logEvalBeforeTraining writes the step-0 line: the held-out accuracy of the starting policy.
func (t *trainer) logEvalBeforeTraining(ctx context.Context) error {
	if t.held == nil {
		return nil
	}
	var met StepMetrics
	if err := t.evaluate(ctx, &met); err != nil {
		return err
	}
	met.Stage = t.o.RL.Stages[0].Name
	t.o.logf("rl: held-out accuracy before RL: %.3f", *met.EvalAccuracy)
	if t.met == nil { // rank 0's alone under a launcher
		return nil
	}
	return t.met.Write(met)
}

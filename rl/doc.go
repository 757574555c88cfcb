// Package rl holds the numeric core of GRPO-RoC, the reinforcement-learning stage of the rStar2-Agent
// recipe: Resample-on-Correct down-sampling of an oversampled group of rollouts (Downsample), the
// group-normalized advantages of the kept rollouts (GroupAdvantages), the clipped token-level policy
// loss with its per-token gradient weights (PolicyLoss), and Stats, the before/after-RoC metrics of a
// set of rollouts. The learning-rate schedule, shared with SFT, is internal/schedule.
//
// Everything here is pure arithmetic over small value types: a rollout enters as a Sample (its reward
// and the counts RoC needs), a batch of tokens as a TokenBatch of aligned per-token slices in the
// model's batch layout. The functions know nothing of trajectories, engines or files, so the trainer
// maps its rollouts onto these types and passes the resulting weights to model.Backward, whose
// gradient is that of −Σ w·logprob.
package rl

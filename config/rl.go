package config

import "fmt"

// RL configures GRPO-RoC: per step, PromptsPerStep prompts × Oversample·GroupSize rollouts, of
// which RoC keeps GroupSize per prompt.
type RL struct {
	PromptsPerStep int     `toml:"prompts_per_step" comment:"Prompts per RL step (rStar2: 512)."`
	GroupSize      int     `toml:"group_size" comment:"Rollouts kept per prompt, G (rStar2: 16)."`
	Oversample     int     `toml:"oversample" comment:"Rollouts sampled per prompt = oversample × G before RoC (rStar2: 2)."`
	RoC            string  `toml:"roc" comment:"Down-sampling: paper (probabilistic, ∝ 1/penalty), release (deterministic, drop equal-reward groups) or none (plain GRPO)."`
	LR             float64 `toml:"lr" comment:"AdamW learning rate, constant after warm-up (rStar2: 1e-6)."`
	WarmupSteps    int     `toml:"warmup_steps" comment:"Linear warm-up steps (rStar2: 20)."`
	Beta1          float64 `toml:"beta1" comment:"AdamW β1."`
	Beta2          float64 `toml:"beta2" comment:"AdamW β2."`
	WeightDecay    float64 `toml:"weight_decay" comment:"AdamW decoupled weight decay."`
	GradClip       float64 `toml:"grad_clip" comment:"Global gradient-norm clip."`
	ClipLow        float64 `toml:"clip_low" comment:"PPO ratio clip below: 1 - clip_low."`
	ClipHigh       float64 `toml:"clip_high" comment:"PPO ratio clip above: 1 + clip_high (clip-higher)."`
	MiniBatches    int     `toml:"mini_batches" comment:"Optimizer steps per RL step (the release uses 1, so the ratio is always 1)."`
	SaveEvery      int     `toml:"save_every" comment:"Checkpoint every N RL steps (0 = only at stage ends)."`
	// MaxLogprobDelta is the train/inference mismatch guard: the native engine and the trainer run
	// the same kernels, so their log-probabilities of the same tokens must agree.
	MaxLogprobDelta float64 `toml:"max_logprob_delta" comment:"Fail the run when the rollout and the trainer's log-probabilities of a token differ by more than this (native engine; 0 = no check)."`
	// TISCap corrects for rollouts sampled by other kernels: servers' probabilities differ from the
	// trainer's, so each token is weighed by the truncated importance ratio. Native rollouts share
	// the trainer's kernels and need no correction.
	TISCap           float64 `toml:"tis_cap" comment:"With rollout.endpoints: weigh each token by min(exp(trainer − server logprob), tis_cap), truncated importance sampling against the servers' logprobs (2 = verl's and the TIS blog's usual cap; 0 = off). Not used on the native engine, which shares the trainer's kernels."`
	MicroBatchTokens int     `toml:"micro_batch_tokens" comment:"Most tokens in one forward/backward pass (its sequences packed into one row); a mini-batch accumulates over passes."`
	HardOnlySamples  int     `toml:"hard_only_samples" comment:"Samples per problem of a hard_only stage's filter: problems solved in all of them are dropped (rStar2: 8)."`
	HardOnlyPool     int     `toml:"hard_only_pool" comment:"Problems a hard_only stage's filter examines, the first of the stage's shuffled data (0 = all; rStar2 filtered all 42K)."`
	InfraRetries     int     `toml:"infra_retries" comment:"Re-rolls of a rollout whose tool call failed for the sandbox's reasons (status internal, lost worker) before the step fails."`
	EvalEvery        int     `toml:"eval_every" comment:"Held-out accuracy (with --eval-data, settings of [eval]) every N RL steps, before the first and at the end (0 = before and at the end only). gorstar train evaluates every stage end itself and passes the held-out set only when this is set: a curve within stages."`
	Stages           []Stage `toml:"stages" comment:"Stages run in order: longer responses, harder data."`
}

// Stage is one RL stage.
type Stage struct {
	Name              string  `toml:"name" comment:"Stage name (checkpoint and metric label)."`
	Steps             int     `toml:"steps" comment:"RL steps in this stage."`
	MaxResponseTokens int     `toml:"max_response_tokens" comment:"Response budget: generated plus appended tool tokens."`
	MaxTurns          int     `toml:"max_turns" comment:"Most assistant turns."`
	LR                float64 `toml:"lr" comment:"Learning rate of this stage (0 = rl.lr)."`
	Data              string  `toml:"data" comment:"Problems for this stage; empty = [data] train."`
	HardOnly          bool    `toml:"hard_only" comment:"Keep only problems the previous policy did not solve in every sample (rStar2 stage 3)."`
	ResetOptimizer    bool    `toml:"reset_optimizer" comment:"Start the stage with fresh AdamW moments."`
}

func DefaultRL() RL {
	// The quickstart (rl/README.md): the tiny model after SFT on the synthetic task, minutes on two
	// cores. rStar2: 512 prompts × 32 rollouts, 16 kept, lr 1e-6 after 20 warm-up steps, 1
	// optimizer step per RL step.
	return RL{
		PromptsPerStep: 8, GroupSize: 4, Oversample: 2, RoC: "paper",
		LR: 5e-5, WarmupSteps: 2, Beta1: 0.9, Beta2: 0.999, WeightDecay: 0.01, GradClip: 1.0,
		ClipLow: 0.2, ClipHigh: 0.28, MiniBatches: 2,
		MaxLogprobDelta: 0.05, TISCap: 2, MicroBatchTokens: 16384, HardOnlySamples: 4, HardOnlyPool: 64, InfraRetries: 3,
		EvalEvery: 0,
		Stages: []Stage{
			{Name: "stage1", Steps: 10, MaxResponseTokens: 512, MaxTurns: 4},
			{Name: "stage2", Steps: 4, MaxResponseTokens: 640, MaxTurns: 5},
			{Name: "stage3", Steps: 3, MaxResponseTokens: 640, MaxTurns: 5, HardOnly: true, ResetOptimizer: true},
		},
	}
}

func (r RL) Validate() error {
	err := firstError(
		atLeast("rl.prompts_per_step", r.PromptsPerStep, 1),
		atLeast("rl.group_size", r.GroupSize, 2),
		atLeast("rl.oversample", r.Oversample, 1),
		oneOf("rl.roc", r.RoC, "paper", "release", "none"),
		between("rl.lr", r.LR, 0, 1),
		atLeast("rl.warmup_steps", r.WarmupSteps, 0),
		between("rl.beta1", r.Beta1, 0, 0.999999),
		between("rl.beta2", r.Beta2, 0, 0.999999),
		atLeast("rl.weight_decay", r.WeightDecay, 0),
		atLeast("rl.grad_clip", r.GradClip, 0),
		between("rl.clip_low", r.ClipLow, 0, 1),
		atLeast("rl.clip_high", r.ClipHigh, 0),
		atLeast("rl.mini_batches", r.MiniBatches, 1),
		atLeast("rl.save_every", r.SaveEvery, 0),
		atLeast("rl.max_logprob_delta", r.MaxLogprobDelta, 0),
		atLeast("rl.tis_cap", r.TISCap, 0),
		atLeast("rl.micro_batch_tokens", r.MicroBatchTokens, 64),
		atLeast("rl.hard_only_samples", r.HardOnlySamples, 1),
		atLeast("rl.hard_only_pool", r.HardOnlyPool, 0),
		atLeast("rl.infra_retries", r.InfraRetries, 0),
		atLeast("rl.eval_every", r.EvalEvery, 0),
	)
	if err != nil {
		return err
	}
	if len(r.Stages) == 0 {
		return keyErrorf("rl.stages", "at least one stage is needed")
	}
	seen := map[string]int{}
	for i, s := range r.Stages {
		p := fmt.Sprintf("rl.stages.%d", i)
		if j, dup := seen[s.Name]; dup {
			return keyErrorf(p+".name", "%q is also the name of rl.stages.%d; stage names must differ", s.Name, j)
		}
		seen[s.Name] = i
		if err := firstError(
			atLeast(p+".steps", s.Steps, 1),
			atLeast(p+".max_response_tokens", s.MaxResponseTokens, 8),
			atLeast(p+".max_turns", s.MaxTurns, 1),
			between(p+".lr", s.LR, 0, 1),
		); err != nil {
			return err
		}
	}
	return nil
}

package config

// SFT configures the non-reasoning supervised warm-up (loss on assistant tokens only).
type SFT struct {
	Epochs      int     `toml:"epochs" comment:"Passes over the SFT data."`
	LR          float64 `toml:"lr" comment:"Peak learning rate."`
	WarmupRatio float64 `toml:"warmup_ratio" comment:"Fraction of steps of linear warm-up."`
	Schedule    string  `toml:"schedule" comment:"Learning-rate schedule after warm-up: cosine or constant."`
	BatchSize   int     `toml:"batch_size" comment:"Conversations per optimizer step (when batch_tokens is 0)."`
	BatchTokens int     `toml:"batch_tokens" comment:"Tokens per optimizer step instead of conversations (0 = use batch_size)."`
	// MicroBatchTokens bounds one forward/backward pass (its conversations packed into one row); a
	// step larger than this accumulates gradients over several passes.
	MicroBatchTokens int     `toml:"micro_batch_tokens" comment:"Most tokens in one forward/backward pass (its conversations packed into one row); gradients accumulate over passes."`
	MaxSeqLen        int     `toml:"max_seq_len" comment:"Longest conversation in tokens; longer ones follow the overlong policy."`
	Overlong         string  `toml:"overlong" comment:"Conversations longer than max_seq_len: truncate or drop."`
	SaveEvery        int     `toml:"save_every" comment:"Checkpoint every N optimizer steps (0 = only at the end)."`
	KeepCheckpoints  int     `toml:"keep_checkpoints" comment:"Newest checkpoints kept in OUT/checkpoints (0 = all)."`
	EvalEvery        int     `toml:"eval_every" comment:"Held-out loss every N optimizer steps (0 = only at the end)."`
	EvalFraction     float64 `toml:"eval_fraction" comment:"Share of the input held out for the eval loss when no eval file is given (0 = none)."`
	WeightDecay      float64 `toml:"weight_decay" comment:"AdamW decoupled weight decay."`
	GradClip         float64 `toml:"grad_clip" comment:"Global gradient-norm clip (0 = off)."`
	// UntilEvalLoss makes the run's length follow its progress: a run that has not reached the loss
	// by the end of its epochs goes on (at the last step's learning rate, over further seeded
	// passes, with the held-out loss every tenth of the planned steps) until it does, or until
	// ExtraEpochs more passes are done. A run that reaches it trains exactly its epochs.
	UntilEvalLoss float64 `toml:"until_eval_loss" comment:"Above 0: a run whose held-out loss is still above this after its epochs goes on until it is not (checked every tenth of the planned steps), at most extra_epochs more passes (0 = train exactly the epochs)."`
	ExtraEpochs   int     `toml:"extra_epochs" comment:"Most passes until_eval_loss may add."`
}

func DefaultSFT() SFT {
	// rStar2: 3 epochs, lr 5e-6, 4% warm-up, cosine, batch 128 on a 14B model. The quickstart's tiny
	// model needs a far larger step size and smaller batches to learn the format in minutes. Its one
	// epoch sits near the step where the model starts copying operands into its calls (the held-out
	// loss falls from ~1 to ~0.05 within some 30 steps), and a run whose seed or rounding differs
	// reaches it later; RL then lifts a model that answers ≥ ~15% and leaves one at ~5% where it
	// is. until_eval_loss 0.02 lets every run go on until it also copies the tool's output back
	// (three seeds: SFT 35–75%, after RL 60–82.5%; at 0.05 one seed stayed at 4%).
	return SFT{Epochs: 1, LR: 3e-3, WarmupRatio: 0.04, Schedule: "constant", BatchSize: 8, MicroBatchTokens: 8192,
		MaxSeqLen: 2048, Overlong: "truncate", SaveEvery: 0, KeepCheckpoints: 2, EvalEvery: 0, EvalFraction: 0.02,
		WeightDecay: 0.01, GradClip: 1.0, UntilEvalLoss: 0.02, ExtraEpochs: 2}
}

func (s SFT) Validate() error {
	return firstError(
		atLeast("sft.epochs", s.Epochs, 1),
		between("sft.lr", s.LR, 0, 1),
		between("sft.warmup_ratio", s.WarmupRatio, 0, 1),
		oneOf("sft.schedule", s.Schedule, "cosine", "constant"),
		atLeast("sft.batch_size", s.BatchSize, 1),
		atLeast("sft.batch_tokens", s.BatchTokens, 0),
		atLeast("sft.max_seq_len", s.MaxSeqLen, 8),
		atLeast("sft.micro_batch_tokens", s.MicroBatchTokens, s.MaxSeqLen),
		oneOf("sft.overlong", s.Overlong, "truncate", "drop"),
		atLeast("sft.save_every", s.SaveEvery, 0),
		atLeast("sft.keep_checkpoints", s.KeepCheckpoints, 0),
		atLeast("sft.eval_every", s.EvalEvery, 0),
		between("sft.eval_fraction", s.EvalFraction, 0, 0.5),
		atLeast("sft.weight_decay", s.WeightDecay, 0),
		atLeast("sft.grad_clip", s.GradClip, 0),
		atLeast("sft.until_eval_loss", s.UntilEvalLoss, 0),
		atLeast("sft.extra_epochs", s.ExtraEpochs, 0),
	)
}

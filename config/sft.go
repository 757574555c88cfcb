package config

// SFT configures the non-reasoning supervised warm-up (loss on assistant tokens only).
type SFT struct {
	Epochs      int     `toml:"epochs" comment:"Passes over the SFT data."`
	LR          float64 `toml:"lr" comment:"Peak learning rate."`
	WarmupRatio float64 `toml:"warmup_ratio" comment:"Fraction of steps of linear warm-up."`
	Schedule    string  `toml:"schedule" comment:"Learning-rate schedule after warm-up: cosine or constant."`
	BatchSize   int     `toml:"batch_size" comment:"Sequences per optimizer step."`
	MaxSeqLen   int     `toml:"max_seq_len" comment:"Longer conversations are truncated to this many tokens."`
	SaveEvery   int     `toml:"save_every" comment:"Checkpoint every N optimizer steps (0 = only at the end)."`
	WeightDecay float64 `toml:"weight_decay" comment:"AdamW decoupled weight decay."`
	GradClip    float64 `toml:"grad_clip" comment:"Global gradient-norm clip (0 = off)."`
}

func DefaultSFT() SFT {
	// rStar2: 3 epochs, lr 5e-6, 4% warm-up, cosine, batch 128 on a 14B model. The quickstart's tiny
	// model needs a far larger step size and smaller batches to learn the format in minutes.
	return SFT{Epochs: 3, LR: 1e-3, WarmupRatio: 0.04, Schedule: "cosine", BatchSize: 16, MaxSeqLen: 512,
		SaveEvery: 0, WeightDecay: 0.01, GradClip: 1.0}
}

func (s SFT) Validate() error {
	return firstError(
		atLeast("sft.epochs", s.Epochs, 1),
		between("sft.lr", s.LR, 0, 1),
		between("sft.warmup_ratio", s.WarmupRatio, 0, 1),
		oneOf("sft.schedule", s.Schedule, "cosine", "constant"),
		atLeast("sft.batch_size", s.BatchSize, 1),
		atLeast("sft.max_seq_len", s.MaxSeqLen, 8),
		atLeast("sft.save_every", s.SaveEvery, 0),
		atLeast("sft.weight_decay", s.WeightDecay, 0),
		atLeast("sft.grad_clip", s.GradClip, 0),
	)
}

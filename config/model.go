package config

// Model is the policy model. (Owned by the model package's author: extend freely.)
type Model struct {
	Path   string `toml:"path" comment:"Hugging Face model directory to start from; empty = init from preset."`
	Preset string `toml:"preset" comment:"Random-init preset when path is empty: tiny or small."`
	// CopySteps and CopyLoss warm a preset-initialized model up on a copy task (model.CopyWarmup).
	CopySteps int     `toml:"copy_steps" comment:"Most steps of a copy task run right after a preset init, so the random model can copy numbers from its context as a pretrained one can (0 = none)."`
	CopyLoss  float64 `toml:"copy_loss" comment:"The copy task ends early once its loss (mean of the last 20 steps, nats per copied token) is at most this (0 = run all copy_steps)."`
	// RecomputeLayers trades compute for memory in training (model.Model.Recompute).
	RecomputeLayers int `toml:"recompute_layers" comment:"Recompute the activations of the first N layers during backward instead of keeping them (less memory, ~1 extra forward of those layers)."`
	// DType is the arithmetic of the matrix products (model.Model.SetPrecision); "auto" is
	// resolved by model.AutoPrecision once the kernels (and the device) are set up.
	DType string `toml:"dtype" comment:"Arithmetic of the linear layers: fp32, bf16 (bf16 weights rounded from fp32 master weights after each step, fp32 sums, norms, softmax, loss and optimizer), or auto: bf16 on a CPU with AVX-512 BF16, fp32 on other CPUs and on GPUs."`
	// LossChunkTokens bounds the live [tokens, vocab] logits (model.Model.LossChunkTokens).
	LossChunkTokens int `toml:"loss_chunk_tokens" comment:"Tokens per lm_head + cross-entropy chunk; 0 = about 32M logits (128 MB) per chunk."`
	// MemoryGiB is the memory budget sft and rl check a training step against (model.Config.CheckFit).
	MemoryGiB float64 `toml:"memory_gib" comment:"Memory a training step may take, in GiB: sft and rl refuse a step estimated larger, saying what would fit; 0 = nine tenths of what the machine has available, negative = no check."`
}

func DefaultModel() Model {
	return Model{Preset: "tiny", CopySteps: 2000, CopyLoss: 0.1, DType: "auto"}
}

func (m Model) Validate() error {
	if err := atLeast("model.recompute_layers", m.RecomputeLayers, 0); err != nil {
		return err
	}
	if err := atLeast("model.copy_steps", m.CopySteps, 0); err != nil {
		return err
	}
	if err := between("model.copy_loss", m.CopyLoss, 0, 100); err != nil {
		return err
	}
	if err := atLeast("model.loss_chunk_tokens", m.LossChunkTokens, 0); err != nil {
		return err
	}
	if err := oneOf("model.dtype", m.DType, "auto", "fp32", "bf16"); err != nil {
		return err
	}
	if m.Path == "" {
		return oneOf("model.preset", m.Preset, "tiny", "small")
	}
	return nil
}

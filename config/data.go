package config

import (
	"strings"
)

// Data names the pipeline's datasets and the synthetic task used when none is given.
type Data struct {
	Train string    `toml:"train" comment:"Training problems (Parquet or JSONL); empty = synthesize with [data.synth]."`
	Eval  string    `toml:"eval" comment:"Evaluation problems; empty = a held-out synthetic split."`
	Synth DataSynth `toml:"synth" comment:"Synthetic problems with exact answers: used when train/eval are empty, and the defaults of gorstar data synth."`
}

// DataSynth configures the synthetic arithmetic task. The defaults (products of two 3–4 digit
// numbers) are hard for a tiny model to answer directly and easy with the Python tool, which is
// what the quickstart needs to show RL teaching tool use. sft_recovery adds conversations that
// recover from a failed call (0.3 by default, as in the quickstart); with sft_recovery_masked the
// failed call has weight 0, so SFT teaches the correction and not the mistake.
type DataSynth struct {
	Task  string `toml:"task" comment:"Generator: arith (integer arithmetic, answers computed exactly)."`
	Train int    `toml:"train" comment:"Training problems to synthesize."`
	Eval  int    `toml:"eval" comment:"Held-out evaluation problems to synthesize."`
	SFT   int    `toml:"sft" comment:"SFT conversations demonstrating the multi-turn tool-call format."`
	// SFTRecovery shows the model errors in its context and how to recover from them.
	SFTRecovery float64 `toml:"sft_recovery" comment:"Share of SFT conversations whose first call fails (the sandbox's error) and is corrected."`
	// SFTRecoveryMasked keeps the failed call out of the SFT loss (weight 0), so the model does not
	// learn to make it; off in the quickstart, whose short SFT needs the planted call's copy of the
	// operands to learn copying at all (data.ArithItem.RecoveryConversation, sft/README.md).
	SFTRecoveryMasked bool   `toml:"sft_recovery_masked" comment:"Recovery conversations' failed call has weight 0 (out of the loss, a name never defined) instead of a misspelt print of the expression in the loss."`
	MinDigits         int    `toml:"min_digits" comment:"Fewest digits of an operand."`
	MaxDigits         int    `toml:"max_digits" comment:"Most digits of an operand."`
	Operands          int    `toml:"operands" comment:"Numbers per expression."`
	Ops               string `toml:"ops" comment:"Operators drawn uniformly, a subset of \"+-*\" (usual precedence)."`
}

func DefaultData() Data {
	return Data{Synth: DefaultDataSynth()}
}

func DefaultDataSynth() DataSynth {
	return DataSynth{Task: "arith", Train: 2000, Eval: 100, SFT: 820, SFTRecovery: 0.3, MinDigits: 2, MaxDigits: 2, Operands: 2, Ops: "*"}
}

func (d Data) Validate() error { return d.Synth.Validate() }

func (s DataSynth) Validate() error {
	if err := oneOf("data.synth.task", s.Task, "arith"); err != nil {
		return err
	}
	if err := atLeast("data.synth.train", s.Train, 1); err != nil {
		return err
	}
	if err := atLeast("data.synth.eval", s.Eval, 0); err != nil {
		return err
	}
	if err := atLeast("data.synth.sft", s.SFT, 0); err != nil {
		return err
	}
	if err := between("data.synth.sft_recovery", s.SFTRecovery, 0, 1); err != nil {
		return err
	}
	if err := between("data.synth.min_digits", s.MinDigits, 1, 40); err != nil {
		return err
	}
	if err := between("data.synth.max_digits", s.MaxDigits, s.MinDigits, 40); err != nil {
		return err
	}
	if err := between("data.synth.operands", s.Operands, 2, 8); err != nil {
		return err
	}
	if s.Ops == "" || strings.Trim(s.Ops, "+-*") != "" {
		return keyErrorf("data.synth.ops", "must be a non-empty subset of \"+-*\", got %q", s.Ops)
	}
	return nil
}

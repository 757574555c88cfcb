package cmd

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"gorstar/chat"
	"gorstar/config"
	"gorstar/data"
	"gorstar/internal/progress"
	"gorstar/internal/usererr"
	"gorstar/kernels"
	"gorstar/model"
	"gorstar/sft"
	"gorstar/tokenizer"
)

func sftCommand() *cli.Command {
	return &cli.Command{
		Name:  "sft",
		Usage: "supervised fine-tuning on tool-calling conversations (loss on the assistant's tokens only)",
		Description: "Trains --model on the conversations in --data and writes the final model to --out (a Hugging Face\n" +
			"directory) with checkpoints/ and metrics.jsonl. Settings default to the [sft] section of the config;\n" +
			"the flags below override it. --resume continues from the newest checkpoint in --out/checkpoints.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "model", Usage: "model `DIR` to start from"},
			&cli.StringFlag{Name: "data", Usage: "conversations `FILE` (.parquet or .jsonl; `gorstar data synth --sft`)"},
			&cli.StringFlag{Name: "eval-data", Usage: "held-out conversations `FILE` (default: hold out sft.eval_fraction of --data)"},
			&cli.StringFlag{Name: "out", Usage: "output `DIR`: final model, checkpoints/, metrics.jsonl"},
			&cli.BoolFlag{Name: "resume", Usage: "continue from the newest complete checkpoint in --out"},
			&cli.IntFlag{Name: "epochs", Usage: "passes over the data (sft.epochs); up to --extra-epochs more while the held-out loss is above --until-eval-loss"},
			&cli.Float64Flag{Name: "until-eval-loss", Usage: "go on past --epochs until the held-out loss is at most this, 0 = exactly --epochs (sft.until_eval_loss)"},
			&cli.IntFlag{Name: "extra-epochs", Usage: "most passes --until-eval-loss adds (sft.extra_epochs)"},
			&cli.Float64Flag{Name: "lr", Usage: "peak learning rate (sft.lr)"},
			&cli.IntFlag{Name: "batch-size", Usage: "conversations per optimizer step (sft.batch_size)"},
			&cli.IntFlag{Name: "batch-tokens", Usage: "tokens per optimizer step instead of conversations (sft.batch_tokens)"},
			&cli.IntFlag{Name: "micro-batch-tokens", Usage: "most tokens in one forward/backward pass (sft.micro_batch_tokens)"},
			&cli.IntFlag{Name: "max-seq-len", Usage: "longest conversation in tokens (sft.max_seq_len)"},
			&cli.StringFlag{Name: "overlong", Usage: "conversations over --max-seq-len: truncate or drop (sft.overlong)"},
			&cli.StringFlag{Name: "schedule", Usage: "learning rate after warm-up: cosine or constant (sft.schedule)"},
			&cli.Float64Flag{Name: "warmup-ratio", Usage: "fraction of steps of linear warm-up (sft.warmup_ratio)"},
			&cli.IntFlag{Name: "save-every", Usage: "checkpoint every N steps, 0 = only at the end (sft.save_every)"},
			&cli.IntFlag{Name: "eval-every", Usage: "held-out loss every N steps, 0 = only at the end (sft.eval_every)"},
			&cli.Float64Flag{Name: "eval-fraction", Usage: "share of --data held out when no --eval-data (sft.eval_fraction)"},
			&cli.IntFlag{Name: "keep-checkpoints", Usage: "newest checkpoints kept, 0 = all (sft.keep_checkpoints)"},
		},
		Action:      sftRun,
		Subcommands: []*cli.Command{sftBenchCommand()},
	}
}

// sftConfig is the config's [sft] section with the flags given on the command line applied.
func sftConfig(c *cli.Context, base config.SFT) (config.SFT, error) {
	s := base
	ints := map[string]*int{"epochs": &s.Epochs, "batch-size": &s.BatchSize, "batch-tokens": &s.BatchTokens,
		"micro-batch-tokens": &s.MicroBatchTokens, "max-seq-len": &s.MaxSeqLen, "save-every": &s.SaveEvery,
		"eval-every": &s.EvalEvery, "keep-checkpoints": &s.KeepCheckpoints, "extra-epochs": &s.ExtraEpochs}
	for name, p := range ints {
		if c.IsSet(name) {
			*p = c.Int(name)
		}
	}
	floats := map[string]*float64{"lr": &s.LR, "warmup-ratio": &s.WarmupRatio, "eval-fraction": &s.EvalFraction,
		"until-eval-loss": &s.UntilEvalLoss}
	for name, p := range floats {
		if c.IsSet(name) {
			*p = c.Float64(name)
		}
	}
	if c.IsSet("overlong") {
		s.Overlong = c.String("overlong")
	}
	if c.IsSet("schedule") {
		s.Schedule = c.String("schedule")
	}
	if err := s.Validate(); err != nil {
		return s, usererr.New("sft: %v", err)
	}
	return s, nil
}

func sftRun(c *cli.Context) (err error) {
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
	world, err := joinWorld(c, &o)
	if err != nil {
		return err
	}
	defer leaveWorld(world, &err)
	// Not urfave's Required: that would demand them of `sft bench` too.
	for _, name := range []string{"model", "data", "out"} {
		if c.String(name) == "" {
			return usererr.New("sft: --%s is required (see `gorstar sft --help`)", name)
		}
	}
	cfg, err := sftConfig(c, o.Config.SFT)
	if err != nil {
		return err
	}
	if err := initKernels(o); err != nil {
		return err
	}
	if err := announceWorld(c, world); err != nil {
		return err
	}
	var bar *progress.Bar
	defer func() { bar.Finish() }()
	res, err := sft.Run(c.Context, sft.Options{World: world,
		Model: c.String("model"), Data: c.String("data"), EvalData: c.String("eval-data"), Out: c.String("out"),
		Resume: c.Bool("resume"), Config: cfg, Template: o.Config.Rollout.Template, Seed: uint64(o.Seed),
		Precision: model.PrecisionOf(o.Config.Model.DType), Recompute: o.Config.Model.RecomputeLayers,
		LossChunkTokens: o.Config.Model.LossChunkTokens, MemoryGiB: o.Config.Model.MemoryGiB,
		Progress: func(p sft.Progress) {
			if bar == nil {
				bar = o.Progress(int64(p.Steps), "sft")
			}
			bar.SetTotal(int64(p.Steps))
			bar.Describe(fmt.Sprintf("sft loss %.3f, %.0f tok/s", p.Loss, p.TokensPerS))
			bar.Set(int64(p.Step))
		},
		Logf: stderrLogf(c, o),
	})
	if err != nil {
		return err
	}
	bar.Finish()
	if o.JSON {
		return printJSON(c, res)
	}
	fmt.Fprintf(c.App.Writer, "%s: %d steps, train loss %.4f, held-out loss %.4f, %d tokens at %.0f tokens/s\n",
		c.String("out"), res.Steps, res.TrainLoss, res.EvalLoss, res.Tokens, res.TokensPerS)
	return nil
}

// stderrLogf prints a stage's one-line notes on stderr unless --quiet or --json.
func stderrLogf(c *cli.Context, o Options) func(string, ...any) {
	return func(format string, args ...any) {
		if !o.Quiet {
			fmt.Fprintf(c.App.ErrWriter, format+"\n", args...)
		}
	}
}

func sftBenchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "SFT training throughput on real conversations next to `model bench --train` at the same tokens per step",
		Flags: withRenamed([]cli.Flag{
			&cli.StringFlag{Name: "model", Usage: "model `DIR` (or --preset)"},
			&cli.StringFlag{Name: "preset", Usage: "random-init preset with the byte tokenizer: tiny or small"},
			&cli.StringFlag{Name: "data", Usage: "conversations `FILE` (default: --conversations synthetic ones, `data synth --sft`)"},
			&cli.IntFlag{Name: "conversations", Value: 64, Usage: "synthetic conversations to generate without --data"},
			&cli.IntFlag{Name: "batch-tokens", Value: 4096, Usage: "tokens per SFT step; model bench runs batch-tokens/seq rows of --seq"},
			&cli.IntFlag{Name: "seq", Usage: "model bench row length (default 256 on tiny, 512 otherwise, as `model bench`)"},
			&cli.IntFlag{Name: "steps", Value: 3, Usage: "timed steps of each (after one warm-up step)"},
		}, map[string][]string{"batch-tokens": {"tokens-per-step"}}),
		Action: sftBench,
	}
}

func sftBench(c *cli.Context) error {
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
	if c.IsSet("model") == c.IsSet("preset") {
		return usererr.New("sft bench: give exactly one of --model and --preset")
	}
	if c.Int("batch-tokens") < 2 || c.Int("steps") < 1 || c.Int("conversations") < 1 {
		return usererr.New("sft bench: want --batch-tokens ≥ 2, --steps ≥ 1, --conversations ≥ 1")
	}
	if err := initKernels(o); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "gorstar-sft-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	dir, name := c.String("model"), c.String("model")
	if dir == "" {
		name, dir = c.String("preset"), filepath.Join(tmp, "model")
		if _, err := model.InitDir(dir, model.InitOptions{Preset: name, Tokenizer: "byte", Seed: uint64(o.Seed)}); err != nil {
			return usererr.New("sft bench: --preset %s: %v", name, err)
		}
	}
	ex, err := benchExamples(c, o, dir, tmp)
	if err != nil {
		return err
	}
	m, err := model.Load(dir)
	if err != nil {
		return err
	}
	defer m.Close()
	m.Recompute, m.LossChunkTokens = o.Config.Model.RecomputeLayers, o.Config.Model.LossChunkTokens
	seq := 512
	if m.Config.HiddenSize <= 128 {
		seq = 256
	}
	if c.IsSet("seq") {
		seq = c.Int("seq")
	}
	res, err := sft.BenchmarkThroughput(c.Context, m, ex, sft.BenchOptions{
		TokensPerStep: c.Int("batch-tokens"), SeqLen: seq, Steps: c.Int("steps"), Seed: uint64(o.Seed)})
	if err != nil {
		return err
	}
	if o.JSON {
		return printJSON(c, struct {
			sft.ThroughputBench
			Model   string `json:"model"`
			Threads int    `json:"threads"`
			Backend string `json:"backend"`
		}{res, name, kernels.Threads(), kernels.Backend()})
	}
	fmt.Fprintf(c.App.Writer, "%s, %d tokens/step, %d threads (%s): sft %.0f tokens/s (%.0f%% padding), model bench --train %.0f tokens/s: ratio %.2f\n",
		name, res.TokensPerStep, kernels.Threads(), kernels.Backend(), res.SFTTokensPerS, 100*res.PadFraction, res.TrainTokensPerS, res.Ratio)
	return nil
}

// benchExamples renders the bench's conversations with the model's tokenizer and the rollouts'
// template, as `gorstar sft` would.
func benchExamples(c *cli.Context, o Options, modelDir, tmp string) ([]sft.Example, error) {
	path := c.String("data")
	if path == "" {
		s := o.Config.Data.Synth
		path = filepath.Join(tmp, "conversations.parquet")
		if _, err := data.Synth(c.Context, data.SynthOptions{Task: s.Task, N: c.Int("conversations"), Out: path, SFT: true, Seed: o.Seed,
			Arith: data.ArithOptions{MinDigits: s.MinDigits, MaxDigits: s.MaxDigits, Operands: s.Operands, Ops: s.Ops}}); err != nil {
			return nil, err
		}
	}
	tok, err := tokenizer.Load(modelDir)
	if err != nil {
		return nil, err
	}
	tmpl, err := chat.LoadTemplate(o.Config.Rollout.Template)
	if err != nil {
		return nil, usererr.Wrap(err)
	}
	opts := chat.DefaultOptions()
	opts.Template = tmpl
	r, err := chat.NewRenderer(tok, opts)
	if err != nil {
		return nil, err
	}
	ds, err := sft.LoadExamples(path, r, o.Config.SFT.MaxSeqLen, o.Config.SFT.Overlong)
	if err != nil {
		return nil, err
	}
	return ds.Examples, nil
}

package cmd

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"gorstar/internal/usererr"
	"gorstar/model"
	"gorstar/rl"
)

func rlCommand() *cli.Command {
	return &cli.Command{
		Name:  "rl",
		Usage: "GRPO-RoC reinforcement learning with multi-turn Python tool rollouts, stage by stage ([rl], [[rl.stages]])",
		UsageText: "gorstar rl --model DIR --out DIR [--data FILE] [--eval-data FILE] [--endpoint URL … [--served-model NAME]] " +
			"[--resume] [--save-every N]",
		Description: "Rollouts run on the in-process engine, or with --endpoint (or rollout.endpoints) on OpenAI-compatible\n" +
			"servers that serve --model's architecture and load weights from disk (gorstar serve, SGLang). The trainer\n" +
			"pushes its weights to them before the first step and after every step: it saves them to --out/weights\n" +
			"(the servers must read that path) and has each server load them (/update_weights_from_disk), labelled\n" +
			"with the step number; a rollout from other weights fails the run.\n" +
			"The update weighs each token by the truncated importance ratio against the servers' logprobs\n" +
			"(rl.tis_cap) and logs logprob_delta_max without failing on rl.max_logprob_delta.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "model", Required: true, Usage: "the SFT model `DIR` to start from"},
			&cli.StringFlag{Name: "data", Usage: "training problems `FILE` (Parquet or JSONL; default data.train)"},
			&cli.StringFlag{Name: "eval-data", Usage: "held-out problems `FILE`: accuracy before, every rl.eval_every steps and at the end (default data.eval)"},
			&cli.StringFlag{Name: "out", Required: true, Usage: "output `DIR`: the final model, checkpoints/ and metrics.jsonl"},
			&cli.BoolFlag{Name: "resume", Usage: "continue from the newest checkpoint in --out"},
			&cli.IntFlag{Name: "save-every", Value: -1, Usage: "checkpoint every N steps (default rl.save_every; stage ends always)"},
		}, endpointFlags("to roll out on instead of the in-process engine (overrides rollout.endpoints)")...),
		Action: rlAction,
	}
}

func rlAction(c *cli.Context) (err error) {
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
	world, err := joinWorld(c, &o)
	if err != nil {
		return err
	}
	defer leaveWorld(world, &err)
	if err := initKernels(o); err != nil {
		return err
	}
	if err := announceWorld(c, world); err != nil {
		return err
	}
	cfg := *o.Config
	if n := c.Int("save-every"); n >= 0 {
		cfg.RL.SaveEvery = n
	}
	if eps := c.StringSlice("endpoint"); len(eps) > 0 {
		cfg.Rollout.Endpoints = eps
	}
	if c.String("served-model") != "" && len(cfg.Rollout.Endpoints) == 0 {
		return usererr.New("rl: --served-model needs --endpoint URL (or rollout.endpoints)")
	}
	opts := rl.Options{Model: c.String("model"), Data: orDefault(c.String("data"), cfg.Data.Train),
		EvalData: orDefault(c.String("eval-data"), cfg.Data.Eval), Out: c.String("out"), Resume: c.Bool("resume"),
		RL: cfg.RL, Rollout: cfg.Rollout, Reward: cfg.Reward, Exec: cfg.Exec, Eval: cfg.Eval, Seed: uint64(o.Seed),
		ServedModel: c.String("served-model"), Precision: model.PrecisionOf(cfg.Model.DType), World: world,
		Recompute: cfg.Model.RecomputeLayers, LossChunkTokens: cfg.Model.LossChunkTokens, MemoryGiB: cfg.Model.MemoryGiB}
	total := 0
	for _, s := range cfg.RL.Stages {
		total += s.Steps
	}
	bar := o.Progress(int64(total), "rl")
	opts.Progress = func(p rl.Progress) {
		m := p.Metrics
		desc := fmt.Sprintf("rl %s reward %.3f failed+ %.3f", p.Stage, m.RewardMean, m.FailedToolSharePositive)
		if m.EvalAccuracy != nil {
			desc += fmt.Sprintf(" held-out %.3f", *m.EvalAccuracy)
		}
		bar.Describe(desc)
		bar.Set(int64(p.Step))
	}
	if !o.Quiet {
		opts.Logf = func(format string, args ...any) { fmt.Fprintf(c.App.ErrWriter, format+"\n", args...) }
	}
	res, err := rl.Run(c.Context, opts)
	if err != nil {
		return err
	}
	bar.Finish()
	if o.JSON {
		return printJSON(c, res)
	}
	fmt.Fprintf(c.App.Writer, "rl: %d steps, reward %.3f, accuracy %.3f, failed calls in positives %.3f, %.0f s → %s\n",
		res.Steps, res.RewardMean, res.Accuracy, res.FailedToolSharePositive, res.Seconds, opts.Out)
	return nil
}

func orDefault(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

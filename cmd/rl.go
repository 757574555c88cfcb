package cmd

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"gorstar/rl"
)

func rlCommand() *cli.Command {
	return &cli.Command{
		Name:  "rl",
		Usage: "GRPO-RoC reinforcement learning with multi-turn Python tool rollouts, stage by stage ([rl], [[rl.stages]])",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "model", Required: true, Usage: "the SFT model `DIR` to start from"},
			&cli.StringFlag{Name: "data", Usage: "training problems `FILE` (Parquet or JSONL; default data.train)"},
			&cli.StringFlag{Name: "eval-data", Usage: "held-out problems `FILE`: accuracy before, every rl.eval_every steps and at the end (default data.eval)"},
			&cli.StringFlag{Name: "out", Required: true, Usage: "output `DIR`: the final model, checkpoints/ and metrics.jsonl"},
			&cli.BoolFlag{Name: "resume", Usage: "continue from the newest checkpoint in --out"},
			&cli.IntFlag{Name: "save-every", Value: -1, Usage: "checkpoint every N steps (default rl.save_every; stage ends always)"},
		},
		Action: rlAction,
	}
}

func rlAction(c *cli.Context) error {
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
	if err := initKernels(o); err != nil {
		return err
	}
	cfg := *o.Config
	if n := c.Int("save-every"); n >= 0 {
		cfg.RL.SaveEvery = n
	}
	opts := rl.Options{Model: c.String("model"), Data: orDefault(c.String("data"), cfg.Data.Train),
		EvalData: orDefault(c.String("eval-data"), cfg.Data.Eval), Out: c.String("out"), Resume: c.Bool("resume"),
		RL: cfg.RL, Rollout: cfg.Rollout, Reward: cfg.Reward, Exec: cfg.Exec, Eval: cfg.Eval, Seed: uint64(o.Seed)}
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

package train

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"gorstar/internal/progress"
	"gorstar/model"
	"gorstar/rl"
	"gorstar/rollout"
	"gorstar/sft"
)

// The training stages: init (the random-init preset), SFT and the RL stages. Each resumes from
// the newest complete checkpoint in its output directory when there is one.

func (p *pipeline) runInit(context.Context) error {
	if _, err := os.Stat(filepath.Join(p.lay.Init(), "config.json")); err == nil {
		return nil // written whole (InitDir is atomic) before a kill
	}
	steps, loss := p.cfg.Model.CopySteps, 0.0
	var bar *progress.Bar // none without a warm-up
	if steps > 0 {
		bar = progress.New(int64(steps), "copy warm-up", p.progressOptions())
	}
	_, err := model.InitDir(p.lay.Init(), model.InitOptions{Preset: p.cfg.Model.Preset, Tokenizer: "byte",
		Seed: uint64(p.cfg.Run.Seed), Copy: model.CopyWarmupOptions{Steps: steps, Target: p.cfg.Model.CopyLoss,
			Progress: func(s int, l float64) {
				steps, loss = s, l
				bar.Set(int64(s))
			}}})
	bar.Finish()
	if err == nil && steps > 0 {
		fmt.Fprintf(p.log, "init: %s preset, copy warm-up %d steps, loss %.3f nats per copied token (guessing a digit: 2.30)\n",
			p.cfg.Model.Preset, steps, loss)
	}
	return err
}

func (p *pipeline) initCommands() []StageCommand {
	return []StageCommand{{Stage: stageInit, Args: append(p.gorstar(), "model", "init", "--preset", p.cfg.Model.Preset,
		"--copy-steps", strconv.Itoa(p.cfg.Model.CopySteps), "--copy-loss", strconv.FormatFloat(p.cfg.Model.CopyLoss, 'g', -1, 64),
		"--out", p.lay.Init())}}
}

// hasCheckpoint reports whether out/checkpoints holds a complete checkpoint to resume from.
func hasCheckpoint(out string) bool {
	path, err := model.LatestCheckpoint(filepath.Join(out, "checkpoints"))
	return err == nil && path != ""
}

func (p *pipeline) runSFT(ctx context.Context, base string) error {
	out := p.lay.SFT()
	resume := hasCheckpoint(out)
	if resume {
		fmt.Fprintf(p.log, "sft: resuming from %s\n", filepath.Join(out, "checkpoints"))
	}
	var bar *progress.Bar
	defer func() { bar.Finish() }()
	res, err := sft.Run(ctx, sft.Options{Model: base, Data: p.lay.SFTData(), Out: out, Resume: resume,
		Config: p.cfg.SFT, Template: p.cfg.Rollout.Template, Seed: uint64(p.cfg.Run.Seed), World: p.worldOf(),
		Precision: model.PrecisionOf(p.cfg.Model.DType),
		Progress: func(pr sft.Progress) {
			if bar == nil {
				bar = progress.New(int64(pr.Steps), "sft", p.progressOptions())
			}
			bar.SetTotal(int64(pr.Steps))
			bar.Describe(fmt.Sprintf("sft loss %.3f, %.0f tok/s", pr.Loss, pr.TokensPerS))
			bar.Set(int64(pr.Step))
		},
		Logf: p.logf})
	if err != nil {
		return err
	}
	bar.Finish()
	fmt.Fprintf(p.log, "sft: %d steps, train loss %.4f, held-out loss %.4f\n", res.Steps, res.TrainLoss, res.EvalLoss)
	return nil
}

func (p *pipeline) sftCommands(base string) []StageCommand {
	return []StageCommand{{Stage: stageSFT, Args: append(p.gorstar(), "sft", "--model", base, "--data", p.lay.SFTData(),
		"--out", p.lay.SFT())}}
}

// rlEvalData is the held-out set rl.Run measures along the run: only when rl.eval_every asks for
// a curve, since the pipeline evaluates the SFT model and every stage's end itself.
func (p *pipeline) rlEvalData() string {
	if p.cfg.RL.EvalEvery > 0 {
		return p.lay.EvalData()
	}
	return ""
}

func (p *pipeline) runRL(ctx context.Context) error {
	// A stage that ended before an interruption is evaluated first, as the hook would have.
	if err := p.evalFinishedStages(ctx); err != nil {
		return err
	}
	out := p.lay.RL()
	resume := hasCheckpoint(out)
	if resume {
		fmt.Fprintf(p.log, "rl: resuming from %s\n", filepath.Join(out, "checkpoints"))
	}
	c := p.cfg
	total := 0
	for _, s := range c.RL.Stages {
		total += s.Steps
	}
	bar := progress.New(int64(total), "rl", p.progressOptions())
	defer bar.Finish()
	o := rl.Options{Model: p.lay.SFT(), Data: p.lay.TrainData(), EvalData: p.rlEvalData(), Out: out, Resume: resume,
		RL: c.RL, Rollout: c.Rollout, Reward: c.Reward, Exec: c.Exec, Eval: c.Eval, Seed: uint64(c.Run.Seed),
		Precision: model.PrecisionOf(c.Model.DType),
		Logf:      p.logf, World: p.worldOf(),
		Progress: func(pr rl.Progress) {
			m := pr.Metrics
			bar.Describe(fmt.Sprintf("rl %s reward %.3f failed+ %.3f", pr.Stage, m.RewardMean, m.FailedToolSharePositive))
			bar.Set(int64(pr.Step))
			if p.o.afterRLStep != nil {
				p.o.afterRLStep(pr.Step)
			}
		},
		StageEnd: func(ctx context.Context, i int, name, dir string) error { return p.evalStageEnd(ctx, i) },
		StepTrajectories: func(stage string, step int, trajs []rollout.Trajectory) error {
			return writeRLSamples(p.lay, stage, step, trajs)
		},
	}
	res, err := rl.Run(ctx, o)
	if err != nil {
		return err
	}
	bar.Finish()
	fmt.Fprintf(p.log, "rl: %d steps, reward %.3f, failed calls in positives %.3f\n", res.Steps, res.RewardMean,
		res.FailedToolSharePositive)
	return p.evalFinishedStages(ctx)
}

func (p *pipeline) rlCommands() []StageCommand {
	args := append(p.gorstar(), "rl", "--model", p.lay.SFT(), "--data", p.lay.TrainData(), "--out", p.lay.RL())
	if e := p.rlEvalData(); e != "" {
		args = append(args, "--eval-data", e)
	} else if p.cfg.Data.Eval != "" {
		args = append(args, "--set", "data.eval=") // gorstar rl would default --eval-data to it
	}
	return []StageCommand{{Stage: stageRL, Args: args}}
}

// evalStageEnd runs the evaluation after RL stage i when the run selected it and it is not done.
func (p *pipeline) evalStageEnd(ctx context.Context, i int) error {
	s := p.stageByName(evalStage(p.cfg.RL.Stages[i].Name))
	if !p.selected[s.name] || p.done(s.name) {
		return nil
	}
	return p.runStage(ctx, s)
}

// evalFinishedStages evaluates every RL stage whose end checkpoint exists and whose evaluation
// is selected and not done: those that ended before an interruption.
func (p *pipeline) evalFinishedStages(ctx context.Context) error {
	for i := range p.cfg.RL.Stages {
		if _, err := os.Stat(filepath.Join(p.stageCheckpoint(i), "config.json")); err != nil {
			continue
		}
		if err := p.evalStageEnd(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

func (p *pipeline) progressOptions() progress.Options {
	return progress.Options{Out: p.log, Quiet: p.o.Quiet}
}

func (p *pipeline) logf(format string, args ...any) {
	fmt.Fprintf(p.log, format+"\n", args...)
}

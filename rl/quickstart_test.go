package rl_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gorstar/chat"
	"gorstar/config"
	"gorstar/data"
	"gorstar/engine"
	"gorstar/exec"
	"gorstar/model"
	"gorstar/reward"
	"gorstar/rl"
	"gorstar/rollout"
	"gorstar/sft"
)

// TestQuickstart runs the learning experiment of the README with the quickstart defaults
// (config.Default()), one phase per call, in the directory GORSTAR_QUICKSTART names:
//
//	GORSTAR_QUICKSTART=DIR GORSTAR_QUICKSTART_PHASE=data|sft|eval|rl [GORSTAR_QUICKSTART_ROC=paper|none] \
//	    go test ./rl -run TestQuickstart -v -timeout 60m
//
// data: train, held-out and SFT tables (seeds 1, 2, 3; no held-out expression occurs in the
// others); sft: the tiny preset (seed 1) fine-tuned with [sft] into DIR/sft, a checkpoint every
// sft.save_every steps; eval: held-out accuracy of every SFT checkpoint (GORSTAR_QUICKSTART_MODEL
// for one model); rl: `gorstar rl` from DIR/sft into DIR/rl-ROC. GORSTAR_QUICKSTART_SET holds
// config overrides (`key.path=value`, space-separated) for trying other settings.
func TestQuickstart(t *testing.T) {
	dir := os.Getenv("GORSTAR_QUICKSTART")
	if dir == "" {
		t.Skip("set GORSTAR_QUICKSTART=DIR to run the learning experiment")
	}
	cfg := config.Default()
	for _, kv := range strings.Fields(os.Getenv("GORSTAR_QUICKSTART_SET")) { // key.path=value ...
		if err := cfg.Set(kv); err != nil {
			t.Fatal(err)
		}
	}
	switch phase := os.Getenv("GORSTAR_QUICKSTART_PHASE"); phase {
	case "data":
		quickstartData(t, dir, cfg.Data.Synth)
	case "sft":
		quickstartSFT(t, dir, cfg)
	case "eval":
		quickstartEval(t, dir, cfg)
	case "rl":
		quickstartRL(t, dir, cfg, os.Getenv("GORSTAR_QUICKSTART_ROC"))
	default:
		t.Fatalf("GORSTAR_QUICKSTART_PHASE %q: want data, sft, eval or rl", phase)
	}
}

func quickstartData(t *testing.T, dir string, s config.DataSynth) {
	arith := data.ArithOptions{MinDigits: s.MinDigits, MaxDigits: s.MaxDigits, Operands: s.Operands, Ops: s.Ops}
	for _, f := range []struct {
		name string
		n    int
		seed int64
		sft  bool
	}{{"train.jsonl", s.Train, 1, false}, {"sft.jsonl", s.SFT, 3, true}} {
		if _, err := data.Synth(context.Background(), data.SynthOptions{Task: s.Task, N: f.n, Out: filepath.Join(dir, f.name),
			SFT: f.sft, RecoveryShare: s.SFTRecovery, Seed: f.seed, Arith: arith}); err != nil {
			t.Fatal(err)
		}
	}
	// Held out: problems of seed 2 that neither the RL nor the SFT data asks.
	seen := map[string]bool{}
	train, err := data.ReadAllProblems(filepath.Join(dir, "train.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range train {
		seen[p.Problem] = true
	}
	convs, err := data.ReadAllConversations(filepath.Join(dir, "sft.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range convs {
		seen[c.Messages[0].Content] = true
	}
	gen, err := data.NewArith(arith, 2)
	if err != nil {
		t.Fatal(err)
	}
	w, err := data.CreateProblems(filepath.Join(dir, "eval.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < s.Eval; {
		p := gen.Next().Problem(arith)
		if !seen[p.Problem] {
			seen[p.Problem] = true
			w.Write(p)
			n++
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func quickstartSFT(t *testing.T, dir string, cfg config.Config) {
	base, out := filepath.Join(dir, "tiny"), filepath.Join(dir, "sft")
	resume := os.Getenv("GORSTAR_QUICKSTART_RESUME") != ""
	if from := os.Getenv("GORSTAR_QUICKSTART_FROM"); from != "" { // continue from an earlier SFT
		base, out = from, os.Getenv("GORSTAR_QUICKSTART_OUT")
	} else if _, err := model.InitDir(base, model.InitOptions{Preset: "tiny", Seed: 1}); err != nil && !resume {
		t.Fatal(err)
	}
	began := time.Now()
	res, err := sft.Run(context.Background(), sft.Options{Model: base, Data: filepath.Join(dir, "sft.jsonl"),
		Out: out, Resume: resume, Config: cfg.SFT, Template: cfg.Rollout.Template, Seed: 1,
		Progress: func(p sft.Progress) {
			t.Logf("sft step %d/%d loss %.4f %.0f tok/s", p.Step, p.Steps, p.Loss, p.TokensPerS)
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sft: %+v in %.0f s", res, time.Since(began).Seconds())
}

// quickstartEval measures held-out accuracy (strict, average pass@1 with [eval]) and the share
// of well-formed answers of every SFT checkpoint, to choose how long SFT runs.
func quickstartEval(t *testing.T, dir string, cfg config.Config) {
	models := []string{os.Getenv("GORSTAR_QUICKSTART_MODEL")}
	if models[0] == "" {
		ckpts, _ := filepath.Glob(filepath.Join(dir, "sft", "checkpoints", "step-*"))
		models = append(ckpts, filepath.Join(dir, "sft"))
	}
	held, err := data.ReadAllProblems(filepath.Join(dir, "eval.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Eval.Limit > 0 {
		held = held[:min(cfg.Eval.Limit, len(held))]
	}
	pool, err := exec.NewPool(context.Background(), cfg.Exec)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	tmpl, err := chat.LoadTemplate(cfg.Rollout.Template)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range models {
		p, err := engine.LoadPolicy(m, engine.PolicyOptions{Template: tmpl, Primer: "<reason>", Engine: engine.Options{MaxSeqs: 128}})
		if err != nil {
			t.Fatal(err)
		}
		o := rollout.DefaultOptions()
		o.Chat.Template = tmpl
		o.MaxTurns, o.MaxResponseTokens, o.Temperature, o.Samples = cfg.Eval.MaxTurns, cfg.Eval.MaxTokens, cfg.Eval.Temperature, cfg.Eval.Samples
		o.Concurrency, o.ToolTextChars, o.Reward = 128, cfg.Rollout.ToolTextChars, reward.Options{Mode: reward.Strict}
		loop, err := rollout.New(&rollout.EngineBackend{Engine: p.Engine}, pool, p.Tokenizer, o)
		if err != nil {
			t.Fatal(err)
		}
		trajs, sum, err := loop.Run(context.Background(), held)
		p.Close()
		if err != nil {
			t.Fatal(err)
		}
		samples := make([]rl.Sample, len(trajs))
		answered, toolRight := 0, 0
		for i, tr := range trajs {
			for _, turn := range tr.Turns {
				if turn.ToolText == held[tr.ProblemIndex].Answer {
					toolRight++ // the code copied the expression right: the tool printed the answer
					break
				}
			}
			samples[i] = rl.Sample{Reward: tr.Reward, ToolCalls: tr.ToolCalls, FailedCalls: tr.FailedToolCalls,
				AnswerTags: tr.AnswerTags, Turns: tr.NumTurns, Truncated: tr.Finish == rollout.FinishTruncated, ResponseTokens: len(tr.ResponseIDs)}
			if tr.Finish == rollout.FinishAnswer && strings.Contains(tr.Text, "\\boxed{") {
				answered++
			}
		}
		if os.Getenv("GORSTAR_QUICKSTART_SHOW") != "" {
			for _, tr := range trajs[:4] {
				fmt.Printf("--- %s (%s, reward %g)\n%s\n", tr.ProblemID, tr.Finish, tr.Reward, tr.Text)
			}
		}
		s := rl.Stats(samples)
		fmt.Printf("%s\taccuracy %.3f\ttool printed the answer %.3f\twell-formed %.3f\tfailed+ %.3f\tcalls %.2f\ttrunc %.3f\t%.0f s\n", filepath.Base(m), s.Accuracy, float64(toolRight)/float64(len(trajs)),
			float64(answered)/float64(len(trajs)), s.FailedCallSharePositive, s.CallsPerRollout, s.TruncationRate, sum.Seconds)
	}
}

func quickstartRL(t *testing.T, dir string, cfg config.Config, roc string) {
	if roc != "" {
		cfg.RL.RoC = roc
	}
	out := filepath.Join(dir, "rl-"+cfg.RL.RoC)
	began := time.Now()
	o := rl.Options{Model: filepath.Join(dir, "sft"), Data: filepath.Join(dir, "train.jsonl"),
		EvalData: filepath.Join(dir, "eval.jsonl"), Out: out, RL: cfg.RL, Rollout: cfg.Rollout, Reward: cfg.Reward,
		Exec: cfg.Exec, Eval: cfg.Eval, Seed: uint64(cfg.Run.Seed), Logf: t.Logf}
	o.Progress = func(p rl.Progress) {
		m := p.Metrics
		ev := ""
		if m.EvalAccuracy != nil {
			ev = fmt.Sprintf(" held-out %.3f (failed+ %.3f)", *m.EvalAccuracy, *m.EvalFailedToolSharePositive)
		}
		fmt.Printf("%6.0fs step %d reward %.3f failed+ %.3f kept-failed+ %.3f len+ %.0f rollout %.1fs update %.1fs delta %.2g%s\n",
			time.Since(began).Seconds(), p.Step, m.RewardMean, m.FailedToolSharePositive, m.KeptFailedSharePositive,
			m.MeanTokensPositive, m.RolloutSeconds, m.UpdateSeconds, m.LogprobDeltaMax, ev)
	}
	res, err := rl.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rl %s: %+v in %.0f s", cfg.RL.RoC, res, time.Since(began).Seconds())
}

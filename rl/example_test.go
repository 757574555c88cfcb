package rl_test

import (
	"context"
	"fmt"
	"log"

	"gorstar/config"
	"gorstar/rl"
)

// A group of four rollouts of one problem, two correct: the advantages are the rewards'
// deviations from the group's mean over its sample standard deviation.
func ExampleGroupAdvantages() {
	fmt.Printf("%.3f\n", rl.GroupAdvantages([]float64{1, 0, 0, 1}))
	// Equal rewards teach nothing: every advantage is 0.
	fmt.Println(rl.GroupAdvantages([]float64{1, 1, 1}))
	// Output:
	// [0.866 -0.866 -0.866 0.866]
	// [0 0 0]
}

// An RL run from an SFT checkpoint: the stages of cfg.RL in order, held-out accuracy along the
// way, checkpoints and metrics.jsonl under Out, the final model in Out. The kernels must be set up
// first (as `gorstar rl` does).
func ExampleRun() {
	cfg := config.Default()
	res, err := rl.Run(context.Background(), rl.Options{
		Model: "runs/x/sft", Data: "train.jsonl", EvalData: "eval.jsonl", Out: "runs/x/rl",
		RL: cfg.RL, Rollout: cfg.Rollout, Reward: cfg.Reward, Exec: cfg.Exec, Eval: cfg.Eval, Seed: 1,
		Progress: func(p rl.Progress) { log.Printf("step %d/%d reward %.2f", p.Step, p.Steps, p.Metrics.RewardMean) },
		Logf:     log.Printf,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Steps, res.EvalAccuracy)
}

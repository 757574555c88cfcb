package rl_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"gorstar/chat"
	"gorstar/config"
	"gorstar/data"
	"gorstar/internal/testenv"
	"gorstar/kernels"
	"gorstar/model"
	"gorstar/pytool"
	"gorstar/rl"
	"gorstar/sft"
)

func TestMain(m *testing.M) {
	threads := 2
	if n, err := strconv.Atoi(os.Getenv("GORSTAR_THREADS")); err == nil {
		threads = n // GORSTAR_THREADS: 1 on a shared machine
	}
	if err := kernels.Init(0, threads); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	if os.Getenv(hookTargetEnv) != "" && os.Getenv("GORSTAR_WEIGHTS_DIR") != "" {
		os.Exit(runHook())
	}
	os.Exit(m.Run())
}

// testTemplate is plain ChatML without a system turn, so the fixture's sequences are a few dozen
// tokens and a test run takes seconds.
const testTemplate = "chatml"

// sumProblem is "Compute a + b." with its answer.
func sumProblem(i, a, b int) data.Problem {
	return data.Problem{ID: fmt.Sprintf("sum-%d", i), Problem: fmt.Sprintf("Compute %d + %d.", a, b),
		Answer: fmt.Sprint(a + b), Source: "test", Meta: "{}"}
}

// policyDir is a `tiny` model fine-tuned for a few seconds to answer "Compute a + b." with
// "<reason>…</reason>\n<answer>\boxed{a+b}</answer>": right often enough at temperature 1 that
// groups have both rewards, so RL steps really update the weights.
func policyDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	base := filepath.Join(dir, "tiny")
	if _, err := model.InitDir(base, model.InitOptions{Preset: "tiny", Seed: 3}); err != nil {
		t.Fatal(err)
	}
	convs := filepath.Join(dir, "sft.jsonl")
	w, err := data.CreateConversations(convs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 48 {
		a, b := i%7+1, i/7+1
		w.Write(chat.Conversation{ID: fmt.Sprint(i), Messages: []chat.Message{
			{Role: chat.RoleUser, Content: fmt.Sprintf("Compute %d + %d.", a, b)},
			{Role: chat.RoleAssistant, Content: fmt.Sprintf("<reason>add</reason>\n<answer>\\boxed{%d}</answer>", a+b)},
		}})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	c := config.DefaultSFT()
	c.Epochs, c.BatchSize, c.LR, c.WarmupRatio, c.MaxSeqLen, c.MicroBatchTokens, c.EvalFraction = 4, 4, 3e-3, 0.1, 256, 2048, 0
	out := filepath.Join(dir, "sft")
	if _, err := sft.Run(context.Background(), sft.Options{Model: base, Data: convs, Out: out, Config: c, Template: testTemplate, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	return out
}

// problemsFile writes n sum problems.
func problemsFile(t testing.TB, n, offset int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "problems.jsonl")
	w, err := data.CreateProblems(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		j := i + offset
		w.Write(sumProblem(j, j%7+1, j/7%7+1))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// testOptions is a quick run: 2 prompts × (2 × 4) rollouts of at most 24 tokens, two stages.
func testOptions(modelDir, dataPath, out string) rl.Options {
	c := config.DefaultRL()
	c.PromptsPerStep, c.GroupSize, c.Oversample, c.LR, c.WarmupSteps, c.MiniBatches = 2, 4, 2, 1e-3, 1, 2
	c.MicroBatchTokens = 256
	c.Stages = []config.Stage{
		{Name: "one", Steps: 3, MaxResponseTokens: 24, MaxTurns: 2},
		{Name: "two", Steps: 2, MaxResponseTokens: 32, MaxTurns: 2, ResetOptimizer: true, LR: 5e-4},
	}
	r := config.DefaultRollout()
	r.Template = testTemplate
	e := config.DefaultExec()
	e.Workers, e.Modules, e.Timeout = 2, []string{"math"}, config.D(5*time.Second)
	ev := config.DefaultEval()
	ev.Samples, ev.MaxResponseTokens, ev.MaxTurns = 2, 24, 2
	return rl.Options{Model: modelDir, Data: dataPath, Out: out, RL: c, Rollout: r, Reward: config.DefaultReward(),
		Exec: e, Eval: ev, Seed: 7}
}

// skipWithoutSandbox skips a test whose run could not start the Python sandbox here.
func skipWithoutSandbox(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, pytool.ErrNoSandbox) {
		testenv.Sandbox(t, err)
	}
}

package sft

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"gorstar/config"
	"gorstar/data"
	"gorstar/kernels"
	"gorstar/model"
)

func TestMain(m *testing.M) {
	if os.Getenv(rankEnv) != "" {
		os.Exit(runRank()) // a rank of a data-parallel test (parallel_test.go): 1 thread
	}
	if err := kernels.Init(0, 2); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	os.Exit(m.Run())
}

// tinyModelDir writes a random-init `tiny` model with the byte-level chat tokenizer.
func tinyModelDir(t testing.TB, seed uint64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny")
	if _, err := model.InitDir(dir, model.InitOptions{Preset: "tiny", Seed: seed}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// synthConversations writes n `data synth --sft` conversations without their system message (the
// template draws the system turn, as data synth will once it stops writing one) to a table.
func synthConversations(t testing.TB, n int, seed int64, name string) string {
	t.Helper()
	dir := t.TempDir()
	raw := filepath.Join(dir, "raw.jsonl")
	if _, err := data.Synth(context.Background(), data.SynthOptions{Task: "arith", N: n, Out: raw, SFT: true,
		Seed: seed, Arith: data.DefaultArith()}); err != nil {
		t.Fatal(err)
	}
	convs, err := data.ReadAllConversations(raw)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	w, err := data.CreateConversations(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range convs {
		if c.Messages[0].Role == "system" {
			c.Messages = c.Messages[1:]
		}
		if err := w.Write(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// testConfig is a quick SFT setup for the tiny model: plain ChatML (short sequences) and a small
// batch.
func testConfig() config.SFT {
	c := config.DefaultSFT()
	c.Epochs, c.BatchSize, c.LR, c.WarmupRatio = 2, 4, 3e-3, 0.1
	c.MaxSeqLen, c.MicroBatchTokens = 512, 1024
	c.EvalFraction, c.EvalEvery, c.SaveEvery, c.KeepCheckpoints = 0.1, 3, 2, 0
	c.UntilEvalLoss = 0 // a run of exactly its epochs (TestUntilEvalLoss sets it)
	return c
}

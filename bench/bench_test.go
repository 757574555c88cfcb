package bench

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"gorstar/internal/stats"
	"gorstar/internal/testenv"
	"gorstar/model"
)

func tinyModel(t *testing.T) *model.Model {
	t.Helper()
	cfg, err := model.Preset("tiny", 0)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.New(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// Train's figures hang together: the step's rate over SGEMM's is the fraction, one step's paired
// fraction is the fraction, and with repeats the result is their median.
func TestTrain(t *testing.T) {
	testenv.Short(t, "a bench run as a test")
	m := tinyModel(t)
	res, err := Train(context.Background(), TrainOptions{Model: m, Name: "tiny", Batch: 2, Seq: 16, Steps: 1, Repeat: 3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != "train" || res.Batch != 2 || res.Seq != 16 || res.Steps != 1 || res.TokensPerS <= 0 || len(res.Repeats) != 3 {
		t.Fatalf("result %+v", res)
	}
	var fractions []float64
	for _, r := range res.Repeats {
		if r.SGEMM != (r.Before+r.After)/2 || r.Fraction != r.StepGFLOPS/r.SGEMM || math.Abs(r.Paired-r.Fraction) > 1e-9*r.Fraction {
			t.Errorf("repeat %+v", r)
		}
		fractions = append(fractions, r.Fraction)
	}
	if res.Fraction != stats.Median(fractions) {
		t.Errorf("fraction %v, want the median of %v", res.Fraction, fractions)
	}
	if want := m.Config.TrainFLOPsPerToken(16) / 1e9; res.GFLOPPerToken != want {
		t.Errorf("GFLOP a token %v, want %v", res.GFLOPPerToken, want)
	}
	if res.TorchTokensPerS != 0 || res.Ratio != 0 || res.TorchSkipped != "" {
		t.Errorf("PyTorch side without Torch: %+v", res)
	}
}

// Generate gives a row a batch, in order, each as it is measured, and the row's rate is the
// median of its runs.
func TestGenerate(t *testing.T) {
	testenv.Short(t, "a bench run as a test")
	var seen []GenerateRow
	res, err := Generate(context.Background(), GenerateOptions{Models: []string{"tiny"}, Batches: []int{1, 3},
		PromptLen: 4, NewTokens: 3, Repeat: 2, Seed: 1, Precision: model.FP32, Row: func(r GenerateRow) { seen = append(seen, r) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2 || len(seen) != 2 || res.Threads < 1 || res.Backend == "" {
		t.Fatalf("result %+v, rows seen %d", res, len(seen))
	}
	for i, r := range res.Rows {
		if r.Model != "tiny" || r.Batch != []int{1, 3}[i] || len(r.Runs) != 2 || r.TokensPerS != stats.Median(r.Runs) ||
			r.Seconds != float64(r.Batch*3)/r.TokensPerS || r.TorchTPS != nil || r.TorchRuns != nil {
			t.Errorf("row %d: %+v", i, r)
		}
		if seen[i].Batch != r.Batch {
			t.Errorf("row %d seen as batch %d", i, seen[i].Batch)
		}
	}
}

// Check refuses a model before anything is measured.
func TestGenerateCheck(t *testing.T) {
	_, err := Generate(context.Background(), GenerateOptions{Models: []string{"tiny"}, Batches: []int{1}, PromptLen: 4, NewTokens: 3,
		Check: func(cfg model.Config, name string) error { return errTooBig }})
	if err != errTooBig {
		t.Fatalf("got %v, want the check's error", err)
	}
}

var errTooBig = errors.New("too big")

// An interpreter without torch skips the PyTorch side and says why, once.
func TestTorchMissing(t *testing.T) {
	var warned []string
	torch := &Torch{Python: filepath.Join(t.TempDir(), "no-python"), Script: DefaultTorchScript}
	res, err := Generate(context.Background(), GenerateOptions{Models: []string{"tiny"}, Batches: []int{1}, PromptLen: 2, NewTokens: 1,
		Torch: torch, Warn: func(s string) { warned = append(warned, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(warned) != 1 || res.TorchSkipped != warned[0] || !strings.Contains(warned[0], "cannot import torch") || res.Rows[0].TorchTPS != nil {
		t.Errorf("warned %q, result %+v", warned, res)
	}
}

// The PyTorch reference runs on the same model and shapes and reports a rate.
func TestGenerateBesideTorch(t *testing.T) {
	testenv.Short(t, "a bench run as a test, beside PyTorch")
	python := testenv.Torch(t)
	res, err := Generate(context.Background(), GenerateOptions{Models: []string{"tiny"}, Batches: []int{2}, PromptLen: 4, NewTokens: 3,
		Torch: &Torch{Python: python, Script: "qwen3_torch.py"}})
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Rows[0]; r.TorchTPS == nil || *r.TorchTPS <= 0 || *r.Ratio != r.TokensPerS / *r.TorchTPS {
		t.Errorf("row %+v", r)
	}
}

func TestTokensPerS(t *testing.T) {
	if v, err := tokensPerS([]byte("warming up\n{\"tokens_per_s\": 12.5}\n"), "x"); err != nil || v != 12.5 {
		t.Errorf("last line: %v, %v", v, err)
	}
	for _, out := range []string{"", "{\"tokens_per_s\": 0}", "{\"tokens_per_s\": 3}\nbye"} {
		if _, err := tokensPerS([]byte(out), "x"); err == nil {
			t.Errorf("%q: no error", out)
		}
	}
}

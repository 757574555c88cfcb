package bench

import (
	"context"
	"fmt"
	"strconv"

	"gorstar/engine"
	"gorstar/internal/progress"
	"gorstar/internal/stats"
	"gorstar/kernels"
	"gorstar/model"
)

// DefaultBatches are the batches Generate measures when given none: a rollout's batch shrinks and
// grows through them.
var DefaultBatches = []int{1, 2, 4, 8, 16, 32, 64}

// GenerateOptions says what Generate measures.
type GenerateOptions struct {
	// Models are model directories (Dirs) or preset names (a preset's random model from Seed).
	Models               []string
	Dirs                 bool
	Batches              []int // sequences at once; each is a row
	PromptLen, NewTokens int   // random prompt tokens and greedily generated tokens per sequence
	Repeat               int   // measurements in turn per row, reported as medians (≥ 1)
	Seed                 uint64
	Precision            model.Precision // the linear layers' arithmetic ("" keeps the model's)
	Torch                *Torch          // the PyTorch side; nil runs none
	// Check, when set, is given each model before it is measured; its error ends the bench.
	Check func(cfg model.Config, name string) error
	// Row, when set, is given each row as soon as it is measured.
	Row func(GenerateRow)
	// Warn, when set, is told why the PyTorch side is skipped, before the bench starts.
	Warn     func(string)
	Progress progress.Options // a bar over the measurements (each side of each model and batch)
}

// GenerateRow is one model and batch of Generate.
type GenerateRow struct {
	Model      string   `json:"model"`
	Batch      int      `json:"batch"`
	PromptLen  int      `json:"prompt_len"`
	NewTokens  int      `json:"new_tokens"`
	Seconds    float64  `json:"seconds"`
	TokensPerS float64  `json:"tokens_per_s"`
	Steps      int64    `json:"steps"`
	TorchTPS   *float64 `json:"torch_tokens_per_s,omitempty"`
	Ratio      *float64 `json:"ratio,omitempty"`
	// With Repeat > 1: every run's tokens/s (the fields above are their medians, the ratio the
	// medians').
	Runs      []float64 `json:"tokens_per_s_runs,omitempty"`
	TorchRuns []float64 `json:"torch_tokens_per_s_runs,omitempty"`
}

// GenerateResult is what Generate measured; its fields are in the order of their JSON names.
type GenerateResult struct {
	Backend      string        `json:"backend"`
	Rows         []GenerateRow `json:"generate"`
	Threads      int           `json:"threads"`
	TorchSkipped string        `json:"torch_skipped,omitempty"`
}

// Generate measures the generation throughput of the engine (greedy, each batch of PromptLen
// random tokens, NewTokens each) on every model and batch and, with Torch, of the PyTorch
// reference's generate-bench on the same weights, shapes and threads. With Repeat > 1 the two
// sides take turns, so a drift of the machine's speed reaches both. The PyTorch side is skipped
// (TorchSkipped says why) when the interpreter cannot import torch.
func Generate(ctx context.Context, o GenerateOptions) (GenerateResult, error) {
	res := GenerateResult{Backend: kernels.Backend(), Threads: kernels.Threads()}
	torch := o.Torch
	if torch != nil {
		if res.TorchSkipped = torch.Missing(ctx); res.TorchSkipped != "" {
			torch = nil
			if o.Warn != nil {
				o.Warn(res.TorchSkipped)
			}
		}
	}
	repeat, sides := max(o.Repeat, 1), 1
	if torch != nil {
		sides = 2
	}
	bar := progress.New(int64(len(o.Models)*len(o.Batches)*sides*repeat), "generate", o.Progress)
	defer bar.Finish()
	for _, name := range o.Models {
		rows, err := generateModel(ctx, o, name, torch, bar)
		res.Rows = append(res.Rows, rows...)
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// generateModel is Generate on one model.
func generateModel(ctx context.Context, o GenerateOptions, name string, torch *Torch, bar *progress.Bar) ([]GenerateRow, error) {
	m, dir, cleanup, err := loadModel(name, o.Dirs, o.Seed, torch != nil, o.Precision)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if o.Check != nil {
		if err := o.Check(m.Config, name); err != nil {
			return nil, err
		}
	}
	if o.Precision != "" {
		if err := m.SetPrecision(o.Precision); err != nil {
			return nil, err
		}
	}
	var rows []GenerateRow
	for _, b := range o.Batches {
		var runs, torchRuns []float64
		var last engine.BenchResult
		for range max(o.Repeat, 1) {
			bar.Describe(fmt.Sprintf("%s batch %d: gorstar", name, b))
			r, err := engine.Bench(ctx, m, engine.BenchOptions{Batch: b, PromptLen: o.PromptLen, NewTokens: o.NewTokens, Seed: o.Seed})
			if err != nil {
				return rows, err
			}
			runs, last = append(runs, r.TokensPerSecond), r
			bar.Add(1)
			if torch != nil {
				bar.Describe(fmt.Sprintf("%s batch %d: pytorch", name, b))
				t, err := torch.run(ctx, "generate-bench", dir, kernels.Threads(), m.Precision(), "--batch", strconv.Itoa(b),
					"--prompt-len", strconv.Itoa(o.PromptLen), "--new-tokens", strconv.Itoa(o.NewTokens))
				if err != nil {
					return rows, err
				}
				torchRuns = append(torchRuns, t)
				bar.Add(1)
			}
		}
		row := generateRow(name, b, o, runs, torchRuns, last.Steps)
		if o.Row != nil {
			o.Row(row)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// generateRow is the row of one model and batch: the medians of the runs.
func generateRow(name string, batch int, o GenerateOptions, runs, torchRuns []float64, steps int64) GenerateRow {
	tps := stats.Median(runs)
	row := GenerateRow{Model: name, Batch: batch, PromptLen: o.PromptLen, NewTokens: o.NewTokens,
		Seconds: float64(batch*o.NewTokens) / tps, TokensPerS: tps, Steps: steps}
	if o.Repeat > 1 {
		row.Runs, row.TorchRuns = runs, torchRuns
	}
	if len(torchRuns) > 0 {
		t := stats.Median(torchRuns)
		ratio := tps / t
		row.TorchTPS, row.Ratio = &t, &ratio
	}
	return row
}

// loadModel loads a model directory or makes a preset's random model; with wantDir, a preset is
// also saved to a temporary directory for the PyTorch side. cleanup frees both. A directory loads
// for inference only: at bf16 its weights go straight into bf16 buffers, with no fp32 copy.
func loadModel(name string, isDir bool, seed uint64, wantDir bool, prec model.Precision) (*model.Model, string, func(), error) {
	if isDir {
		if prec == "" {
			prec = model.FP32
		}
		m, err := model.LoadWith(name, model.LoadOptions{Precision: prec, Inference: true})
		if err != nil {
			return nil, "", nil, err
		}
		return m, name, m.Close, nil
	}
	cfg, err := model.Preset(name, 0)
	if err != nil {
		return nil, "", nil, err
	}
	m, err := model.New(cfg, seed)
	if err != nil {
		return nil, "", nil, err
	}
	if !wantDir {
		return m, "", m.Close, nil
	}
	dir, rm, err := savedModel(m, name, "")
	if err != nil {
		m.Close()
		return nil, "", nil, err
	}
	return m, dir, func() { m.Close(); rm() }, nil
}

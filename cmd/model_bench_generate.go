package cmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/urfave/cli/v2"

	"gorstar/engine"
	"gorstar/internal/progress"
	"gorstar/internal/stats"
	"gorstar/internal/usererr"
	"gorstar/kernels"
	"gorstar/model"
)

// generateRow is one line of the generation benchmark.
type generateRow struct {
	Model      string   `json:"model"`
	Batch      int      `json:"batch"`
	PromptLen  int      `json:"prompt_len"`
	NewTokens  int      `json:"new_tokens"`
	Seconds    float64  `json:"seconds"`
	TokensPerS float64  `json:"tokens_per_s"`
	Steps      int64    `json:"steps"`
	TorchTPS   *float64 `json:"torch_tokens_per_s,omitempty"`
	Ratio      *float64 `json:"ratio,omitempty"`
	// With --repeat N > 1: every run's tokens/s (the fields above are their medians, the ratio the
	// medians').
	Runs      []float64 `json:"tokens_per_s_runs,omitempty"`
	TorchRuns []float64 `json:"torch_tokens_per_s_runs,omitempty"`
}

// generateBench measures generation throughput of the native engine (greedy, batch sequences of
// promptLen random tokens, newTokens each) and, with compareTorch, of bench/qwen3_torch.py
// generate-bench on the same weights, shapes and threads, run one after the other. An empty
// modelDir and preset benchmark both presets; batch 0 runs batches 1, 2, 4, …, 64. The torch side
// is skipped with a message when the interpreter cannot import torch.
func generateBench(c *cli.Context, o Options, modelDir, preset string, batch, promptLen, newTokens, repeat int, compareTorch bool) error {
	if err := initKernels(o); err != nil {
		return err
	}
	batches := []int{batch}
	if batch == 0 {
		batches = []int{1, 2, 4, 8, 16, 32, 64}
	}
	if err := firstErr(
		inRange("--batch", batch, 0, 4096),
		inRange("--prompt-len", promptLen, 1, 1<<20),
		inRange("--new-tokens", newTokens, 1, 1<<20),
		inRange("--repeat", repeat, 1, 1000),
	); err != nil {
		return err
	}
	models := []string{modelDir}
	if modelDir == "" {
		models = []string{preset}
		if preset == "" {
			models = []string{"tiny", "small"}
		}
	}
	python, script := flagOr(c, "python", "/usr/bin/python3"), flagOr(c, "torch-script", filepath.Join("bench", "qwen3_torch.py"))
	torchSkip := ""
	if compareTorch {
		if _, err := os.Stat(script); err != nil {
			return usererr.New("--torch-script: %v (run from the repository root or pass the path)", err)
		}
		if torchSkip = torchMissing(c, python); torchSkip != "" && !o.Quiet {
			fmt.Fprintln(c.App.ErrWriter, "gorstar: "+torchSkip)
		}
	}
	var rows []generateRow
	// A bar over the measurements (each side of each model and batch), on a terminal only: a
	// PyTorch run or a big batch can be silent for tens of seconds.
	sides := 1
	if compareTorch && torchSkip == "" {
		sides = 2
	}
	bar := progress.New(int64(len(models)*len(batches)*sides*repeat), "generate", progress.Options{Quiet: o.Quiet || o.JSON, TerminalOnly: true})
	defer bar.Finish()
	for _, name := range models {
		prec, err := flagPrecision(c, o)
		if err != nil {
			return err
		}
		m, dir, cleanup, err := benchModel(name, modelDir != "", o.Seed, compareTorch && torchSkip == "", prec)
		if err != nil {
			return err
		}
		if err := checkGenerateShape(m.Config, name, batches, promptLen, newTokens); err != nil {
			cleanup()
			return err
		}
		if err := setPrecision(c, o, m); err != nil {
			cleanup()
			return err
		}
		for _, b := range batches {
			// With --repeat, the two sides take turns, so a drift of the machine's speed reaches both.
			var runs, torchRuns []float64
			var last engine.BenchResult
			for range repeat {
				bar.Describe(fmt.Sprintf("%s batch %d: gorstar", name, b))
				r, err := engine.Bench(c.Context, m, engine.BenchOptions{Batch: b, PromptLen: promptLen, NewTokens: newTokens, Seed: uint64(o.Seed)})
				if err != nil {
					cleanup()
					return err
				}
				runs, last = append(runs, r.TokensPerSecond), r
				bar.Add(1)
				if dir != "" {
					bar.Describe(fmt.Sprintf("%s batch %d: pytorch", name, b))
					t, err := torchGenerateBench(c, python, script, dir, b, promptLen, newTokens, kernels.Threads(), m.Precision())
					if err != nil {
						cleanup()
						return err
					}
					torchRuns = append(torchRuns, t)
					bar.Add(1)
				}
			}
			tps := stats.Median(runs)
			row := generateRow{Model: name, Batch: b, PromptLen: promptLen, NewTokens: newTokens,
				Seconds: float64(b*newTokens) / tps, TokensPerS: tps, Steps: last.Steps}
			if repeat > 1 {
				row.Runs, row.TorchRuns = runs, torchRuns
			}
			if len(torchRuns) > 0 {
				t := stats.Median(torchRuns)
				ratio := tps / t
				row.TorchTPS, row.Ratio = &t, &ratio
			}
			rows = append(rows, row)
			if !o.JSON && !o.Quiet {
				line := fmt.Sprintf("%-6s batch %3d: gorstar %8.0f tokens/s", name, b, row.TokensPerS)
				if repeat > 1 {
					line = fmt.Sprintf("%-6s batch %3d: gorstar %8.0f tokens/s (median of %d)", name, b, row.TokensPerS, repeat)
				}
				if row.Ratio != nil {
					line += fmt.Sprintf("   pytorch %8.0f tokens/s   gorstar/pytorch %.2f×", *row.TorchTPS, *row.Ratio)
				}
				fmt.Fprintln(c.App.Writer, line)
			}
		}
		cleanup()
	}
	if o.JSON {
		out := map[string]any{"generate": rows, "threads": kernels.Threads(), "backend": kernels.Backend()}
		if torchSkip != "" {
			out["torch_skipped"] = torchSkip
		}
		return printJSON(c, out)
	}
	return nil
}

// torchMissing says why the PyTorch side is skipped, or "" when python imports torch.
func torchMissing(c *cli.Context, python string) string {
	if err := osexec.CommandContext(c.Context, python, "-c", "import torch").Run(); err != nil {
		return fmt.Sprintf("%s cannot import torch (install python3-torch): PyTorch side skipped", python)
	}
	return ""
}

// checkGenerateShape refuses sequences longer than the model's context and batches whose engine
// would not fit in memory.
func checkGenerateShape(cfg model.Config, name string, batches []int, promptLen, newTokens int) error {
	if ctx := cfg.MaxPositionEmbeddings; ctx > 0 && promptLen+newTokens > ctx {
		return usererr.New("model bench %s: --prompt-len %d + --new-tokens %d is past the context of %d tokens", name, promptLen, newTokens, ctx)
	}
	b := slices.Max(batches)
	need := engineBytes(cfg, b*(promptLen+newTokens), b, 512)
	return checkMemory(fmt.Sprintf("model bench --generate --batch %d", b), need, "--batch, --prompt-len or --new-tokens")
}

// flagOr is the string flag's value where the command defines it, else def.
func flagOr(c *cli.Context, name, def string) string {
	if v := c.String(name); v != "" {
		return v
	}
	return def
}

// benchModel loads a model directory or makes a preset's random model; with wantDir, a preset is
// also saved to a temporary directory for the PyTorch side. cleanup frees both.
// A directory loads for inference only: at bf16 its weights go straight into bf16 buffers.
func benchModel(name string, isDir bool, seed int64, wantDir bool, prec model.Precision) (*model.Model, string, func(), error) {
	if isDir {
		m, err := model.LoadWith(name, model.LoadOptions{Precision: prec, Inference: true})
		if err != nil {
			return nil, "", nil, err
		}
		dir := ""
		if wantDir {
			dir = name
		}
		return m, dir, m.Close, nil
	}
	cfg, err := model.Preset(name, 0)
	if err != nil {
		return nil, "", nil, err
	}
	m, err := model.New(cfg, uint64(seed))
	if err != nil {
		return nil, "", nil, err
	}
	if !wantDir {
		return m, "", m.Close, nil
	}
	tmp, err := os.MkdirTemp("", "gorstar-genbench-")
	if err != nil {
		m.Close()
		return nil, "", nil, err
	}
	dir := filepath.Join(tmp, name)
	if err := m.Save(dir); err != nil {
		m.Close()
		os.RemoveAll(tmp)
		return nil, "", nil, err
	}
	return m, dir, func() { m.Close(); os.RemoveAll(tmp) }, nil
}

// torchGenerateBench runs the PyTorch reference's generate-bench on the same model, shapes and
// threads and returns its tokens per second.
func torchGenerateBench(c *cli.Context, python, script, dir string, batch, promptLen, newTokens, threads int, prec model.Precision) (float64, error) {
	args := []string{script, "generate-bench", "--model", dir,
		"--batch", strconv.Itoa(batch), "--prompt-len", strconv.Itoa(promptLen), "--new-tokens", strconv.Itoa(newTokens),
		"--threads", strconv.Itoa(threads)}
	if prec == model.BF16 {
		args = append(args, "--autocast-bf16") // PyTorch's CPU mixed precision against gorstar's bf16
	}
	cmd := osexec.CommandContext(c.Context, python, args...)
	n := strconv.Itoa(threads)
	cmd.Env = append(os.Environ(), "OMP_WAIT_POLICY=PASSIVE", "OMP_NUM_THREADS="+n, "OPENBLAS_NUM_THREADS="+n, "MKL_NUM_THREADS="+n)
	cmd.Stderr = c.App.ErrWriter
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("run %s generate-bench: %w", script, err)
	}
	var res struct {
		TokensPerS float64 `json:"tokens_per_s"`
	}
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	if err := json.Unmarshal(lines[len(lines)-1], &res); err != nil || res.TokensPerS <= 0 {
		return 0, fmt.Errorf("%s generate-bench: no tokens_per_s in its output %q", script, out)
	}
	return res.TokensPerS, nil
}

package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"gorstar/bench"
	"gorstar/config"
	"gorstar/internal/outpath"
	"gorstar/internal/progress"
	"gorstar/internal/usererr"
	"gorstar/kernels"
	"gorstar/model"
	"gorstar/tokenizer"
)

func modelCommand() *cli.Command {
	return &cli.Command{
		Name:  "model",
		Usage: "create, inspect, score and benchmark Qwen2/Qwen3 models (Hugging Face directories)",
		Subcommands: []*cli.Command{
			{
				Name:  "init",
				Usage: "write a randomly initialized model directory (config.json, model.safetensors, tokenizer.json)",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "out", Required: true, Usage: "output model `DIR`"},
					&cli.StringFlag{Name: "preset", Value: "tiny", Usage: "architecture: tiny or small"},
					&cli.StringFlag{Name: "tokenizer", Value: "byte", Usage: "byte (256 bytes + chat tokens) or a tokenizer.json `PATH` or directory"},
					&cli.BoolFlag{Name: "force", Usage: "replace --out if it already exists"},
					&cli.IntFlag{Name: "copy-steps", Usage: "train the new model for at most `N` steps to copy numbers from its context, the skill a pretrained model brings to SFT (gorstar train uses model.copy_steps)"},
					&cli.Float64Flag{Name: "copy-loss", Value: 0.1, Usage: "end the copy warm-up once its loss (mean of the last 20 steps, nats per copied token) is at most `F` (0 = all --copy-steps)"},
				},
				Action: modelInit,
			},
			{
				Name:      "info",
				Usage:     "describe a model directory and check its tensors",
				ArgsUsage: "DIR (or --model DIR)",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "model", Usage: "model `DIR` (instead of the argument)"},
					&cli.IntFlag{Name: "batch", Value: 8, Usage: "sequences per training step, for the memory estimate"},
					&cli.IntFlag{Name: "seq", Value: 512, Usage: "tokens per sequence, for the memory estimate"},
					&cli.IntFlag{Name: "recompute", Usage: "recomputed layers, for the memory estimate (default model.recompute_layers)"},
					&cli.StringFlag{Name: "dtype", Usage: "fp32, bf16 or auto, for the memory estimate (default model.dtype)"},
				},
				Action: modelInfo,
			},
			{
				Name:      "convert",
				Usage:     "rewrite a Hugging Face model directory with its weights in another dtype (bf16: half the bytes)",
				UsageText: "gorstar model convert --in DIR --out DIR --dtype bf16|fp32 [--force]",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "in", Required: true, Usage: "model `DIR` to read"},
					&cli.StringFlag{Name: "out", Required: true, Usage: "model `DIR` to write"},
					&cli.StringFlag{Name: "dtype", Required: true, Usage: "weight dtype of --out: bf16 or fp32"},
					&cli.BoolFlag{Name: "force", Usage: "replace --out if it already exists"},
				},
				Action: modelConvert,
			},
			{
				Name:  "logprobs",
				Usage: "log-probability of every token given the ones before it",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "model", Required: true, Usage: "model `DIR`"},
					&cli.StringFlag{Name: "text", Usage: "text to tokenize with the model's tokenizer"},
					&cli.StringFlag{Name: "ids", Usage: "token ids as a JSON array, e.g. '[1,2,3]'"},
				},
				Action: modelLogprobs,
			},
			{
				Name:  "bench",
				Usage: "training (forward + backward + AdamW) or generation throughput in tokens per second",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "model", Usage: "model `DIR` (or --preset)"},
					&cli.StringFlag{Name: "preset", Usage: "random-init preset: tiny or small"},
					&cli.BoolFlag{Name: "train", Usage: "benchmark training steps (the default)"},
					&cli.BoolFlag{Name: "generate", Usage: "benchmark generation (engine, KV cache) instead: --batch sequences of --prompt-len random tokens, --new-tokens each"},
					&cli.IntFlag{Name: "prompt-len", Value: 64, Usage: "with --generate: prompt tokens per sequence"},
					&cli.IntFlag{Name: "new-tokens", Value: 64, Usage: "with --generate: generated tokens per sequence"},
					&cli.IntFlag{Name: "batch", Usage: "sequences per step (default 16 on tiny, 8 otherwise; with --generate each of 1, 2, 4, …, 64)"},
					&cli.IntFlag{Name: "seq", Usage: "tokens per sequence (default 256 on tiny, 512 otherwise)"},
					&cli.IntFlag{Name: "steps", Value: 3, Usage: "timed steps (after one warm-up step)"},
					&cli.IntFlag{Name: "repeat", Value: 1, Usage: "measure `N` times in turn and report medians (a shared machine's speed drifts): with --train SGEMM, the steps and SGEMM again; with --generate gorstar and PyTorch at each batch"},
					&cli.IntFlag{Name: "recompute", Usage: "recompute the activations of the first `N` layers in backward (default model.recompute_layers)"},
					&cli.StringFlag{Name: "dtype", Usage: "arithmetic of the linear layers, fp32, bf16 or auto (default model.dtype)"},
					&cli.BoolFlag{Name: "compare-torch", Usage: "also run bench/qwen3_torch.py train-bench on the same shapes and threads"},
					&cli.StringFlag{Name: "torch-script", Value: filepath.Join("bench", "qwen3_torch.py"), Usage: "the PyTorch reference `SCRIPT`"},
					&cli.StringFlag{Name: "python", Value: "/usr/bin/python3", Usage: "Python interpreter with torch for --compare-torch"},
				},
				Action: modelBench,
			},
			modelTokenizeCommand(),
		},
	}
}

// initKernels selects the device and thread count from the global options.
func initKernels(o Options) error {
	dev, err := config.ParseDevice(o.Device)
	if err != nil {
		return usererr.New("--device: %v", err)
	}
	if dev, err = openDevice(o, dev); err != nil {
		return err
	}
	if err := kernels.Setup(dev.Kind, dev.Index, capThreads(o.Threads, os.Stderr, o.Quiet)); err != nil {
		return usererr.New("--device %s: %v", o.Device, err)
	}
	return nil
}

func modelInit(c *cli.Context) error {
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
	if err := initKernels(o); err != nil {
		return err
	}
	out := c.String("out")
	if err := outpath.Dir("--out", out, c.Bool("force"), c.String("tokenizer")); err != nil {
		return err
	}
	steps, target := c.Int("copy-steps"), c.Float64("copy-loss")
	if steps < 0 {
		return usererr.New("--copy-steps: want 0 or more, got %d", steps)
	}
	if !(target >= 0) {
		return usererr.New("--copy-loss: want 0 or more, got %g", target)
	}
	var bar *progress.Bar // none without a warm-up
	if steps > 0 {
		bar = o.Progress(int64(steps), "copy warm-up")
	}
	loss := 0.0
	cfg, err := model.InitDir(out, model.InitOptions{Preset: c.String("preset"), Tokenizer: c.String("tokenizer"), Seed: uint64(o.Seed),
		Copy: model.CopyWarmupOptions{Steps: steps, Target: target, Progress: func(s int, l float64) {
			steps, loss = s, l
			bar.Set(int64(s))
		}}})
	bar.Finish()
	if err != nil {
		return err
	}
	if o.JSON {
		out := map[string]any{"out": out, "preset": c.String("preset"), "model_type": cfg.ModelType,
			"num_params": cfg.NumParams(), "vocab_size": cfg.VocabSize}
		if steps > 0 {
			out["copy_steps"], out["copy_loss"] = steps, loss
		}
		return printJSON(c, out)
	}
	fmt.Fprintf(c.App.Writer, "wrote %s: %s preset, %s, %d parameters\n", out, c.String("preset"), cfg.ModelType, cfg.NumParams())
	if steps > 0 {
		fmt.Fprintf(c.App.Writer, "copy warm-up: %d steps, loss %.3f nats per copied token (mean of the last 20; guessing a digit: 2.30)\n", steps, loss)
	}
	return nil
}

func modelInfo(c *cli.Context) error {
	dir, o, step, err := modelInfoOptions(c)
	if err != nil {
		return err
	}
	info, err := model.Inspect(dir)
	if err != nil {
		return err
	}
	cfg := info.Config
	if err := inRange("--recompute", step.recompute, 0, cfg.NumHiddenLayers); err != nil {
		return usererr.New("model info: %v", err)
	}
	plan := cfg.PlanStep(step.prec, step.batch, step.seq, step.recompute, o.Config.Model.LossChunkTokens, o.Config.Model.MemoryGiB)
	bytesPerParam := float64(info.FileBytes) / float64(max(info.NumParams, 1))
	if o.JSON {
		return printJSON(c, map[string]any{
			"dir": dir, "model_type": cfg.ModelType, "num_params": info.NumParams, "vocab_size": cfg.VocabSize,
			"hidden_size": cfg.HiddenSize, "intermediate_size": cfg.IntermediateSize,
			"num_hidden_layers": cfg.NumHiddenLayers, "num_attention_heads": cfg.NumAttentionHeads,
			"num_key_value_heads": cfg.NumKeyValueHeads, "head_dim": cfg.HeadDim, "rope_theta": cfg.RopeTheta,
			"rms_norm_eps": cfg.RMSNormEps, "tie_word_embeddings": cfg.TieWordEmbeddings,
			"max_position_embeddings": cfg.MaxPositionEmbeddings, "dtypes": info.DTypes, "unused_tensors": info.Unused,
			"file_bytes_per_param": bytesPerParam, "step_memory": plan.Memory,
			"step_memory_no_recompute": plan.KeepAll, "step_memory_all_recomputed": plan.RecomputeAll,
			"memory_budget": plan.Budget, "fits": plan.Fits,
			"step": map[string]any{"batch": step.batch, "seq": step.seq, "recompute": step.recompute, "dtype": string(step.prec)},
		})
	}
	w, mem := c.App.Writer, plan.Memory
	fmt.Fprintf(w, "%s: %s, %d parameters (%v), vocab %d, hidden %d, %d layers, %d heads (%d kv, dim %d), mlp %d, tied %v\n",
		dir, cfg.ModelType, info.NumParams, info.DTypes, cfg.VocabSize, cfg.HiddenSize, cfg.NumHiddenLayers,
		cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.HeadDim, cfg.IntermediateSize, cfg.TieWordEmbeddings)
	fmt.Fprintf(w, "on disk %.2f bytes a parameter; a %s training step of %d × %d tokens (%d layers recomputed): weights %s, master %s, gradients %s, optimizer %s, activations %s (%s), total %s\n",
		bytesPerParam, step.prec, step.batch, step.seq, step.recompute, model.GiB(mem.Weights), model.GiB(mem.Master),
		model.GiB(mem.Gradients), model.GiB(mem.Optimizer), model.GiB(mem.Activations), model.SavedActivations(step.prec),
		model.GiB(mem.Total))
	fmt.Fprintf(w, "activations %s keeping every layer (total %s), %s with all %d recomputed (total %s); %s\n",
		model.GiB(plan.KeepAll.Activations), model.GiB(plan.KeepAll.Total), model.GiB(plan.RecomputeAll.Activations),
		cfg.NumHiddenLayers, model.GiB(plan.RecomputeAll.Total), plan.Fit)
	return nil
}

// infoStep is the training step `model info` sizes.
type infoStep struct {
	prec                  model.Precision
	batch, seq, recompute int
}

// modelInfoOptions reads model info's directory, global options and step flags.
func modelInfoOptions(c *cli.Context) (string, Options, infoStep, error) {
	var step infoStep
	dir, err := argOrFlag(c, "model", "DIR")
	if err != nil {
		return "", Options{}, step, err
	}
	o, err := globalOptions(c)
	if err != nil {
		return "", o, step, err
	}
	if err := checkModelDir("model info", dir); err != nil {
		return "", o, step, err
	}
	dt := o.Config.Model.DType
	if c.IsSet("dtype") {
		dt = c.String("dtype")
	}
	if step.prec, err = model.ParsePrecision(dt); err != nil {
		return "", o, step, usererr.New("--dtype: %v", err)
	}
	step.batch, step.seq, step.recompute = c.Int("batch"), c.Int("seq"), o.Config.Model.RecomputeLayers
	if c.IsSet("recompute") {
		step.recompute = c.Int("recompute")
	}
	if err := firstErr(inRange("--batch", step.batch, 1, 1<<16), inRange("--seq", step.seq, 1, 1<<20)); err != nil {
		return "", o, step, usererr.New("model info: %v", err)
	}
	return dir, o, step, nil
}

func modelLogprobs(c *cli.Context) error {
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
	dir := c.String("model")
	if err := checkModelDir("--model", dir); err != nil {
		return err
	}
	var ids []int32
	switch {
	case c.IsSet("text") == c.IsSet("ids"):
		return usererr.New("model logprobs: give exactly one of --text and --ids")
	case c.IsSet("ids"):
		if err := json.Unmarshal([]byte(c.String("ids")), &ids); err != nil {
			return usererr.New("--ids: want a JSON array of token ids: %v", err)
		}
	default:
		if ids, err = encodeText(dir, c.String("text")); err != nil {
			return err
		}
	}
	if len(ids) < 2 {
		return usererr.New("model logprobs: need at least 2 tokens, got %d", len(ids))
	}
	if err := initKernels(o); err != nil {
		return err
	}
	prec, err := model.ParsePrecision(o.Config.Model.DType)
	if err != nil {
		return usererr.Wrap(err)
	}
	m, err := model.LoadWith(dir, model.LoadOptions{Precision: prec, Inference: true}) // scoring only
	if err != nil {
		return err
	}
	defer m.Close()
	m.LossChunkTokens = o.Config.Model.LossChunkTokens
	r, err := m.Forward(&model.Batch{B: 1, L: len(ids), IDs: ids})
	if err != nil {
		return err
	}
	lp := r.LogProbs[1:]
	var nll float64
	for _, x := range lp {
		nll -= float64(x)
	}
	loss := nll / float64(len(lp))
	if o.JSON {
		return printJSON(c, map[string]any{"ids": ids, "logprobs": lp, "loss": loss})
	}
	for i, x := range lp {
		fmt.Fprintf(c.App.Writer, "%d\t%d\t%.6f\n", i+1, ids[i+1], x)
	}
	fmt.Fprintf(c.App.Writer, "loss %.6f over %d tokens\n", loss, len(lp))
	return nil
}

func modelBench(c *cli.Context) error {
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
	if c.Bool("generate") {
		return generateBench(c, o)
	}
	if c.IsSet("model") == c.IsSet("preset") {
		return usererr.New("model bench: give exactly one of --model and --preset")
	}
	for _, f := range []string{"prompt-len", "new-tokens"} {
		if c.IsSet(f) {
			return usererr.New("model bench: --%s applies to --generate", f)
		}
	}
	if err := initKernels(o); err != nil {
		return err
	}
	bo, err := trainBenchOptions(c, o)
	if bo.Model != nil {
		defer bo.Model.Close()
	}
	if err != nil {
		return err
	}
	res, err := bench.Train(c.Context, bo)
	if err != nil {
		return err
	}
	if o.JSON {
		return printJSON(c, res)
	}
	printTrainBench(c.App.Writer, res)
	return nil
}

// trainBenchOptions opens the model of `model bench --train` and checks its shapes and memory.
// The model is returned (to be closed) even with an error.
func trainBenchOptions(c *cli.Context, o Options) (bench.TrainOptions, error) {
	bo := bench.TrainOptions{Name: c.String("model"), Dir: c.String("model"), Steps: c.Int("steps"), Repeat: c.Int("repeat"), Seed: uint64(o.Seed)}
	var err error
	if bo.Name != "" {
		if err := checkModelDir("--model", bo.Name); err != nil {
			return bo, err
		}
		bo.Model, err = model.Load(bo.Name)
	} else {
		bo.Name = c.String("preset")
		var cfg model.Config
		if cfg, err = model.Preset(bo.Name, 0); err == nil {
			bo.Model, err = model.New(cfg, uint64(o.Seed))
		}
	}
	if err != nil {
		return bo, err
	}
	m := bo.Model
	bo.Batch, bo.Seq = 8, 512
	if m.Config.HiddenSize <= 128 {
		bo.Batch, bo.Seq = 16, 256
	}
	if c.IsSet("batch") {
		bo.Batch = c.Int("batch")
	}
	if c.IsSet("seq") {
		bo.Seq = c.Int("seq")
	}
	m.Recompute, m.LossChunkTokens = o.Config.Model.RecomputeLayers, o.Config.Model.LossChunkTokens
	if c.IsSet("recompute") {
		m.Recompute = c.Int("recompute")
	}
	if err := setPrecision(c, o, m); err != nil {
		return bo, err
	}
	if err := firstErr(
		inRange("--batch", bo.Batch, 1, 1<<16),
		inRange("--seq", bo.Seq, 2, max(2, m.Config.MaxPositionEmbeddings)),
		inRange("--steps", bo.Steps, 1, 1<<20),
		inRange("--repeat", bo.Repeat, 1, 1000),
		inRange("--recompute", m.Recompute, 0, m.Config.NumHiddenLayers),
	); err != nil {
		return bo, usererr.New("model bench %s: %v", bo.Name, err)
	}
	step := m.Config.StepMemory(m.Precision(), bo.Batch, bo.Seq, m.Recompute, m.LossChunkTokens)
	need := step.Total - step.Weights - step.Master // the weights are loaded already
	if err := checkMemory(fmt.Sprintf("model bench --batch %d --seq %d --recompute %d", bo.Batch, bo.Seq, m.Recompute), need, "--batch or --seq, or raise --recompute"); err != nil {
		return bo, err
	}
	if c.Bool("compare-torch") {
		bo.Torch, bo.Warn = torchOf(c, o)
		if _, err := os.Stat(bo.Torch.Script); err != nil {
			return bo, usererr.New("--torch-script: %v (run from the repository root or pass the path)", err)
		}
	}
	return bo, nil
}

// torchOf is the PyTorch side of `model bench` and where it warns.
func torchOf(c *cli.Context, o Options) (*bench.Torch, func(string)) {
	t := &bench.Torch{Python: flagOr(c, "python", "/usr/bin/python3"), Script: flagOr(c, "torch-script", bench.DefaultTorchScript), Stderr: c.App.ErrWriter}
	return t, func(msg string) {
		if !o.Quiet {
			fmt.Fprintln(c.App.ErrWriter, "gorstar: "+msg)
		}
	}
}

func printTrainBench(w io.Writer, res bench.TrainResult) {
	median := ""
	if len(res.Repeats) > 1 {
		for i, r := range res.Repeats {
			fmt.Fprintf(w, "repeat %d: %.0f tokens/s = %.1f GFLOP/s, %.0f%% of SGEMM's %.1f GFLOP/s (%.1f before, %.1f after; step by step %.0f%%)\n",
				i+1, r.TokensPerS, r.StepGFLOPS, 100*r.Fraction, r.SGEMM, r.Before, r.After, 100*r.Paired)
		}
		median = fmt.Sprintf("median of %d: ", len(res.Repeats))
	}
	fmt.Fprintf(w, "%s%s %d×%d, %d threads (%s): %.0f tokens/s = %.1f GFLOP/s (%.3f GFLOP a token), %.0f%% of SGEMM's %.1f GFLOP/s on the step's shapes (each step against the SGEMM runs beside it: %.0f%%)\n",
		median, res.Model, res.Batch, res.Seq, res.Threads, res.Backend, res.TokensPerS, res.StepGFLOPS, res.GFLOPPerToken, 100*res.Fraction, res.SGEMM, 100*res.Paired)
	if res.TorchTokensPerS > 0 {
		fmt.Fprintf(w, "pytorch: %.0f tokens/s; gorstar/pytorch = %.2f\n", res.TorchTokensPerS, res.Ratio)
	}
}

// encodeText tokenizes text with the model directory's tokenizer.json, special tokens included.
func encodeText(dir, text string) ([]int32, error) {
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return nil, err
	}
	return tok.EncodeWithSpecials(text, true), nil
}

// setPrecision applies --dtype, else model.dtype, to m.
func setPrecision(c *cli.Context, o Options, m *model.Model) error {
	p, err := precisionOf(c, o)
	if err != nil {
		return err
	}
	return m.SetPrecision(p)
}

// precisionOf is --dtype, else model.dtype.
func precisionOf(c *cli.Context, o Options) (model.Precision, error) {
	dt := o.Config.Model.DType
	if c.IsSet("dtype") {
		dt = c.String("dtype")
	}
	p, err := model.ParsePrecision(dt)
	if err != nil {
		return "", usererr.New("--dtype: %v", err)
	}
	return p, nil
}

func modelConvert(c *cli.Context) error {
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
	dtype, err := model.ConvertDType(c.String("dtype"))
	if err != nil {
		return err
	}
	in, out := c.String("in"), c.String("out")
	if err := checkModelDir("--in", in); err != nil {
		return err
	}
	if err := outpath.Dir("--out", out, c.Bool("force"), in); err != nil {
		return err
	}
	if err := initKernels(o); err != nil {
		return err
	}
	if err := model.Convert(in, out, dtype); err != nil {
		return err
	}
	if !o.Quiet {
		fmt.Fprintf(c.App.Writer, "wrote %s (%s weights)\n", out, dtype)
	}
	return nil
}

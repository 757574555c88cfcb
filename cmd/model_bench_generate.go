package cmd

import (
	"fmt"
	"os"
	"slices"

	"github.com/urfave/cli/v2"

	"gorstar/bench"
	"gorstar/engine"
	"gorstar/internal/progress"
	"gorstar/internal/usererr"
	"gorstar/model"
)

// generateBench is `model bench --generate`: bench.Generate with the flags' options, a line a row.
// Without --batch it runs bench.DefaultBatches (rollout batches shrink and grow); without
// --model/--preset, both presets.
func generateBench(c *cli.Context, o Options) error {
	g, err := generateBenchOptions(c, o)
	if err != nil {
		return err
	}
	repeat := g.Repeat
	g.Row = func(row bench.GenerateRow) {
		if o.JSON || o.Quiet {
			return
		}
		line := fmt.Sprintf("%-6s batch %3d: gorstar %8.0f tokens/s", row.Model, row.Batch, row.TokensPerS)
		if repeat > 1 {
			line = fmt.Sprintf("%-6s batch %3d: gorstar %8.0f tokens/s (median of %d)", row.Model, row.Batch, row.TokensPerS, repeat)
		}
		if row.Ratio != nil {
			line += fmt.Sprintf("   pytorch %8.0f tokens/s   gorstar/pytorch %.2f×", *row.TorchTPS, *row.Ratio)
		}
		fmt.Fprintln(c.App.Writer, line)
	}
	res, err := bench.Generate(c.Context, g)
	if err != nil {
		return err
	}
	if o.JSON {
		return printJSON(c, res)
	}
	return nil
}

// generateBenchOptions checks the flags of `model bench --generate` and turns them into options.
func generateBenchOptions(c *cli.Context, o Options) (bench.GenerateOptions, error) {
	var g bench.GenerateOptions
	if c.Bool("train") {
		return g, usererr.New("model bench: give one of --train and --generate")
	}
	if c.IsSet("batch") && c.Int("batch") < 1 {
		return g, usererr.New("--batch: must be in 1..4096, got %d", c.Int("batch"))
	}
	for _, f := range []string{"seq", "steps", "recompute"} {
		if c.IsSet(f) {
			return g, usererr.New("model bench: --%s applies to --train", f)
		}
	}
	if c.IsSet("model") && c.IsSet("preset") {
		return g, usererr.New("model bench: give at most one of --model and --preset")
	}
	if err := initKernels(o); err != nil {
		return g, err
	}
	batch := c.Int("batch")
	g = bench.GenerateOptions{Batches: []int{batch}, PromptLen: c.Int("prompt-len"), NewTokens: c.Int("new-tokens"),
		Repeat: c.Int("repeat"), Seed: uint64(o.Seed),
		Progress: progress.Options{Quiet: o.Quiet || o.JSON, TerminalOnly: true}}
	if batch == 0 {
		g.Batches = bench.DefaultBatches
	}
	if err := firstErr(
		inRange("--batch", batch, 0, 4096),
		inRange("--prompt-len", g.PromptLen, 1, 1<<20),
		inRange("--new-tokens", g.NewTokens, 1, 1<<20),
		inRange("--repeat", g.Repeat, 1, 1000),
	); err != nil {
		return g, err
	}
	switch {
	case c.String("model") != "":
		g.Models, g.Dirs = []string{c.String("model")}, true
	case c.String("preset") != "":
		g.Models = []string{c.String("preset")}
	default:
		g.Models = []string{"tiny", "small"}
	}
	prec, err := precisionOf(c, o)
	if err != nil {
		return g, err
	}
	g.Precision, g.Check = prec, checkGenerateShape(g)
	if c.Bool("compare-torch") {
		g.Torch, g.Warn = torchOf(c, o)
		if _, err := os.Stat(g.Torch.Script); err != nil {
			return g, usererr.New("--torch-script: %v (run from the repository root or pass the path)", err)
		}
	}
	return g, nil
}

// checkGenerateShape refuses sequences longer than the model's context and batches whose engine
// would not fit in memory.
func checkGenerateShape(g bench.GenerateOptions) func(model.Config, string) error {
	return func(cfg model.Config, name string) error {
		if ctx := cfg.MaxPositionEmbeddings; ctx > 0 && g.PromptLen+g.NewTokens > ctx {
			return usererr.New("model bench %s: --prompt-len %d + --new-tokens %d is past the context of %d tokens", name, g.PromptLen, g.NewTokens, ctx)
		}
		b := slices.Max(g.Batches)
		need := engine.MemoryBytes(cfg, g.Precision, b*(g.PromptLen+g.NewTokens), b, 512)
		return checkMemory(fmt.Sprintf("model bench --generate --batch %d", b), need, "--batch, --prompt-len or --new-tokens")
	}
}

// flagOr is the string flag's value where the command defines it, else def.
func flagOr(c *cli.Context, name, def string) string {
	if v := c.String(name); v != "" {
		return v
	}
	return def
}

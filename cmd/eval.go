package cmd

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"gorstar/config"
	"gorstar/engine"
	"gorstar/eval"
	"gorstar/eval/metrics"
	"gorstar/internal/progress"
	"gorstar/model"
)

func evalCommand() *cli.Command {
	return &cli.Command{
		Name: "eval",
		Usage: "average pass@1 over k samples per problem with the Python tool, natively or on OpenAI-compatible servers; " +
			"graded strictly and under rStar2's grading; resumable with the same --out",
		Flags: withRenamed([]cli.Flag{
			&cli.StringFlag{Name: "model", Usage: "Hugging Face model `DIR` to run natively"},
			&cli.StringSliceFlag{Name: "endpoint", Usage: "OpenAI-compatible server `URL` (repeatable; instead of --model)"},
			&cli.StringFlag{Name: "served-model", Usage: "with --endpoint: the model `NAME` the servers list"},
			&cli.StringFlag{Name: "tokenizer", Usage: "with --endpoint: `DIR` holding the served model's tokenizer.json (token mode: ids in and out); without it, text mode: chat completions, the server's template and tool parser, its usage for token counts"},
			&cli.StringSliceFlag{Name: "data", Usage: "problems `FILE`: a problems table, verl/rStar2 Parquet, JSONL or a public set as published; repeat it for several sets, one row each (default: [[eval.sets]])"},
			&cli.StringFlag{Name: "out", Usage: "per-sample results `RESULTS.parquet` (RESULTS.md and RESULTS.manifest.json beside it)"},
			&cli.IntFlag{Name: "samples", Usage: "samples per problem, k (default eval.samples)"},
			&cli.Float64Flag{Name: "temperature", Usage: "sampling temperature (default eval.temperature)"},
			&cli.Float64Flag{Name: "top-p", Usage: "nucleus mass, 1 = off (default rollout.top_p)"},
			&cli.IntFlag{Name: "max-response-tokens", Usage: "response budget in tokens, tool turns included (default eval.max_response_tokens)"},
			&cli.IntFlag{Name: "max-turns", Usage: "most assistant turns (default eval.max_turns)"},
			&cli.BoolFlag{Name: "no-tool", Usage: "no tool: one assistant turn, no tool schema in the prompt"},
			&cli.IntFlag{Name: "limit", Usage: "evaluate only the first `N` problems (default eval.limit, 0 = all)"},
			&cli.IntFlag{Name: "concurrency", Value: 64, Usage: "samples in flight at once (natively: the engine's batch)"},
			&cli.IntFlag{Name: "kv-tokens", Usage: "native: KV cache budget in tokens (default 65536, less when over 4 GiB)"},
		}, map[string][]string{"max-response-tokens": {"max-tokens"}}),
		Action: evalAction,
	}
}

func evalAction(c *cli.Context) (err error) {
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
	world, err := joinWorld(c, &o)
	if err != nil {
		return err
	}
	defer leaveWorld(world, &err)
	eo, err := evalOptions(c, o)
	if err != nil {
		return err
	}
	if err := announceWorld(c, world); err != nil {
		return err
	}
	res, err := eval.Run(c.Context, eo)
	if err != nil {
		return err
	}
	if o.JSON {
		return printJSON(c, res)
	}
	printEval(c.App.Writer, res)
	return nil
}

// evalOptions turns the flags of `eval` and the [eval] section into eval.Options.
func evalOptions(c *cli.Context, o Options) (eval.Options, error) {
	cfg := o.Config.Eval
	if c.IsSet("samples") {
		cfg.Samples = c.Int("samples")
	}
	if c.IsSet("temperature") {
		cfg.Temperature = c.Float64("temperature")
	}
	if c.IsSet("max-response-tokens") {
		cfg.MaxResponseTokens = c.Int("max-response-tokens")
	}
	if c.IsSet("max-turns") {
		cfg.MaxTurns = c.Int("max-turns")
	}
	if c.IsSet("limit") {
		cfg.Limit = c.Int("limit")
	}
	topP := o.Config.Rollout.TopP
	if c.IsSet("top-p") {
		topP = c.Float64("top-p")
	}
	eo, err := evalPolicyOptions(c, o, cfg, topP)
	if err != nil {
		return eo, err
	}
	eo.NoTool, eo.Out = c.Bool("no-tool"), c.String("out")
	switch files := c.StringSlice("data"); len(files) {
	case 0:
	case 1:
		eo.Data = files[0]
	default:
		eo.Eval.Sets = nil
		for _, f := range files {
			eo.Eval.Sets = append(eo.Eval.Sets, config.EvalSet{Data: f})
		}
	}
	eo.Engine.KVTokens = c.Int("kv-tokens")
	eo.Version = version
	eo.Progress = progress.Options{Out: c.App.ErrWriter, Quiet: o.Quiet || o.JSON}
	return eo, nil
}

// printEval prints the result of `eval`.
func printEval(w io.Writer, res eval.Result) {
	fmt.Fprintf(w, "avg pass@1 %.1f%% (strict; rstar2 grading %.1f%%) over %d problems × %d samples; pass@%d %.1f%%, maj@%d %.1f%%\n",
		100*res.AvgPass1, 100*res.RStar2.AvgPass1, res.NProblems, res.K, res.K, 100*res.PassAtK, res.K, 100*res.MajAtK)
	fmt.Fprintf(w, "mean response tokens %.0f, tool calls per response %.2f; results in %s, %s, %s\n",
		res.MeanResponseTokens, res.ToolCallsPerResponse, res.Out, res.Markdown, res.Manifest)
	if len(res.Sets) > 1 {
		fmt.Fprintln(w)
		metrics.WriteSetTable(w, res.Sets)
	}
}

// evalPolicyOptions are the eval.Options that `gorstar eval` and `gorstar data filter
// --max-pass-rate` share: the policy (--model natively, kernels started, or --endpoint,
// --served-model, --tokenizer), --concurrency, the rollout template and tool settings, [exec],
// the seed and warnings on stderr.
func evalPolicyOptions(c *cli.Context, o Options, cfg config.Eval, topP float64) (eval.Options, error) {
	if c.String("model") != "" {
		if err := initKernels(o); err != nil {
			return eval.Options{}, err
		}
	}
	return eval.Options{
		Eval: cfg, TopP: topP, Seed: uint64(o.Seed),
		Model: c.String("model"), Endpoints: c.StringSlice("endpoint"), ServedModel: c.String("served-model"),
		Tokenizer: c.String("tokenizer"),
		Template:  o.Config.Rollout.Template, ToolTextChars: o.Config.Rollout.ToolTextChars,
		ToolSessions: o.Config.Rollout.ToolSessions, Exec: o.Config.Exec, Concurrency: c.Int("concurrency"),
		Engine: engine.Options{Seed: uint64(o.Seed), Precision: model.PrecisionOf(o.Config.Model.DType)},
		Warn:   warnFunc(c, o), World: o.World,
	}, nil
}

// warnFunc prints a warning on stderr unless --quiet.
func warnFunc(c *cli.Context, o Options) func(string) {
	return func(s string) {
		if !o.Quiet {
			fmt.Fprintf(c.App.ErrWriter, "gorstar: warning: %s\n", s)
		}
	}
}

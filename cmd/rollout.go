package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/urfave/cli/v2"

	"gorstar/chat"
	"gorstar/data"
	"gorstar/engine"
	"gorstar/internal/tooloptions"
	"gorstar/internal/usererr"
	"gorstar/model"
	"gorstar/pytool"
	"gorstar/reward"
	"gorstar/rollout"
	"gorstar/tokenizer"
)

func rolloutCommand() *cli.Command {
	return &cli.Command{
		Name: "rollout",
		Usage: "multi-turn rollouts with the Python tool on a problems table, graded, written as traces " +
			"(inspect a model's behaviour, make candidate SFT data)",
		UsageText: "gorstar rollout (--model DIR | --endpoint URL … --served-model NAME --tokenizer DIR) " +
			"--data FILE --samples N --out traces.parquet [--jsonl traces.jsonl]",
		Flags: withRenamed(slices.Concat([]cli.Flag{
			&cli.StringFlag{Name: "model", Usage: "Hugging Face model `DIR` to roll out with the in-process engine"},
		}, endpointFlags("instead of --model"), []cli.Flag{
			&cli.StringFlag{Name: "tokenizer", Usage: "tokenizer `DIR` of the served model (with --endpoint)"},
			&cli.IntFlag{Name: "concurrency", Usage: "trajectories in flight at once (with --endpoint: completions in flight over all servers)",
				DefaultText: "--max-seqs natively, 64 on endpoints"},
			&cli.StringFlag{Name: "data", Usage: "problems table `FILE` (.parquet or .jsonl with problem and answer)"},
			&cli.IntFlag{Name: "samples", Value: 1, Usage: "trajectories per problem (a GRPO group)"},
			&cli.StringFlag{Name: "out", Usage: "traces `FILE` (.parquet), written when every rollout is done; until then finished " +
				"trajectories are kept beside it (t.partial.jsonl for t.parquet) and the same command run again resumes; t.manifest.json records the settings of the traces"},
			&cli.StringFlag{Name: "jsonl", Usage: "also write the traces as JSON lines to `FILE` (for people)"},
			&cli.IntFlag{Name: "max-turns", Usage: "assistant turns per rollout at most", DefaultText: "rollout.max_turns"},
			&cli.IntFlag{Name: "max-response-tokens", Usage: "response budget: generated plus tool tokens", DefaultText: "the first RL stage's max_response_tokens"},
			&cli.Float64Flag{Name: "temperature", Usage: "sampling temperature", DefaultText: "rollout.temperature"},
			rolloutSandboxFlag(),
			&cli.IntFlag{Name: "workers", Usage: "warm sandbox workers (overrides exec.workers; 0 = 2 per core; unused with exec.endpoints)"},
		}, engineFlags()), map[string][]string{"max-response-tokens": {"max-tokens"}}),
		Action: rolloutAction,
		Subcommands: []*cli.Command{{
			Name: "bench",
			Usage: "the same rollouts with overlapped and with naive tool scheduling, then plain generation " +
				"of as many tokens (the ceiling), on a random model whose turns the bench scripts",
			Flags: withRenamed([]cli.Flag{
				&cli.StringFlag{Name: "preset", Value: "tiny", Usage: "random model preset: tiny or small"},
				&cli.DurationFlag{Name: "tool-sleep", Value: 200 * time.Millisecond, Usage: "how long each tool call sleeps"},
				&cli.BoolFlag{Name: "role-words", Value: true, Usage: "the model's byte-level tokenizer gives the chat roles (system, user, " +
					"assistant) one token each, as Qwen3's does: a tool turn around a one-character result is 16 tokens (Qwen3: 18, byte by byte: 27); " +
					"false spells them byte by byte"},
				&cli.IntFlag{Name: "trajectories", Value: rollout.DefaultBenchOptions().Rollouts, Usage: "trajectories to generate"},
				&cli.IntFlag{Name: "concurrency", Value: rollout.DefaultBenchOptions().Concurrency, Usage: "trajectories in flight at most"},
				rolloutSandboxFlag(),
				&cli.IntFlag{Name: "workers", Usage: "sandbox workers (default: --concurrency, so tools never queue; unused with exec.endpoints)"},
				&cli.IntFlag{Name: "repeat", Value: 1, Usage: "run the three measurements `N` times in turn and report medians (a shared machine's speed drifts)"},
			}, map[string][]string{"trajectories": {"rollouts"}}),
			Action: rolloutBench,
		}},
	}
}

// endpointFlags send a command's rollouts to OpenAI-compatible servers (rollout, rl); instead says
// what they replace.
func endpointFlags(instead string) []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "endpoint", Usage: "OpenAI-compatible server `URL` (repeatable) " + instead},
		&cli.StringFlag{Name: "served-model", Usage: "model id to ask the endpoints for (with --endpoint)"},
	}
}

func rolloutSandboxFlag() cli.Flag {
	return &cli.StringFlag{Name: "sandbox", Usage: "auto | bwrap | namespaces | seatbelt | none (none runs tool code WITHOUT isolation; overrides exec.sandbox)"}
}

func rolloutAction(c *cli.Context) error {
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
	if err := checkRolloutFlags(c); err != nil {
		return err
	}
	opts, err := rolloutOptions(c, o)
	if err != nil {
		return err
	}
	problems, err := readGradedProblems(c.String("data"))
	if err != nil {
		return err
	}
	p, err := openRolloutPolicy(c, o)
	if err != nil {
		return err
	}
	defer p.Close()
	opts.Chat = p.ChatOptions([]json.RawMessage{chat.PythonTool})
	opts.Concurrency = p.Concurrency
	execCfg, err := execConfigOf(c, o)
	if err != nil {
		return err
	}
	man, err := rollout.NewManifest(c.String("data"), len(problems), templateName(c, o), p, opts, version)
	if err != nil {
		return err
	}
	out := c.String("out")
	ck, err := rollout.OpenCheckpoint(out, man, problems)
	if err != nil {
		return err
	}
	defer ck.Close()
	opts.Pending = ck.Pending
	trajs, sum, err := rolloutRun(c, o, p, execCfg, opts, problems, ck)
	if err != nil {
		ck.Discard() // unless it holds finished trajectories
		return err
	}
	if sum, err = ck.Write(out, c.String("jsonl"), trajs, sum); err != nil {
		return err
	}
	if o.JSON {
		return printJSON(c, sum)
	}
	fmt.Fprintf(c.App.Writer, "%d trajectories, %d correct, %d well formed; %d tool calls (%d failed), %d truncated, %d errors; "+
		"%.0f tokens/s, tools p50 %.0f ms, p99 %.0f ms, %.0f%% of the time waiting on tools; traces in %s\n",
		sum.Trajectories, sum.Correct, sum.WellFormed, sum.ToolCalls, sum.FailedToolCalls, sum.Truncated, sum.Errors,
		sum.DecodeTokensPerS, sum.ToolP50MS, sum.ToolP99MS, 100*sum.ToolWaitFraction, out)
	if sum.Resumed > 0 {
		fmt.Fprintf(c.App.Writer, "%d of them were finished by the interrupted run this one resumed\n", sum.Resumed)
	}
	return nil
}

// rolloutRun rolls out what the checkpoint lacks (nothing, with no sandbox started, when it lacks
// nothing), keeping each trajectory in it as it finishes.
// readGradedProblems reads the problems of --data, each with an answer to grade against.
func readGradedProblems(path string) ([]data.Problem, error) {
	problems, err := data.ReadAllProblems(path)
	if err != nil {
		return nil, err
	}
	if len(problems) == 0 {
		return nil, usererr.New("--data %s: no problems", path)
	}
	for i, p := range problems {
		if p.Answer == "" {
			return nil, usererr.New("--data %s: problem %d (%s) has no answer to grade against", path, i+1, p.ID)
		}
	}
	return problems, nil
}

func rolloutRun(c *cli.Context, o Options, p *rollout.Policy, execCfg pytool.Options, opts rollout.Options,
	problems []data.Problem, ck *rollout.Checkpoint) ([]rollout.Trajectory, rollout.Summary, error) {
	if len(ck.Done) == len(problems)*opts.Samples {
		return nil, rollout.Summary{}, nil
	}
	pool, err := startTools(c.Context, c, o, execCfg, pytool.BesideEngine(p.Engine != nil))
	if err != nil {
		return nil, rollout.Summary{}, err
	}
	defer pool.Close()
	bar := o.Progress(int64(len(problems)*opts.Samples), "rollout")
	bar.Add(len(ck.Done))
	opts.OnFinish = func(t rollout.Trajectory) {
		ck.Add(t)
		bar.Add(1)
	}
	loop, err := rollout.New(p.Backend, pool, p.Tokenizer, opts)
	if err != nil {
		return nil, rollout.Summary{}, usererr.Wrap(err)
	}
	trajs, sum, err := loop.Run(c.Context, problems)
	bar.Finish()
	if err == nil {
		err = ck.Err()
	}
	if err != nil {
		return nil, sum, ck.Failed(err)
	}
	return trajs, sum, nil
}

// openRolloutPolicy loads --model on the in-process engine (sized by the engine flags), or
// connects to the --endpoint servers and checks that they serve --served-model; the template is
// --template or rollout.template either way.
func openRolloutPolicy(c *cli.Context, o Options) (*rollout.Policy, error) {
	if dir := c.String("model"); dir != "" {
		if err := checkModelDir("--model", dir); err != nil {
			return nil, err
		}
		if err := initKernels(o); err != nil {
			return nil, err
		}
		if err := checkEngineFlags(c, dir, model.PrecisionOf(o.Config.Model.DType)); err != nil {
			return nil, err
		}
	}
	tmpl, err := commandTemplate(c, o)
	if err != nil {
		return nil, err
	}
	eo := engine.Options{KVTokens: c.Int("kv-tokens"), MaxSeqs: c.Int("max-seqs"), StepTokens: c.Int("step-tokens"), Seed: uint64(o.Seed),
		Precision: model.PrecisionOf(o.Config.Model.DType)}
	if c.IsSet("concurrency") && !c.IsSet("max-seqs") {
		eo.MaxSeqs = c.Int("concurrency")
	}
	p, err := rollout.OpenPolicy(c.Context, rollout.PolicyOptions{
		Model: c.String("model"), Engine: eo,
		Endpoints: c.StringSlice("endpoint"), ServedModel: c.String("served-model"), Tokenizer: c.String("tokenizer"),
		Template: tmpl, Primer: c.String("primer"), Concurrency: c.Int("concurrency"),
		Warn: warnFunc(c, o),
	})
	if err != nil && usererr.Is(err) && c.String("model") == "" {
		return nil, usererr.New("rollout: %w", err)
	}
	return p, err
}

// checkRolloutFlags refuses what cannot run before anything loads: the backend choice, the
// required files, and output paths whose folder does not exist (found now, not after the run).
func checkRolloutFlags(c *cli.Context) error {
	model, endpoints := c.String("model"), c.StringSlice("endpoint")
	switch {
	case model == "" && len(endpoints) == 0:
		return usererr.New("rollout: give --model DIR or --endpoint URL (see `gorstar rollout --help`)")
	case model != "" && len(endpoints) > 0:
		return usererr.New("rollout: give --model DIR or --endpoint URL, not both")
	case len(endpoints) > 0 && c.String("served-model") == "":
		return usererr.New("rollout: --endpoint needs --served-model NAME (the name the server lists)")
	case len(endpoints) > 0 && c.String("tokenizer") == "":
		return usererr.New("rollout: --endpoint needs --tokenizer DIR (the served model's tokenizer.json): rollouts run in token mode, ids in and out, as training needs; text mode is for gorstar eval only")
	}
	if c.Int("concurrency") < 0 {
		return usererr.New("rollout: --concurrency must be ≥ 1, got %d", c.Int("concurrency"))
	}
	for _, name := range []string{"data", "out"} {
		if c.String(name) == "" {
			return usererr.New("rollout: --%s is required (see `gorstar rollout --help`)", name)
		}
	}
	if c.Int("samples") < 1 {
		return usererr.New("rollout: --samples must be ≥ 1, got %d", c.Int("samples"))
	}
	for _, name := range []string{"out", "jsonl"} {
		path := c.String(name)
		if path == "" {
			continue
		}
		if st, err := os.Stat(filepath.Dir(path)); err != nil || !st.IsDir() {
			return usererr.New("rollout: --%s %s: folder %s does not exist", name, path, filepath.Dir(path))
		}
	}
	return nil
}

// rolloutOptions are the loop's settings: [rollout] and [reward] of the configuration, then the
// flags.
func rolloutOptions(c *cli.Context, o Options) (rollout.Options, error) {
	cfg := o.Config
	opts := rollout.DefaultOptions()
	opts.MaxTurns, opts.ToolTextChars = cfg.Rollout.MaxTurns, cfg.Rollout.ToolTextChars
	opts.Temperature, opts.TopP = cfg.Rollout.Temperature, cfg.Rollout.TopP
	opts.ToolSessions = cfg.Rollout.ToolSessions
	if len(cfg.RL.Stages) > 0 {
		opts.MaxResponseTokens = cfg.RL.Stages[0].MaxResponseTokens
	}
	if c.IsSet("max-turns") {
		opts.MaxTurns = c.Int("max-turns")
	}
	if c.IsSet("max-response-tokens") {
		opts.MaxResponseTokens = c.Int("max-response-tokens")
	}
	if c.IsSet("temperature") {
		opts.Temperature = c.Float64("temperature")
	}
	switch {
	case opts.MaxTurns < 1:
		return opts, usererr.New("rollout: --max-turns must be ≥ 1, got %d", opts.MaxTurns)
	case opts.MaxResponseTokens < 1:
		return opts, usererr.New("rollout: --max-response-tokens must be ≥ 1, got %d", opts.MaxResponseTokens)
	case opts.Temperature < 0:
		return opts, usererr.New("rollout: --temperature must be ≥ 0, got %g", opts.Temperature)
	}
	mode, err := reward.ParseMode(cfg.Reward.Mode)
	if err != nil {
		return opts, usererr.Wrap(err)
	}
	opts.Reward = reward.Options{Mode: mode}
	opts.Samples, opts.Seed = c.Int("samples"), uint64(o.Seed)
	return opts, nil
}

func rolloutBench(c *cli.Context) error {
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
	bo, m, tok, pool, err := rolloutBenchSetup(c, o)
	if err != nil {
		return err
	}
	defer m.Close()
	defer pool.Close()
	if !o.Quiet {
		fmt.Fprintf(c.App.ErrWriter, "rollout bench: %d rollouts, %d at once, tools sleep %s: overlapped, naive, engine only…\n",
			bo.Rollouts, bo.Concurrency, bo.ToolSleep)
	}
	res, err := rollout.Bench(c.Context, m, tok, pool, bo)
	if err != nil {
		return err
	}
	res.ToolPriority, res.RoleWords = "remote", c.Bool("role-words")
	if local, ok := pool.(*pytool.Pool); ok {
		res.ToolPriority = local.Priority()
	}
	if o.JSON {
		return printJSON(c, res)
	}
	printRolloutBench(c.App.Writer, res)
	return nil
}

// rolloutBenchSetup checks the flags of `rollout bench` and opens its policy and tools.
func rolloutBenchSetup(c *cli.Context, o Options) (rollout.BenchOptions, *model.Model, *tokenizer.Tokenizer, pytool.Tools, error) {
	bo := rollout.DefaultBenchOptions()
	bo.ToolSleep, bo.Rollouts, bo.Concurrency, bo.Seed = c.Duration("tool-sleep"), c.Int("trajectories"), c.Int("concurrency"), uint64(o.Seed)
	bo.Repeats, bo.ToolSessions = c.Int("repeat"), o.Config.Rollout.ToolSessions
	if bo.Rollouts < 1 || bo.Concurrency < 1 || bo.ToolSleep < 0 || bo.Repeats < 1 {
		return bo, nil, nil, nil, usererr.New("rollout bench: --trajectories, --concurrency and --repeat must be ≥ 1 and --tool-sleep ≥ 0")
	}
	if err := initKernels(o); err != nil {
		return bo, nil, nil, nil, err
	}
	var words []string
	if c.Bool("role-words") {
		words = tokenizer.ChatRoleWords
	}
	cfg := o.Config.Exec
	if c.IsSet("sandbox") {
		cfg.Sandbox = c.String("sandbox")
	}
	cfg.Workers = bo.Concurrency
	if c.IsSet("workers") {
		cfg.Workers = c.Int("workers")
	}
	if err := cfg.Validate(); err != nil {
		return bo, nil, nil, nil, usererr.Wrap(err)
	}
	m, tok, err := presetPolicy(c.String("preset"), o.Seed, words...)
	if err != nil {
		return bo, nil, nil, nil, err
	}
	pool, err := startTools(c.Context, c, o, tooloptions.From(cfg), pytool.BesideEngine(true))
	if err != nil {
		m.Close()
		return bo, nil, nil, nil, err
	}
	return bo, m, tok, pool, nil
}

// printRolloutBench prints the result of `rollout bench`.
func printRolloutBench(w io.Writer, res rollout.BenchResult) {
	for i, r := range res.Runs {
		fmt.Fprintf(w, "repeat %d: overlapped %.2f s, naive %.2f s (%.2f×); decoding %.0f%% of %.0f tokens/s; "+
			"outside this process %.0f%% of all cores\n", i+1, r.OverlappedS, r.NaiveS, r.Speedup, 100*r.DecodeShare,
			r.EngineOnlyTokensPerS, 100*r.OutsideCPUShare)
	}
	median := ""
	if len(res.Runs) > 1 {
		median = fmt.Sprintf("median of %d: ", len(res.Runs))
	}
	fmt.Fprintf(w, "%soverlapped %.2f s, naive %.2f s: %.2f× faster; decoding %.0f tokens/s during rollouts, "+
		"%.0f without tools (%.0f%%); %d tokens, %d tool calls (%d failed), tool p50 %.0f ms\n", median,
		res.OverlappedS, res.NaiveS, res.Speedup, res.DecodeTokensPerS, res.EngineOnlyTokensPerS,
		100*res.DecodeShare, res.GeneratedTokens, res.ToolCalls, res.FailedToolCalls, res.ToolP50MS)
	fmt.Fprintf(w, "with the %d appended tool-turn tokens, the engine ran %.0f%% of its rate alone during the overlapped run\n",
		res.AppendedTokens, 100*res.RowShare)
	if res.OutsideCPUShare > 0 {
		fmt.Fprintf(w, "during the overlapped run: each call's own processes %.1f ms of CPU; outside this process "+
			"(the sandbox at %s priority, and anything else on the machine) %.0f%% of all cores\n", res.ToolCallCPUMS,
			res.ToolPriority, 100*res.OutsideCPUShare)
	}
	if res.EngineCores > 0 {
		fmt.Fprintf(w, "this process used %.2f cores during the overlapped run and %.2f with the engine alone\n",
			res.EngineCores, res.EngineOnlyCores)
	}
	if res.CPUBoundShare > 0 {
		fmt.Fprintf(w, "with that CPU and the sandbox's on these %d cores, no schedule could decode faster than %.0f%% of the engine alone\n",
			runtime.NumCPU(), 100*res.CPUBoundShare)
	}
}

// presetPolicy is a random model of a preset with the byte-level chat tokenizer (what `gorstar
// model init --preset` writes; with words, also those as one token each), for benchmarks that need
// no directory.
func presetPolicy(preset string, seed int64, words ...string) (*model.Model, *tokenizer.Tokenizer, error) {
	raw, err := tokenizer.ByteLevelJSON(tokenizer.ChatSpecials, words...)
	if err != nil {
		return nil, nil, err
	}
	tok, err := tokenizer.Parse(raw)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := model.Preset(preset, tok.VocabSize())
	if err != nil {
		return nil, nil, err
	}
	m, err := model.New(cfg, uint64(seed))
	if err != nil {
		return nil, nil, err
	}
	return m, tok, nil
}

package cmd

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"gorstar/chat"
	"gorstar/data"
	"gorstar/eval"
	"gorstar/internal/atomicfile"
	"gorstar/internal/outpath"
	"gorstar/internal/usererr"
	"gorstar/tokenizer"
)

// Problems per pass-rate batch: enough samples in flight to fill the engine's batch many times
// over, few enough that the progress bar moves.
const passRateBatch = 256

func dataFilterFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "in", Usage: "input problems `IN`", Required: true},
		&cli.StringFlag{Name: "out", Usage: "output problems `OUT`", Required: true},
		&cli.BoolFlag{Name: "integer-answers", Usage: "keep only integer answers"},
		&cli.BoolFlag{Name: "dedup", Usage: "drop repeats of a problem (same text up to case, spacing and punctuation)"},
		&cli.StringSliceFlag{Name: "decontaminate", Usage: "drop problems sharing an n-gram with the problems of `EVAL` (repeatable)"},
		&cli.IntFlag{Name: "ngram", Value: 8, Usage: "words per n-gram for --decontaminate"},
		&cli.IntFlag{Name: "max-prompt-tokens", Usage: "drop problems whose rollout prompt (rollout.template, tool schema, primer) is longer than `N` tokens"},
		&cli.StringFlag{Name: "tokenizer", Usage: "`DIR` with tokenizer.json: counts --max-prompt-tokens (default --model), renders prompts for --endpoint"},
		&cli.Float64Flag{Name: "max-pass-rate", Usage: "keep only problems the policy solves in at most a share `F` of --samples samples (not solved 8/8: 0.875)"},
		&cli.StringFlag{Name: "model", Usage: "with --max-pass-rate: Hugging Face model `DIR` to sample natively"},
		&cli.StringSliceFlag{Name: "endpoint", Usage: "with --max-pass-rate: OpenAI-compatible server `URL` (repeatable; instead of --model)"},
		&cli.StringFlag{Name: "served-model", Usage: "with --endpoint: the model `NAME` the servers list"},
		&cli.IntFlag{Name: "samples", Usage: "with --max-pass-rate: samples per problem, `K` (default rl.hard_only_samples)"},
		&cli.IntFlag{Name: "concurrency", Value: 64, Usage: "with --max-pass-rate: samples in flight at once"},
		&cli.StringFlag{Name: "pass-rates", Usage: "with --max-pass-rate: write each sampled problem's pass rate to `OUT.jsonl`"},
	}
}

// filterResult is data's result with what the pass-rate check adds.
type filterResult struct {
	data.FilterResult
	Rated     int    `json:"rated,omitempty"`
	PassRates string `json:"pass_rates,omitempty"`
}

// checkFilterPaths refuses an --out or --pass-rates that would overwrite an input.
func checkFilterPaths(c *cli.Context) error {
	in, out := c.String("in"), c.String("out")
	if err := outpath.File("--out", out, append([]string{in}, c.StringSlice("decontaminate")...)...); err != nil {
		return err
	}
	if p := c.String("pass-rates"); p != "" {
		return outpath.File("--pass-rates", p, in, out)
	}
	return nil
}

// rankOut is where this rank writes: out on rank 0, a scratch file that cleanup removes on the
// others (they filter too, but only rank 0 writes --out).
func rankOut(o Options, out string) (string, func(), error) {
	if o.World.Root() {
		return out, func() {}, nil
	}
	scratch, err := os.MkdirTemp("", "gorstar-filter-rank-")
	if err != nil {
		return "", nil, err
	}
	return filepath.Join(scratch, filepath.Base(out)), func() { os.RemoveAll(scratch) }, nil
}

func dataFilter(c *cli.Context) (err error) {
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
	world, err := joinWorld(c, &o)
	if err != nil {
		return err
	}
	defer leaveWorld(world, &err)
	if err := checkFilterFlags(c); err != nil {
		return err
	}
	in, out := c.String("in"), c.String("out")
	if err := checkFilterPaths(c); err != nil {
		return err
	}
	fc, err := openFilterChecks(c, o)
	if err != nil {
		return err
	}
	defer fc.close()
	if err := announceWorld(c, world); err != nil {
		return err
	}
	out, cleanup, err := rankOut(o, out)
	if err != nil {
		return err
	}
	defer cleanup()
	fo := data.FilterOptions{
		In: in, Out: out,
		IntegerAnswers: c.Bool("integer-answers"),
		Dedup:          c.Bool("dedup"),
		Decontaminate:  c.StringSlice("decontaminate"),
		NGram:          c.Int("ngram"),
		Progress:       o.Progress(data.RowCount(in), "filter"),
	}
	if fc.Render != nil || fc.Rater != nil {
		fo.Check, fo.CheckBatch = fc.Check, passRateBatch
	}
	res, err := data.Filter(c.Context, fo)
	if err != nil {
		return err
	}
	if err := fc.commit(); err != nil {
		return err
	}
	full := filterResult{FilterResult: res, Rated: fc.Rated, PassRates: c.String("pass-rates")}
	if o.JSON {
		return printJSON(c, full)
	}
	dropped := "nothing dropped"
	if len(res.Dropped) > 0 {
		dropped = "dropped " + countsLine(res.Dropped)
	}
	fmt.Fprintf(c.App.Writer, "%s: kept %d of %d rows (%s)\n", res.Out, res.Rows, res.Read, dropped)
	return nil
}

// checkFilterFlags refuses flags that do nothing without the flag they serve, and values out of
// range, before anything is opened.
func checkFilterFlags(c *cli.Context) error {
	if c.IsSet("ngram") && len(c.StringSlice("decontaminate")) == 0 {
		return usererr.New("data filter: --ngram needs --decontaminate EVAL")
	}
	rated := c.IsSet("max-pass-rate")
	for _, f := range []string{"endpoint", "served-model", "samples", "concurrency", "pass-rates"} {
		if c.IsSet(f) && !rated {
			return usererr.New("data filter: --%s needs --max-pass-rate F", f)
		}
	}
	for _, f := range []string{"seed", "device", "threads"} {
		if setIn(c, f) != nil && !rated {
			return usererr.New("data filter: --%s needs --max-pass-rate F (it applies to the policy's sampling)", f)
		}
	}
	if c.IsSet("model") && !rated && !c.IsSet("max-prompt-tokens") {
		return usererr.New("data filter: --model needs --max-pass-rate F or --max-prompt-tokens N")
	}
	if c.IsSet("tokenizer") && !c.IsSet("endpoint") && !c.IsSet("max-prompt-tokens") {
		return usererr.New("data filter: --tokenizer needs --max-prompt-tokens N or --endpoint URL")
	}
	if c.IsSet("max-prompt-tokens") {
		if n := c.Int("max-prompt-tokens"); n < 1 {
			return usererr.New("data filter: --max-prompt-tokens must be ≥ 1, got %d", n)
		}
		if c.String("tokenizer") == "" && c.String("model") == "" {
			return usererr.New("data filter: --max-prompt-tokens needs --tokenizer DIR (or --model DIR) to count tokens")
		}
	}
	if !rated {
		return nil
	}
	if f := c.Float64("max-pass-rate"); !(f >= 0 && f <= 1) {
		return usererr.New("data filter: --max-pass-rate must be in [0, 1], got %g", f)
	}
	if c.IsSet("samples") && c.Int("samples") < 1 {
		return usererr.New("data filter: --samples must be ≥ 1, got %d", c.Int("samples"))
	}
	if c.IsSet("concurrency") && c.Int("concurrency") < 1 {
		return usererr.New("data filter: --concurrency must be ≥ 1, got %d", c.Int("concurrency"))
	}
	switch model, endpoints := c.String("model"), c.StringSlice("endpoint"); {
	case model == "" && len(endpoints) == 0:
		return usererr.New("data filter: --max-pass-rate needs --model DIR or --endpoint URL (the policy to sample)")
	case model != "" && len(endpoints) > 0:
		return usererr.New("data filter: give --model DIR or --endpoint URL, not both")
	case len(endpoints) > 0 && c.String("served-model") == "":
		return usererr.New("data filter: --endpoint needs --served-model NAME (the name the server lists)")
	case len(endpoints) > 0 && c.String("tokenizer") == "":
		return usererr.New("data filter: --endpoint needs --tokenizer DIR (the served model's tokenizer.json)")
	}
	return nil
}

// filterChecks are the checks data filter composes after data's rules: the prompt's length in
// tokens, then (on what is left) the policy's pass rate.
type filterChecks struct {
	eval.ProblemCheck
	rates  *atomicfile.File
	ratesW *bufio.Writer
}

// openFilterChecks loads the tokenizer and opens the policy the flags ask for (none: no checks).
func openFilterChecks(c *cli.Context, o Options) (*filterChecks, error) {
	fc := &filterChecks{}
	if c.IsSet("max-prompt-tokens") {
		tmpl, err := chat.LoadTemplate(o.Config.Rollout.Template)
		if err != nil {
			return nil, usererr.New("data filter: rollout.template %q: %v", o.Config.Rollout.Template, err)
		}
		dir := c.String("tokenizer")
		if dir == "" {
			dir = c.String("model")
		}
		tok, err := tokenizer.Load(dir)
		if err != nil {
			return nil, err
		}
		co := chat.DefaultOptions() // what rollouts render with, under the configured template
		co.Template = tmpl
		if fc.Render, err = chat.NewRenderer(tok, co); err != nil {
			return nil, usererr.New("data filter: %s: %v", dir, err)
		}
		fc.MaxPromptTokens = c.Int("max-prompt-tokens")
	}
	if !c.IsSet("max-pass-rate") {
		return fc, nil
	}
	if err := fc.openRater(c, o); err != nil {
		fc.close()
		return nil, err
	}
	return fc, nil
}

// openRater opens the policy with `gorstar eval`'s sampling ([eval] temperature and limits,
// rollout.top_p, strict grading) and --samples per problem, and starts the --pass-rates file.
func (fc *filterChecks) openRater(c *cli.Context, o Options) error {
	fc.MaxPassRate = c.Float64("max-pass-rate")
	cfg := o.Config.Eval
	cfg.Samples = o.Config.RL.HardOnlySamples
	if c.IsSet("samples") {
		cfg.Samples = c.Int("samples")
	}
	eo, err := evalPolicyOptions(c, o, cfg, o.Config.Rollout.TopP)
	if err != nil {
		return err
	}
	fc.Rater, err = eval.NewRater(c.Context, eo)
	if err != nil {
		return err
	}
	if p := c.String("pass-rates"); p != "" && o.World.Root() {
		if fc.rates, err = atomicfile.Create(p); err != nil {
			return err
		}
		fc.ratesW = bufio.NewWriter(fc.rates)
		fc.PassRates = json.NewEncoder(fc.ratesW)
	}
	return nil
}

// commit publishes the --pass-rates file once the filter succeeded.
func (fc *filterChecks) commit() error {
	if fc.rates == nil {
		return nil
	}
	if err := fc.ratesW.Flush(); err != nil {
		return err
	}
	return fc.rates.Commit()
}

func (fc *filterChecks) close() {
	if fc.rates != nil {
		fc.rates.Abort()
	}
	if fc.Rater != nil {
		fc.Rater.Close()
	}
}

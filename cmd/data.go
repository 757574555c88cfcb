package cmd

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"gorstar/data"
	"gorstar/internal/outpath"
)

func dataCommand() *cli.Command {
	return &cli.Command{
		Name:  "data",
		Usage: "import, synthesize, inspect, filter, split and export problem and conversation tables",
		Description: "Tables are Parquet (zstd) or JSONL, chosen by the file extension (.parquet, .jsonl, .jsonl.gz).\n" +
			"problems: id, problem, answer, source, meta (JSON); conversations: id, messages [{role, content, tool_calls, name}].",
		Subcommands: []*cli.Command{
			{
				Name:  "import",
				Usage: "convert JSONL, Parquet or verl/rStar2 files to a problems table",
				Description: "Columns are found under their usual names unless given: problem (" + strings.Join(data.DefaultProblemFields, ", ") +
					"), answer (" + strings.Join(data.DefaultAnswerFields, ", ") + "), id (" + strings.Join(data.DefaultIDFields, ", ") +
					"; missing ids become a hash of the problem). A chat-shaped problem (a list of {role, content}) gives its last user turn. " +
					"Dotted names reach into structs: --answer-col reward_model.ground_truth. Other columns go to meta. " +
					"Rows without a problem or an answer are skipped and counted. " +
					"Public evaluation sets are recognized by their columns (or named with --format): gsm8k (answer after ####), " +
					"math and minerva (answer = last \\boxed{} of the solution), math500, olympiadbench (final_answer list), " +
					"svamp and asdiv (problem = body + question; ASDiv units dropped), mawps, aime/amc (source from the URL).",
				Flags: []cli.Flag{
					&cli.StringSliceFlag{Name: "in", Usage: "input `PATH` (repeatable)", Required: true},
					&cli.StringFlag{Name: "out", Usage: "output `OUT.parquet` (or .jsonl)", Required: true},
					&cli.StringFlag{Name: "format", Value: "auto", Usage: "input format: auto, jsonl, parquet, verl, or a public evaluation layout: " + strings.Join(data.LayoutNames(), ", ")},
					&cli.StringFlag{Name: "source", Usage: "source `NAME` for every row (default: the set's name, a source column, else the file or folder name)"},
					&cli.StringFlag{Name: "problem-col", Usage: "field or column `C` holding the problem"},
					&cli.StringFlag{Name: "answer-col", Usage: "field or column `C` holding the reference answer"},
					&cli.StringFlag{Name: "id-col", Usage: "field or column `C` holding the id"},
					&cli.StringFlag{Name: "source-col", Usage: "field or column `C` holding the source (default: source, data_source, dataset, else the file name)"},
				},
				Action: dataImport,
			},
			{
				Name:  "synth",
				Usage: "generate problems with exact answers (task arith), or SFT conversations with --sft",
				Description: "arith: integers of --min-digits..--max-digits digits joined by operators from --ops, e.g. \"Compute 4821 * 739.\"\n" +
					"--sft writes conversations that demonstrate the multi-turn tool-call format: the problem, an assistant turn\n" +
					"calling Python, the tool's output and the boxed answer (the chat template adds the system turn with the tool\n" +
					"schema when they are rendered). Defaults come from [data.synth].",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "task", Usage: "generator `NAME`: arith (default data.synth.task)"},
					&cli.IntFlag{Name: "n", Usage: "rows to generate (default data.synth.train, or data.synth.sft with --sft)"},
					&cli.StringFlag{Name: "out", Usage: "output `OUT.parquet` (or .jsonl)", Required: true},
					&cli.BoolFlag{Name: "sft", Usage: "write conversations for SFT instead of problems"},
					&cli.IntFlag{Name: "min-digits", Usage: "fewest digits of an operand (default data.synth.min_digits)"},
					&cli.IntFlag{Name: "max-digits", Usage: "most digits of an operand (default data.synth.max_digits)"},
					&cli.IntFlag{Name: "operands", Usage: "numbers per expression (default data.synth.operands)"},
					&cli.StringFlag{Name: "ops", Usage: "operators to draw from, a subset of \"+-*\" (default data.synth.ops)"},
					&cli.StringFlag{Name: "exclude", Usage: "never generate a problem of this problem or conversation `FILE` (keeps a held-out set disjoint)"},
				},
				Action: dataSynth,
			},
			{
				Name:      "stats",
				Usage:     "count rows and answer kinds of a table",
				ArgsUsage: "PATH (or --in PATH)",
				Flags:     []cli.Flag{&cli.StringFlag{Name: "in", Usage: "input table `PATH` (instead of the argument)"}},
				Action:    dataStats,
			},
			{
				Name:  "filter",
				Usage: "drop problems by rule (non-integer answers, duplicates, overlap with evaluation sets), by prompt length, or by a policy's pass rate",
				Description: "Rules run first, then --max-prompt-tokens (the prompt a rollout starts from, rendered with rollout.template),\n" +
					"then --max-pass-rate on what is left: each problem is sampled --samples times by --model or --endpoint with eval's\n" +
					"settings ([eval] temperature, max_response_tokens, max_turns; strict grading) and kept when its share of correct samples\n" +
					"is at most F. rStar2's stage 3 keeps problems not solved 8/8: --samples 8 --max-pass-rate 0.875.",
				Flags:  dataFilterFlags(),
				Action: dataFilter,
			},
			{
				Name:  "split",
				Usage: "split a table into train and test at random (seeded by --seed)",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "in", Usage: "input table `IN`", Required: true},
					&cli.StringFlag{Name: "train", Usage: "output `A` for the rest", Required: true},
					&cli.StringFlag{Name: "test", Usage: "output `B` for the sample", Required: true},
					&cli.Float64Flag{Name: "test-size", Usage: "rows in the test side, `N` (or a fraction below 1)", Required: true},
				},
				Action: dataSplit,
			},
			{
				Name:  "export",
				Usage: "write a table as JSONL (or convert between .jsonl and .parquet); eval results and rollout traces export to JSONL, one row per line",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "in", Usage: "input table `IN`", Required: true},
					&cli.StringFlag{Name: "out", Usage: "output `X.jsonl` (.jsonl.gz and .parquet work too)", Required: true},
				},
				Action: dataExport,
			},
		},
	}
}

func dataImport(c *cli.Context) error {
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
	if err := outpath.File("--out", c.String("out"), c.StringSlice("in")...); err != nil {
		return err
	}
	opts := data.ImportOptions{
		Inputs: c.StringSlice("in"),
		Out:    c.String("out"),
		Format: c.String("format"),
		Source: c.String("source"),
		Mapping: data.Mapping{
			Problem: c.String("problem-col"),
			Answer:  c.String("answer-col"),
			ID:      c.String("id-col"),
			Source:  c.String("source-col"),
		},
		Progress: o.Progress(totalRows(c.StringSlice("in")), "import"),
	}
	res, err := data.Import(c.Context, opts)
	if err != nil {
		return err
	}
	if o.JSON {
		return printJSON(c, res)
	}
	if !o.Quiet {
		for _, ex := range res.Examples {
			fmt.Fprintf(c.App.ErrWriter, "skipped %s\n", ex)
		}
	}
	fmt.Fprintf(c.App.Writer, "%s: %d rows (%d skipped: %d without a problem, %d without an answer)\n",
		res.Out, res.Rows, res.Skipped, res.NoProblem, res.NoAnswer)
	return nil
}

// totalRows is the number of rows of the inputs when every one is Parquet (read from the footers),
// else -1 (unknown: the bar counts without a total).
func totalRows(paths []string) int64 {
	var total int64
	for _, p := range paths {
		n := data.RowCount(p)
		if n < 0 {
			return -1
		}
		total += n
	}
	return total
}

func dataSynth(c *cli.Context) error {
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
	s := o.Config.Data.Synth
	if c.IsSet("task") {
		s.Task = c.String("task")
	}
	n := s.Train
	if c.Bool("sft") {
		n = s.SFT
	}
	if c.IsSet("n") {
		n = c.Int("n")
	}
	arith := data.ArithOptions{MinDigits: s.MinDigits, MaxDigits: s.MaxDigits, Operands: s.Operands, Ops: s.Ops}
	if c.IsSet("min-digits") {
		arith.MinDigits = c.Int("min-digits")
		if !c.IsSet("max-digits") && arith.MaxDigits < arith.MinDigits {
			arith.MaxDigits = arith.MinDigits
		}
	}
	if c.IsSet("max-digits") {
		arith.MaxDigits = c.Int("max-digits")
		if !c.IsSet("min-digits") && arith.MinDigits > arith.MaxDigits {
			arith.MinDigits = arith.MaxDigits
		}
	}
	if c.IsSet("operands") {
		arith.Operands = c.Int("operands")
	}
	if c.IsSet("ops") {
		arith.Ops = c.String("ops")
	}
	out := c.String("out")
	if err := outpath.File("--out", out); err != nil {
		return err
	}
	rows, err := data.Synth(c.Context, data.SynthOptions{
		Task: s.Task, N: n, Out: out, SFT: c.Bool("sft"), RecoveryShare: s.SFTRecovery, RecoveryMasked: s.SFTRecoveryMasked, Seed: o.Seed, Arith: arith,
		Exclude: c.String("exclude"), Progress: o.Progress(int64(n), "synth"),
	})
	if err != nil {
		return err
	}
	table := "problems"
	if c.Bool("sft") {
		table = "conversations"
	}
	if o.JSON {
		return printJSON(c, map[string]any{"rows": rows, "out": out, "table": table, "task": s.Task, "seed": o.Seed})
	}
	fmt.Fprintf(c.App.Writer, "%s: %d %s (task %s, seed %d)\n", out, rows, table, s.Task, o.Seed)
	return nil
}

func dataStats(c *cli.Context) error {
	path, err := argOrFlag(c, "in", "PATH")
	if err != nil {
		return err
	}
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
	st, err := data.ComputeStats(c.Context, path)
	if err != nil {
		return err
	}
	if o.JSON {
		return printJSON(c, st)
	}
	w := c.App.Writer
	fmt.Fprintf(w, "%s: %s table, %d rows\ncolumns: %s\n", path, st.Table, st.Rows, strings.Join(st.Columns, ", "))
	if len(st.AnswerKinds) > 0 {
		fmt.Fprintf(w, "answer kinds: %s\n", countsLine(st.AnswerKinds))
	}
	if len(st.Sources) > 0 {
		fmt.Fprintf(w, "sources: %s\n", countsLine(st.Sources))
		fmt.Fprintf(w, "problem length: mean %.0f, max %d characters\n", st.MeanProblemLen, st.MaxProblemLen)
	}
	if st.Table == "conversations" {
		fmt.Fprintf(w, "messages: %d, tool calls: %d\n", st.Messages, st.ToolCalls)
	}
	return nil
}

// countsLine renders counts largest first: "integer 120, text 3".
func countsLine(m map[string]int) string {
	type kv struct {
		k string
		v int
	}
	var items []kv
	for k, v := range m {
		items = append(items, kv{k, v})
	}
	for i := 1; i < len(items); i++ { // insertion sort: a handful of items
		for j := i; j > 0 && (items[j].v > items[j-1].v || items[j].v == items[j-1].v && items[j].k < items[j-1].k); j-- {
			items[j], items[j-1] = items[j-1], items[j]
		}
	}
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = fmt.Sprintf("%s %d", it.k, it.v)
	}
	return strings.Join(parts, ", ")
}

func dataSplit(c *cli.Context) error {
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
	opts := data.SplitOptions{In: c.String("in"), Train: c.String("train"), Test: c.String("test"),
		TestSize: c.Float64("test-size"), Seed: o.Seed}
	if err := outpath.File("--train", opts.Train, opts.In); err != nil {
		return err
	}
	if err := outpath.File("--test", opts.Test, opts.In, opts.Train); err != nil {
		return err
	}
	res, err := data.Split(c.Context, opts)
	if err != nil {
		return err
	}
	if o.JSON {
		return printJSON(c, map[string]any{"train": res.Train, "test": res.Test, "train_out": opts.Train, "test_out": opts.Test, "seed": o.Seed})
	}
	fmt.Fprintf(c.App.Writer, "%s: %d rows, %s: %d rows (seed %d)\n", opts.Train, res.Train, opts.Test, res.Test, o.Seed)
	return nil
}

func dataExport(c *cli.Context) error {
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
	in, out := c.String("in"), c.String("out")
	if err := outpath.File("--out", out, in); err != nil {
		return err
	}
	rows, err := data.Export(c.Context, in, out, o.Progress(data.RowCount(in), "export"))
	if err != nil {
		return err
	}
	if o.JSON {
		return printJSON(c, map[string]any{"rows": rows, "out": out})
	}
	fmt.Fprintf(c.App.Writer, "%s: %d rows\n", out, rows)
	return nil
}

package cmd

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"gorstar/internal/atomicfile"
	"gorstar/internal/outpath"
	"gorstar/internal/usererr"
	"gorstar/reward"
)

func rewardCommand() *cli.Command {
	return &cli.Command{
		Name:  "reward",
		Usage: "grade final answers against references (the RL reward and the eval scorer)",
		Subcommands: []*cli.Command{
			{
				Name: "grade",
				Usage: "grade JSONL lines {\"response\": ..., \"answer\": ...} (optional \"truncated\": bool); " +
					"each output line adds \"correct\", \"extracted\" and \"reason\"",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "in", Usage: "input `PAIRS.jsonl` (- for standard input)"},
					&cli.StringFlag{Name: "out", Usage: "output `OUT.jsonl` (default: stdout, unless --json)"},
					&cli.StringFlag{Name: "mode", Usage: "strict or rstar2 (overrides reward.mode)"},
				},
				Action: rewardGrade,
			},
		},
	}
}

func rewardGrade(c *cli.Context) error {
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
	in := c.String("in")
	if in == "" {
		return usererr.New("reward grade: --in PAIRS.jsonl is required")
	}
	modeName := o.Config.Reward.Mode
	if c.IsSet("mode") {
		modeName = c.String("mode")
	}
	mode, err := reward.ParseMode(modeName)
	if err != nil {
		return usererr.New("reward grade: --mode: %v", err)
	}
	if out := c.String("out"); out != "" {
		if err := outpath.File("--out", out, in); err != nil {
			return err
		}
	}
	pairs, bad, err := readPairs(c.App.Reader, in, mode)
	if err != nil {
		return err
	}
	reportBadLines(c.App.ErrWriter, bad) // even under --quiet or --json: rows were left out
	bar := o.Progress(int64(len(pairs)), "grade")
	start := time.Now()
	correct := reward.GradePairs(pairs, o.Threads, bar.Add)
	elapsed := time.Since(start)
	bar.Finish()
	write := func(w io.Writer) error { return reward.WritePairs(w, pairs) }
	switch out := c.String("out"); {
	case out != "":
		if err := atomicfile.Write(out, write); err != nil {
			return fmt.Errorf("reward grade: write %s: %w", out, err)
		}
	case !o.JSON:
		if err := write(c.App.Writer); err != nil {
			return fmt.Errorf("reward grade: write stdout: %w", err)
		}
	}
	if o.JSON {
		perS := 0.0
		if elapsed > 0 {
			perS = float64(len(pairs)) / elapsed.Seconds()
		}
		return printJSON(c, map[string]any{"n": len(pairs), "correct": correct, "per_s": perS, "bad_lines": len(bad)})
	}
	if !o.Quiet {
		fmt.Fprintf(c.App.ErrWriter, "reward: %d/%d correct (mode %s)", correct, len(pairs), mode)
		if len(bad) > 0 {
			fmt.Fprintf(c.App.ErrWriter, "; %d bad lines not graded", len(bad))
		}
		fmt.Fprintln(c.App.ErrWriter)
	}
	return nil
}

// readPairs reads the pairs of path ("-": stdin).
func readPairs(stdin io.Reader, path string, mode reward.Mode) ([]*reward.Pair, []string, error) {
	src := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, usererr.New("reward grade: %v", err)
		}
		defer f.Close()
		src = f
	}
	return reward.ReadPairs(src, path, mode)
}

// reportBadLines names the lines left out, five at most, one line each.
func reportBadLines(w io.Writer, bad []string) {
	for i, b := range bad {
		if i == 5 {
			fmt.Fprintf(w, "reward grade: %d more bad lines not graded\n", len(bad)-5)
			return
		}
		fmt.Fprintf(w, "reward grade: not graded: %s\n", b)
	}
}

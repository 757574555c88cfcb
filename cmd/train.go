package cmd

import (
	"io"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"gorstar/internal/usererr"
	"gorstar/train"
)

func trainCommand() *cli.Command {
	return &cli.Command{
		Name:  "train",
		Usage: "the whole pipeline: data → model init → SFT → eval → RL stages, each followed by an eval → summary and report",
		Description: "With no --config, the built-in quickstart (`gorstar config show`). Outputs go to the run directory\n" +
			"(--run-dir, default run.dir/run.name). Running the same command again skips finished stages and resumes an\n" +
			"interrupted one. Stages: data, init (without model.path), sft, eval-sft, rl, eval-<rl stage>..., summary.\n" +
			"--from STAGE and --only STAGE redo the stages they select from scratch. Each stage's equivalent single\n" +
			"command is recorded in RUN/commands.sh. Ends with a table of held-out accuracy per stage (--json: the final\n" +
			"eval summary with \"sft_eval\" and \"stages\").",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "from", Usage: "redo `STAGE` and every later stage"},
			&cli.StringFlag{Name: "only", Usage: "redo `STAGE` alone"},
		},
		Action: trainRun,
	}
}

func trainRun(c *cli.Context) (err error) {
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
	world, err := joinWorld(c, &o)
	if err != nil {
		return err
	}
	defer leaveWorld(world, &err)
	if c.NArg() > 0 {
		return usererr.New("train: unexpected argument %q (see `gorstar train --help`)", c.Args().First())
	}
	dir := filepath.Join(o.Config.Run.Dir, o.Config.Run.Name)
	if ctx := setIn(c, "run-dir"); ctx != nil {
		dir = ctx.String("run-dir")
	}
	if err := initKernels(o); err != nil {
		return err
	}
	if err := announceWorld(c, world); err != nil {
		return err
	}
	var log io.Writer = c.App.ErrWriter
	if o.Quiet {
		log = io.Discard
	}
	res, err := train.Run(c.Context, train.Options{Config: *o.Config, Dir: dir, From: c.String("from"),
		Only: c.String("only"), Version: version, Log: log, Quiet: o.Quiet, World: world})
	if err != nil {
		return err
	}
	if o.JSON {
		return printJSON(c, res)
	}
	return train.WriteTable(c.App.Writer, res)
}

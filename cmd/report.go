package cmd

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"gorstar/train"
)

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "write RUN_DIR/report.html: charts of the run's metrics, the eval table, sample trajectories",
		ArgsUsage: "RUN_DIR",
		Description: "The page is one self-contained file (inline SVG and CSS, no script, nothing fetched). A run in\n" +
			"progress gets a report of what it has written so far.",
		Action: reportRun,
	}
}

func reportRun(c *cli.Context) error {
	dir, err := oneArg(c, "RUN_DIR")
	if err != nil {
		return err
	}
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
	path, err := train.WriteReport(dir)
	if err != nil {
		return err
	}
	if o.JSON {
		return printJSON(c, map[string]any{"report": path})
	}
	fmt.Fprintf(c.App.Writer, "wrote %s\n", path)
	return nil
}

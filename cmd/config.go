package cmd

import (
	"fmt"

	"github.com/pelletier/go-toml/v2"
	"github.com/urfave/cli/v2"

	"gorstar/config"
)

func configCommand() *cli.Command {
	return &cli.Command{
		Name:  "config",
		Usage: "show or check pipeline configuration",
		Subcommands: []*cli.Command{
			{
				Name:      "show",
				Usage:     "print the resolved configuration (defaults ← --config ← --set) as commented TOML",
				ArgsUsage: " ",
				Action:    configShow,
			},
			{
				Name:      "check",
				Usage:     "validate a configuration file",
				ArgsUsage: "FILE.toml",
				Action:    configCheck,
			},
			{
				Name:   "keys",
				Usage:  "list every configuration key",
				Action: configKeys,
			},
		},
	}
}

func configShow(c *cli.Context) error {
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
	text, err := o.Config.TOML()
	if err != nil {
		return err
	}
	if o.JSON {
		var tree map[string]any
		if err := toml.Unmarshal(text, &tree); err != nil {
			return fmt.Errorf("config show: %w", err)
		}
		return printJSON(c, tree)
	}
	_, err = c.App.Writer.Write(text)
	return err
}

func configCheck(c *cli.Context) error {
	path, err := oneArg(c, "FILE.toml")
	if err != nil {
		return err
	}
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
	cfg, err := config.Load(path)
	if err != nil {
		return err
	}
	printWarnings(c, cfg.Warnings())
	if err := cfg.Validate(); err != nil {
		if located := config.Locate(err, path, nil); located != err {
			return located
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	if o.JSON {
		return printJSON(c, map[string]any{"file": path, "ok": true})
	}
	fmt.Fprintf(c.App.Writer, "%s: ok\n", path)
	return nil
}

func configKeys(c *cli.Context) error {
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
	keys := config.Keys()
	if o.JSON {
		return printJSON(c, map[string]any{"keys": keys})
	}
	for _, k := range keys {
		fmt.Fprintln(c.App.Writer, k)
	}
	return nil
}

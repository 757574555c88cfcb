package cmd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"gorstar/config"
	"gorstar/dist"
	"gorstar/internal/plainjson"
	"gorstar/internal/progress"
	"gorstar/internal/usererr"
)

// Options are the global flags, resolved, with the configuration they select.
type Options struct {
	Config  *config.Config // Default ← --config file ← --set ← --seed/--threads/--device, validated
	JSON    bool           // print one summary object on stdout and nothing else there
	Quiet   bool           // no progress, no chatter on stderr
	Seed    int64
	Threads int
	Device  string
	World   *dist.World // the launcher's job this process is a rank of (joinWorld); nil: alone
}

func globalFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "config", Usage: "pipeline configuration `FILE.toml` (see `gorstar config show`)"},
		&cli.StringSliceFlag{Name: "set", Usage: "override a config key: `key.path=value` (repeatable)"},
		&cli.StringFlag{Name: "run-dir", Usage: "run directory `DIR` of the training and evaluation commands (default: run.dir/run.name)"},
		&cli.Int64Flag{Name: "seed", Usage: "random seed (overrides run.seed)"},
		&cli.StringFlag{Name: "device", Usage: "compute device: cpu, rocm[:N], cuda[:N] or auto (overrides run.device; see `gorstar doctor`)"},
		&cli.IntFlag{Name: "threads", Usage: "CPU threads for kernels, 0 = all cores (overrides run.threads)"},
		&cli.BoolFlag{Name: "json", Usage: "print one JSON summary object on stdout"},
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress output"},
	}
}

// addGlobalFlags lets every command take the global flags after its name too. A command that
// defines a flag of the same name keeps its own.
func addGlobalFlags(cmds []*cli.Command) {
	for _, cmd := range cmds {
		for _, g := range globalFlags() {
			if !slices.ContainsFunc(cmd.Flags, func(f cli.Flag) bool { return slices.Contains(f.Names(), g.Names()[0]) }) {
				cmd.Flags = append(cmd.Flags, g)
			}
		}
		if cmd.OnUsageError == nil {
			cmd.OnUsageError = usageError
		}
		addGlobalFlags(cmd.Subcommands)
	}
}

// setIn returns the innermost context in which flag name was given on the command line.
func setIn(c *cli.Context, name string) *cli.Context {
	for _, ctx := range c.Lineage() {
		if ctx != nil && slices.Contains(ctx.LocalFlagNames(), name) {
			return ctx
		}
	}
	return nil
}

// globalOptions resolves the global flags wherever they were given and loads the configuration.
func globalOptions(c *cli.Context) (Options, error) {
	var o Options
	str := func(name string) string {
		if ctx := setIn(c, name); ctx != nil {
			return ctx.String(name)
		}
		return ""
	}
	o.JSON = setIn(c, "json") != nil && setIn(c, "json").Bool("json")
	o.Quiet = o.JSON || (setIn(c, "quiet") != nil && setIn(c, "quiet").Bool("quiet"))
	cfg, err := config.Load(str("config"))
	if err != nil {
		return o, err
	}
	// --set values apply outermost first, so a later (inner) one wins. The keys they and the
	// global flags set are not the file's, so a bad value there is not reported at a file line.
	var overridden []string
	lineage := c.Lineage()
	for i := len(lineage) - 1; i >= 0; i-- {
		ctx := lineage[i]
		if ctx == nil || !slices.Contains(ctx.LocalFlagNames(), "set") {
			continue
		}
		for _, s := range ctx.StringSlice("set") {
			if err := cfg.Set(s); err != nil {
				return o, err
			}
			key, _, _ := strings.Cut(s, "=")
			overridden = append(overridden, strings.TrimSpace(key))
		}
	}
	printWarnings(c, cfg.Warnings())
	if ctx := setIn(c, "seed"); ctx != nil {
		cfg.Run.Seed = ctx.Int64("seed")
		overridden = append(overridden, "run.seed")
	}
	if ctx := setIn(c, "threads"); ctx != nil {
		cfg.Run.Threads = ctx.Int("threads")
		overridden = append(overridden, "run.threads")
	}
	if d := str("device"); d != "" {
		cfg.Run.Device = d
		overridden = append(overridden, "run.device")
	}
	if err := cfg.Validate(); err != nil {
		return o, config.Locate(err, str("config"), overridden)
	}
	o.Config = &cfg
	o.Seed, o.Threads, o.Device = cfg.Run.Seed, cfg.Run.Threads, cfg.Run.Device
	return o, nil
}

// printWarnings writes one "gorstar: warning: …" line on stderr for each of warnings.
func printWarnings(c *cli.Context, warnings []string) {
	for _, w := range warnings {
		fmt.Fprintf(c.App.ErrWriter, "gorstar: warning: %s\n", w)
	}
}

// Progress starts a progress bar on stderr honouring --quiet and --json.
func (o Options) Progress(total int64, desc string) *progress.Bar {
	return progress.New(total, desc, progress.Options{Quiet: o.Quiet})
}

// printJSON writes v as one JSON object on one line of stdout.
func printJSON(c *cli.Context, v any) error {
	return plainjson.NewEncoder(c.App.Writer).Encode(v)
}

// oneArg returns the single positional argument of a command, or a usage error naming what it is.
func oneArg(c *cli.Context, what string) (string, error) {
	if c.NArg() != 1 {
		name := commandPath(c)
		return "", usererr.New("%s: expected one %s argument, got %d (see `%s --help`)",
			strings.TrimPrefix(name, "gorstar "), what, c.NArg(), name)
	}
	return c.Args().First(), nil
}

// Package cmd is gorstar's command line: the urfave/cli application, one file per command group,
// the global flags and their resolution (globals.go). A handler turns flags into options, calls
// the package that owns the capability and prints its result: the model benches run in package
// bench, exec bench in pytool, chat's turns in rollout (Conversation), grading in reward, data
// filter's model checks in eval (ProblemCheck), memory estimates in model and engine. What stays
// here is command-line work: checking flags and paths, refusing what would not fit in memory
// (limits.go), the global flags each command acts on (globaluse.go), and the printing. The
// Python tool is package pytool.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"gorstar/internal/usererr"
	"gorstar/kernels"
)

// version is set at build time with -ldflags "-X gorstar/cmd.version=…".
var version = "0.1.0-dev"

func newApp() *cli.App {
	app := &cli.App{
		Name:                 "gorstar",
		Usage:                "train math agents that call a Python tool: SFT → GRPO-RoC RL → eval (rStar2-Agent)",
		Version:              version,
		Description:          "Global flags may also follow a command's name: `gorstar data stats --json FILE`.",
		Flags:                globalFlags(),
		EnableBashCompletion: true,
		// Repeatable flags are repeated: a comma belongs to the value (`--set exec.modules=math,sympy`).
		DisableSliceFlagSeparator: true,
		Commands: []*cli.Command{
			trainCommand(),
			sftCommand(),
			rlCommand(),
			evalCommand(),
			rolloutCommand(),
			reportCommand(),
			dataCommand(),
			execCommand(),
			rewardCommand(),
			modelCommand(),
			serveCommand(),
			chatCommand(),
			configCommand(),
			doctorCommand(),
			gpuProbeCommand(),
		},
	}
	cli.VersionPrinter = func(c *cli.Context) {
		fmt.Fprintf(c.App.Writer, "gorstar %s (kernels: %s)\n", c.App.Version, kernels.Backend())
	}
	addGlobalFlags(app.Commands)
	resolveRenamed(app.Commands)
	showRealDefaults(app.Commands, app.Flags)
	app.OnUsageError = usageError
	app.ExitErrHandler = func(*cli.Context, error) {} // main decides the exit status
	return app
}

// Main executes the command line args (program name first) and returns the exit status: 0 success,
// 1 user error, 2 internal error, 130 interrupted. SIGINT and SIGTERM cancel the command's context.
func Main(args []string, stdout, stderr io.Writer) int {
	kernels.ExecWithOpenMPEnv(args) // a short OpenMP spin, unless the user chose one
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, args, os.Stdin, stdout, stderr)
}

// run is Main with the context and standard input given, so tests run the CLI in-process.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (status int) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "gorstar: internal error: %v\n%s", p, debug.Stack())
			status = 2
		}
	}()
	app := newApp()
	app.Reader, app.Writer, app.ErrWriter = stdin, stdout, stderr
	args, err := normalizeArgs(app, args)
	if err == nil {
		err = app.RunContext(ctx, args)
	}
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "gorstar: %s\n", errorLine(err))
	if isUserError(err) {
		return 1
	}
	if errors.Is(err, context.Canceled) {
		return 130
	}
	return 2
}

func isUserError(err error) bool {
	if usererr.Is(err) {
		return true
	}
	var exit cli.ExitCoder
	if errors.As(err, &exit) {
		return true // urfave's own "no such command" and friends
	}
	// urfave reports missing required flags with an unexported type.
	if strings.HasPrefix(err.Error(), "Required flag") || strings.HasPrefix(err.Error(), "Required flags") {
		return true
	}
	return isPathMistake(err) || isOutOfMemory(err)
}

func usageError(c *cli.Context, err error, _ bool) error {
	name := commandPath(c)
	if name == "gorstar" {
		return usererr.New("%v (see `gorstar --help`)", err)
	}
	return usererr.New("%s: %v (see `%s --help`)", strings.TrimPrefix(name, "gorstar "), err, name)
}

// commandPath is the full command as typed, e.g. "gorstar data import".
func commandPath(c *cli.Context) string {
	if c.Command != nil && c.Command.HelpName != "" {
		return c.Command.HelpName
	}
	return "gorstar"
}

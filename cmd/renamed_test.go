package cmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// renamedApp is a one-command app with new names and their old spellings of three flag types;
// its action records what the handler reads under the new names.
func renamedApp(got *[]string) *cli.App {
	app := &cli.App{
		Name: "gorstar",
		Commands: []*cli.Command{{
			Name: "x",
			Flags: withRenamed([]cli.Flag{
				&cli.BoolFlag{Name: "no-tool"},
				&cli.IntFlag{Name: "max-turn-tokens", Value: 7},
				&cli.StringSliceFlag{Name: "endpoint"},
			}, map[string][]string{"no-tool": {"no-tools"}, "max-turn-tokens": {"max-tokens"}, "endpoint": {"endpoints"}}),
			Action: func(c *cli.Context) error {
				*got = []string{strings.Join([]string{
					boolWord(c.Bool("no-tool")), c.String("max-turn-tokens"), strings.Join(c.StringSlice("endpoint"), ","),
				}, " ")}
				return nil
			},
		}},
	}
	resolveRenamed(app.Commands)
	app.ExitErrHandler = func(*cli.Context, error) {}
	return app
}

func boolWord(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func TestRenamedFlags(t *testing.T) {
	for _, c := range []struct {
		args     []string
		want     string
		warnings []string
	}{
		{[]string{"x"}, "false 7 ", nil},
		{[]string{"x", "--no-tool", "--max-turn-tokens", "3", "--endpoint", "a"}, "true 3 a", nil},
		{[]string{"x", "--no-tools", "--max-tokens", "3", "--endpoints", "a", "--endpoints", "b"}, "true 3 a,b",
			[]string{"--no-tools", "--max-tokens", "--endpoints"}},
		{[]string{"x", "--max-tokens=5"}, "false 5 ", []string{"--max-tokens"}},
	} {
		var got []string
		var errOut bytes.Buffer
		app := renamedApp(&got)
		app.ErrWriter = &errOut
		if err := app.Run(append([]string{"gorstar"}, c.args...)); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("%v: handler read %q, want %q", c.args, got, c.want)
		}
		lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
		if len(c.warnings) == 0 && errOut.Len() != 0 {
			t.Errorf("%v: warned %q, want nothing", c.args, errOut.String())
		}
		if len(c.warnings) > 0 && len(lines) != len(c.warnings) {
			t.Errorf("%v: warnings %q, want one line for each of %v", c.args, lines, c.warnings)
		}
		for _, w := range c.warnings {
			if !slices.ContainsFunc(lines, func(l string) bool {
				return strings.HasPrefix(l, "gorstar: warning: "+w+" is deprecated; use --")
			}) {
				t.Errorf("%v: no deprecation warning for %s in %q", c.args, w, errOut.String())
			}
		}
	}
}

func TestRenamedFlagBothSpellings(t *testing.T) {
	var got []string
	app := renamedApp(&got)
	app.ErrWriter = &bytes.Buffer{}
	err := app.Run([]string{"gorstar", "x", "--max-tokens", "3", "--max-turn-tokens", "4"})
	if err == nil || !strings.Contains(err.Error(), "give only --max-turn-tokens") {
		t.Fatalf("both spellings: err %v, want one naming the flag to give", err)
	}
}

// The old spellings of the real commands stay out of help, read their values (a bool old
// spelling does not swallow the next word) and warn once each.
func TestRenamedFlagsOfCommands(t *testing.T) {
	for _, c := range []struct{ cmd, old, canonical string }{
		{"chat", "no-tools", "no-tool"},
		{"chat", "max-tokens", "max-turn-tokens"},
		{"chat", "served-model-name", "served-model"},
		{"serve", "served-model-name", "served-model"},
		{"eval", "max-tokens", "max-response-tokens"},
		{"rollout", "max-tokens", "max-response-tokens"},
		{"rollout bench", "rollouts", "trajectories"},
		{"sft bench", "tokens-per-step", "batch-tokens"},
	} {
		help := runCLI(t, append(strings.Fields(c.cmd), "--help")...).Stdout
		if strings.Contains(help, "--"+c.old+" ") || !strings.Contains(help, "--"+c.canonical) {
			t.Errorf("%s --help: want --%s shown and --%s hidden:\n%s", c.cmd, c.canonical, c.old, help)
		}
	}
	missing := filepath.Join(t.TempDir(), "missing")
	r := runCLIWith(context.Background(), "", "chat", "--no-tools", "--model", missing, "--max-tokens", "0")
	if r.Code != 1 {
		t.Fatalf("chat with a bad --max-tokens: %+v", r)
	}
	for _, w := range []string{
		"gorstar: warning: --no-tools is deprecated; use --no-tool\n",
		"gorstar: warning: --max-tokens is deprecated; use --max-turn-tokens\n",
	} {
		if strings.Count(r.Stderr, w) != 1 {
			t.Errorf("stderr %q: want %q once", r.Stderr, w)
		}
	}
	if !strings.Contains(r.Stderr, "--max-turn-tokens: must be in 1..") {
		t.Errorf("stderr %q: the old spelling's value 0 did not reach --max-turn-tokens", r.Stderr)
	}
}

// A config key under its old name works from the file and from --set, with one warning line.
func TestRenamedConfigKeys(t *testing.T) {
	p := filepath.Join(t.TempDir(), "old.toml")
	if err := os.WriteFile(p, []byte("[exec]\ntool_text_chars = 300\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "config", "check", p)
	want := "gorstar: warning: " + p + ":2: exec.tool_text_chars is deprecated; use rollout.tool_text_chars\n"
	if r.Code != 0 || r.Stderr != want {
		t.Errorf("config check: %+v, want stderr %q", r, want)
	}
	r = runCLI(t, "config", "show", "--config", p, "--set", "eval.max_tokens=99")
	if r.Code != 0 || !strings.Contains(r.Stdout, "\ntool_text_chars = 300\n") || !strings.Contains(r.Stdout, "\nmax_response_tokens = 99\n") {
		t.Fatalf("config show with old names: %+v", r)
	}
	for _, w := range []string{"exec.tool_text_chars is deprecated", "--set: eval.max_tokens is deprecated; use eval.max_response_tokens"} {
		if strings.Count(r.Stderr, w) != 1 {
			t.Errorf("stderr %q: want %q once", r.Stderr, w)
		}
	}
}

// normalizeArgs moves a command's flags before its positional arguments: an old spelling of a
// bool flag must not take the next word as its value, an old spelling of a valued one must.
func TestRenamedFlagsTakeValuesAsTheirNewNames(t *testing.T) {
	flags := chatCommand().Flags
	for word, want := range map[string]bool{"--no-tools": false, "--no-tool": false, "--max-tokens": true, "--served-model-name": true} {
		if got := takesValue(flags, word); got != want {
			t.Errorf("takesValue(%s) = %v, want %v", word, got, want)
		}
	}
}

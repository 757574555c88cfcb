package cmd

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestVersionNamesBackend(t *testing.T) {
	r := runCLI(t, "--version")
	if r.Code != 0 || !strings.Contains(r.Stdout, "gorstar ") || !strings.Contains(r.Stdout, "kernels: ") {
		t.Fatalf("%+v", r)
	}
}

func TestGlobalFlagsBeforeAndAfterCommand(t *testing.T) {
	before := runCLI(t, "--json", "--set", "rl.lr=0.5", "config", "show")
	after := runCLI(t, "config", "show", "--json", "--set", "rl.lr=0.5")
	for _, r := range []cliResult{before, after} {
		if r.Code != 0 {
			t.Fatalf("%+v", r)
		}
		m := decodeJSON(t, r)
		if m["rl"].(map[string]any)["lr"] != 0.5 {
			t.Fatalf("--set not applied: %v", m["rl"])
		}
	}
	// The innermost --set wins.
	r := runCLI(t, "--set", "rl.lr=0.1", "config", "show", "--json", "--set", "rl.lr=0.2")
	if decodeJSON(t, r)["rl"].(map[string]any)["lr"] != 0.2 {
		t.Fatalf("inner --set lost: %s", r.Stdout)
	}
	r = runCLI(t, "config", "show", "--json", "--seed", "42", "--threads", "3", "--device", "rocm:1")
	run := decodeJSON(t, r)["run"].(map[string]any)
	if run["seed"] != 42.0 || run["threads"] != 3.0 || run["device"] != "rocm:1" {
		t.Fatalf("global flags not applied: %v", run)
	}
}

func TestUserErrorsExitOneWithOneLine(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "run.toml")
	os.WriteFile(bad, []byte("[rl]\nlr = 1e-6\nlrr = 2\n"), 0o644)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"config", "check", bad}, `run.toml:3: unknown key "rl.lrr" (did you mean "rl.lr"?)`},
		{[]string{"config", "show", "--config", bad}, `run.toml:3: unknown key "rl.lrr"`},
		{[]string{"config", "show", "--set", "rl.roc=sometimes"}, `rl.roc: must be one of paper, release, none`},
		{[]string{"config", "show", "--device", "gpu"}, `run.device: must be cpu, rocm[:N], cuda[:N] or auto`},
		{[]string{"config", "check"}, `config check: expected one FILE.toml argument`},
		{[]string{"config", "check", filepath.Join(dir, "missing.toml")}, `missing.toml: no such file or directory`},
		{[]string{"config", "show", "--bogus"}, `flag provided but not defined: -bogus`},
		{[]string{"no-such-command"}, `no-such-command`},
	}
	for _, c := range cases {
		r := runCLI(t, c.args...)
		if r.Code != 1 {
			t.Errorf("%v: exit %d, want 1 (%q)", c.args, r.Code, r.Stderr)
		}
		if !strings.Contains(r.Stderr, c.want) {
			t.Errorf("%v: stderr %q lacks %q", c.args, r.Stderr, c.want)
		}
		if n := strings.Count(strings.TrimSpace(r.Stderr), "\n"); n != 0 && !strings.Contains(r.Stderr, "Usage") {
			t.Errorf("%v: error is not one line: %q", c.args, r.Stderr)
		}
	}
}

func TestConfigCheckOK(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ok.toml")
	os.WriteFile(p, []byte("[rl]\nlr = 1e-6\n[[rl.stages]]\nname = \"s1\"\nsteps = 3\nmax_response_tokens = 64\nmax_turns = 2\n"), 0o644)
	r := runCLI(t, "config", "check", "--json", p)
	if r.Code != 0 || decodeJSON(t, r)["ok"] != true {
		t.Fatalf("%+v", r)
	}
}

// Help text names only commands that exist: "`gorstar X …`" anywhere in the help of the app or of
// a command must have X among the commands.
func TestHelpAdvertisesOnlyExistingCommands(t *testing.T) {
	app := newApp()
	pages := []cliResult{runCLI(t, "--help")}
	for _, c := range app.Commands {
		pages = append(pages, runCLI(t, c.Name, "--help"))
		for _, sub := range c.Subcommands {
			pages = append(pages, runCLI(t, c.Name, sub.Name, "--help"))
		}
	}
	mention := regexp.MustCompile("`gorstar ([a-z][a-z-]*)")
	for _, p := range pages {
		for _, m := range mention.FindAllStringSubmatch(p.Stdout, -1) {
			if app.Command(m[1]) == nil {
				t.Errorf("help advertises `gorstar %s`, which does not exist:\n%s", m[1], p.Stdout)
			}
		}
	}
}

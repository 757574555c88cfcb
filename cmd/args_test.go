package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNormalizeArgsMovesFlagsBeforePositionals(t *testing.T) {
	cases := []struct{ in, want string }{
		{"data stats x.parquet --json", "data stats --json x.parquet"},
		{"--json data stats x.parquet", "--json data stats x.parquet"},
		{"data --json stats x.parquet --quiet", "data --json stats --quiet x.parquet"},
		{"model info m/tiny --json", "model info --json m/tiny"},
		{"exec run a.py --json --timeout 4s", "exec run --json --timeout 4s a.py"},
		{"exec run - --json", "exec run --json -"},
		{"exec bench --calls -5", "exec bench --calls -5"},
		{"config check a.toml --set rl.lr=1 --set=rl.roc=none", "config check --set rl.lr=1 --set=rl.roc=none a.toml"},
		{"--config run.toml config show", "--config run.toml config show"},
		{"exec run --json -- -weird.py", "exec run --json -- -weird.py"},
		{"exec run -- a.py --json", "exec run -- a.py --json"},
		{"help data", "help data"},
		{"data", "data"},
		{"data stats --help", "data stats --help"},
		{"serve --help", "serve --help"},
	}
	for _, c := range cases {
		got, err := normalizeArgs(newApp(), append([]string{"gorstar"}, strings.Fields(c.in)...))
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if g := strings.Join(got[1:], " "); g != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.in, g, c.want)
		}
	}
}

func TestNormalizeArgsRefusals(t *testing.T) {
	var names []string // the list follows the commands as they are added
	for _, c := range newApp().Commands {
		if !c.Hidden && c.Name != "help" {
			names = append(names, c.Name)
		}
	}
	cases := []struct{ in, want string }{
		{"dat", `unknown command "dat"; did you mean "data"?`},
		{"trian", `unknown command "trian"; did you mean "train"?`},
		{"data statz x", `unknown command "data statz"; did you mean "data stats"?`},
		{"xyzzy", `(commands: ` + strings.Join(names, ", ") + "; see `gorstar --help`)"},
		{"data import --in x", "data import: missing required flag --out"},
		{"data split --in x", "data split: missing required flags --train, --test, --test-size"},
	}
	for _, c := range cases {
		_, err := normalizeArgs(newApp(), append([]string{"gorstar"}, strings.Fields(c.in)...))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.in, err, c.want)
		}
	}
}

// Flags after a positional argument act as before it.
func TestFlagsAfterPositionals(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "p.jsonl")
	os.WriteFile(p, []byte(badProblems), 0o644)
	for _, args := range [][]string{{"data", "stats", p, "--json"}, {"data", "stats", "--in", p, "--json"}} {
		r := runCLI(t, args...)
		if r.Code != 0 || decodeJSON(t, r)["rows"] != 2.0 {
			t.Errorf("%v: %+v", args, r)
		}
	}
}

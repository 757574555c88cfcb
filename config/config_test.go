package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorstar/internal/usererr"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "run.toml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaultIsValidAndRoundTrips(t *testing.T) {
	d := Default()
	if err := d.Validate(); err != nil {
		t.Fatalf("default config invalid: %v", err)
	}
	text, err := d.TOML()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Load(writeConfig(t, string(text)))
	if err != nil {
		t.Fatalf("reload of rendered default: %v\n%s", err, text)
	}
	again, _ := back.TOML()
	if string(again) != string(text) {
		t.Fatalf("render/reload changed the config:\n%s\nvs\n%s", text, again)
	}
}

func TestStrictErrors(t *testing.T) {
	cases := []struct {
		name, body, want string
	}{
		{"unknown key with suggestion", "[run]\nseed = 3\n\n[rl]\nlr = 1e-6\nlrr = 2\n", `run.toml:6: unknown key "rl.lrr" (did you mean "rl.lr"?)`},
		{"unknown section", "[rll]\nlr = 1\n", `run.toml:1: unknown key "rll" (did you mean "rl"?)`},
		{"unknown key no suggestion", "[eval]\nzzzzzzzz = 1\n", `run.toml:2: unknown key "eval.zzzzzzzz"`},
		{"unknown key in stage", "[[rl.stages]]\nname = \"a\"\nstepz = 3\n", `run.toml:3: unknown key "rl.stages.stepz" (did you mean "rl.stages.steps"?)`},
		{"wrong type", "[rl]\ngroup_size = \"many\"\n", `run.toml:2:`},
		{"bad syntax", "[rl\n", `run.toml:1:`},
		{"bad duration", "[rollout]\nmax_turns = 3.5\n", `run.toml:2:`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(writeConfig(t, c.body))
			if err == nil {
				t.Fatal("no error")
			}
			if !usererr.Is(err) {
				t.Errorf("not a user error: %v", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) {
				t.Errorf("got %q, want it to contain %q", msg, c.want)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
		})
	}
}

func TestMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.toml"))
	if err == nil || !usererr.Is(err) || !strings.Contains(err.Error(), "nope.toml") {
		t.Fatalf("got %v", err)
	}
}

func TestSet(t *testing.T) {
	c := Default()
	for _, s := range []string{
		"rl.lr=1e-6", "run.name=exp1", `run.device="rocm:1"`, "rl.stages.0.max_turns=15",
		"rl.stages.3.name=stage4", "rollout.endpoints=[\"http://127.0.0.1:8000\"]", "sft.schedule=constant",
	} {
		if err := c.Set(s); err != nil {
			t.Fatalf("set %s: %v", s, err)
		}
	}
	if c.RL.LR != 1e-6 || c.Run.Name != "exp1" || c.Run.Device != "rocm:1" || c.RL.Stages[0].MaxTurns != 15 {
		t.Fatalf("overrides not applied: %+v", c)
	}
	if len(c.RL.Stages) != 4 || c.RL.Stages[3].Name != "stage4" || c.RL.Stages[3].Steps != c.RL.Stages[2].Steps {
		t.Fatalf("append by index failed: %+v", c.RL.Stages)
	}
	if len(c.Rollout.Endpoints) != 1 {
		t.Fatalf("list override failed: %v", c.Rollout.Endpoints)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []struct{ set, want string }{
		{"rl.lrr=1", `unknown key "rl.lrr" (did you mean "rl.lr"?)`},
		{"rl.group_size=many", "want an integer"},
		{"rl.stages.9.steps=1", "needs an index"},
		{"rl", "expected key.path=value"},
		{"rl.lr.x=1", "is a value"},
	}
	for _, b := range bad {
		err := c.Set(b.set)
		if err == nil || !usererr.Is(err) || !strings.Contains(err.Error(), b.want) {
			t.Errorf("set %s: got %v, want %q", b.set, err, b.want)
		}
	}
}

func TestValidateNamesKey(t *testing.T) {
	c := Default()
	c.RL.RoC = "sometimes"
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), `rl.roc: must be one of paper, release, none, got "sometimes"`) {
		t.Fatalf("got %v", err)
	}
	c = Default()
	c.RL.Stages[1].MaxTurns = 0
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "rl.stages.1.max_turns: must be ≥ 1, got 0") {
		t.Fatalf("got %v", err)
	}
}

func TestKeys(t *testing.T) {
	keys := Keys()
	for _, want := range []string{"rl.lr", "rl.stages.max_turns", "run.seed", "eval.samples"} {
		found := false
		for _, k := range keys {
			found = found || k == want
		}
		if !found {
			t.Errorf("Keys() lacks %s", want)
		}
	}
}

func TestSetMessagesAndLists(t *testing.T) {
	c := Default()
	if err := c.Set("exec.modules=math, sympy"); err != nil || len(c.Exec.Modules) != 2 || c.Exec.Modules[1] != "sympy" {
		t.Errorf("comma list: %v %v", err, c.Exec.Modules)
	}
	if err := c.Set("rl.stages.3.steps=2"); err != nil || c.RL.Stages[3].Name != "stage4" {
		t.Errorf("append: %v %+v", err, c.RL.Stages)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("appended stage: %v", err)
	}
	for _, tc := range []struct{ set, want string }{
		{"rl.group_size=x", `want an integer, got "x"`},
		{"rl.lr=x", `want a number, got "x"`},
		{"rl.stages.9.steps=1", `"rl.stages" needs an index 0..3 (or 4 to append a copy of the last)`},
	} {
		if err := c.Set(tc.set); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.set, err, tc.want)
		}
	}
	c = Default()
	c.RL.Stages[2].Name = "stage1"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `rl.stages.2.name: "stage1" is also the name of rl.stages.0`) {
		t.Errorf("duplicate stage names: %v", err)
	}
}

// SHA256 changes with a value, not with a comment.
func TestSHA256FingerprintsSettings(t *testing.T) {
	a, err := Default().SHA256()
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := Default().SHA256(); b != a || len(a) != 64 {
		t.Fatalf("two hashes of the defaults: %s, %s", a, b)
	}
	c := Default()
	c.RL.LR *= 2
	if b, _ := c.SHA256(); b == a {
		t.Fatal("rl.lr changed, the hash did not")
	}
}

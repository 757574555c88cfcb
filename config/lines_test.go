package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKeyLines(t *testing.T) {
	doc := "# top\n[run]\nseed = 1\n[exec]\nmemory_mb = 32\nsandbox.x = 1\n" +
		"[[rl.stages]]\nname = \"a\"\n[[rl.stages]]\n\nname = \"b\"\n[eval]\nk = {a = 1}\nl = [{b = 2}, {c = 3}]\n"
	got := keyLines([]byte(doc))
	for key, want := range map[string]int{
		"run": 2, "run.seed": 3, "exec.memory_mb": 5, "exec.sandbox.x": 6,
		"rl.stages": 7, "rl.stages.0": 7, "rl.stages.0.name": 8, "rl.stages.1": 9, "rl.stages.1.name": 11,
		"eval.k": 13, "eval.k.a": 13, "eval.l.1.c": 14,
	} {
		if got[key] != want {
			t.Errorf("%s: line %d, want %d", key, got[key], want)
		}
	}
	// A key the file does not set is found at the table holding it, never at a bare section.
	for key, want := range map[string]int{"rl.stages.1.steps": 9, "exec.workers": 0, "model.preset": 0} {
		if l := got.lineOf(key); l != want {
			t.Errorf("lineOf(%s) = %d, want %d", key, l, want)
		}
	}
}

func TestLocate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.toml")
	os.WriteFile(path, []byte("[exec]\n\nmemory_mb = -5\n"), 0o644)
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	verr := cfg.Validate()
	cases := []struct {
		name       string
		overridden []string
		want       string
	}{
		{"from the file", nil, path + ":3: exec.memory_mb: must be ≥ 16, got -5"},
		{"overridden", []string{"exec.memory_mb"}, "exec.memory_mb: must be ≥ 16, got -5"},
	}
	for _, c := range cases {
		if got := Locate(verr, path, c.overridden); got.Error() != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if got := Locate(verr, "", nil); got != verr {
		t.Errorf("no file: %v", got)
	}
}

func TestDecodeNamesLineOfTextValue(t *testing.T) {
	cfg := Default()
	err := Decode(&cfg, "d.toml", []byte("[run]\nseed = 2\n[exec]\nmodules = [\n\"math\",\n]\ntimeout = 4\nmemory_mb = 64\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "d.toml:7: exec.timeout: want a duration") {
		t.Errorf("got %v", err)
	}
}

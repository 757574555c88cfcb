package config

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRenamedKeysDecodeOntoTheNewKey(t *testing.T) {
	for _, c := range []struct {
		name, doc string
		check     func(Config) bool
		warning   string
	}{
		{"table", "[exec]\nworkers = 2\ntool_text_chars = 300\n",
			func(c Config) bool { return c.Rollout.ToolTextChars == 300 && c.Exec.Workers == 2 },
			"run.toml:3: exec.tool_text_chars is deprecated; use rollout.tool_text_chars"},
		{"dotted", "exec.tool_text_chars = 40\n",
			func(c Config) bool { return c.Rollout.ToolTextChars == 40 },
			"run.toml:1: exec.tool_text_chars is deprecated; use rollout.tool_text_chars"},
		{"inline table", "exec = { tool_text_chars = 41, workers = 3 }\n",
			func(c Config) bool { return c.Rollout.ToolTextChars == 41 && c.Exec.Workers == 3 },
			"run.toml:1: exec.tool_text_chars is deprecated; use rollout.tool_text_chars"},
		{"eval budget", "[eval]\nsamples = 2\n\nmax_tokens = 700\n",
			func(c Config) bool { return c.Eval.MaxResponseTokens == 700 && c.Eval.Samples == 2 },
			"run.toml:4: eval.max_tokens is deprecated; use eval.max_response_tokens"},
	} {
		cfg, err := Load(writeConfig(t, c.doc))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !c.check(cfg) {
			t.Errorf("%s: value not on the new key: rollout %+v eval %+v", c.name, cfg.Rollout, cfg.Eval)
		}
		if cfg.Exec.ToolTextChars != nil || cfg.Eval.MaxTokens != nil {
			t.Errorf("%s: the old field keeps a value after the move", c.name)
		}
		if w := cfg.Warnings(); len(w) != 1 || !strings.HasSuffix(w[0], c.warning) {
			t.Errorf("%s: warnings %q, want one ending %q", c.name, w, c.warning)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		// The rendered configuration holds only the new name, and decodes without a warning.
		doc, _ := cfg.TOML()
		if ls := keyLines(doc); ls["exec.tool_text_chars"] != 0 || ls["eval.max_tokens"] != 0 {
			t.Errorf("%s: config show renders the old name:\n%s", c.name, doc)
		}
		back, err := Load(writeConfig(t, string(doc)))
		if err != nil || len(back.Warnings()) != 0 || back.Rollout.ToolTextChars != cfg.Rollout.ToolTextChars || back.Eval.MaxResponseTokens != cfg.Eval.MaxResponseTokens {
			t.Errorf("%s: reload of the rendered config: %v, warnings %q", c.name, err, back.Warnings())
		}
	}
}

func TestRenamedKeysStayStrict(t *testing.T) {
	for doc, want := range map[string]string{
		// Unknown keys are still refused; near an old name, the new name is suggested.
		"[exec]\ntool_text_charz = 3\n": `run.toml:2: unknown key "exec.tool_text_charz" (did you mean "rollout.tool_text_chars"?)`,
		"[eval]\nmax_token = 3\n":       `run.toml:2: unknown key "eval.max_token" (did you mean "eval.max_response_tokens"?)`,
		"[eval]\nmax_turnz = 3\n":       `run.toml:2: unknown key "eval.max_turnz" (did you mean "eval.max_turns"?)`,
		// A bad value under the old name is reported at the old name's line, by the new name's rule.
		"[exec]\nworkers = 1\ntool_text_chars = 3\n": "run.toml:3: rollout.tool_text_chars: must be ≥ 16, got 3",
	} {
		p := writeConfig(t, doc)
		cfg, err := Load(p)
		if err == nil {
			err = Locate(cfg.Validate(), p, nil)
		}
		if err == nil || !strings.HasSuffix(err.Error(), want) || strings.Contains(err.Error(), "did you mean \"exec.tool_text_chars") {
			t.Errorf("%q: got %v, want …%s", doc, err, want)
		}
	}
}

// A file that sets both names (as an older `config show` wrote exec.tool_text_chars beside
// rollout.tool_text_chars) keeps the new key's value and says the old one is ignored.
func TestRenamedKeyBesideItsNewName(t *testing.T) {
	cfg, err := Load(writeConfig(t, "[exec]\ntool_text_chars = 300\n[rollout]\ntool_text_chars = 200\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Rollout.ToolTextChars != 200 || cfg.Exec.ToolTextChars != nil {
		t.Errorf("rollout.tool_text_chars = %d, want the new key's 200", cfg.Rollout.ToolTextChars)
	}
	want := "run.toml:2: exec.tool_text_chars is deprecated and ignored: rollout.tool_text_chars (line 4) is set"
	if w := cfg.Warnings(); len(w) != 1 || !strings.HasSuffix(w[0], want) {
		t.Errorf("warnings %q, want one ending %q", w, want)
	}
}

func TestRenamedKeysSet(t *testing.T) {
	cfg := Default()
	for _, s := range []string{"exec.tool_text_chars=512", "eval.max_tokens=64", "exec.tool_text_chars=600"} {
		if err := cfg.Set(s); err != nil {
			t.Fatalf("--set %s: %v", s, err)
		}
	}
	if cfg.Rollout.ToolTextChars != 600 || cfg.Eval.MaxResponseTokens != 64 {
		t.Errorf("--set old names: rollout.tool_text_chars %d, eval.max_response_tokens %d", cfg.Rollout.ToolTextChars, cfg.Eval.MaxResponseTokens)
	}
	want := []string{
		"--set: exec.tool_text_chars is deprecated; use rollout.tool_text_chars",
		"--set: eval.max_tokens is deprecated; use eval.max_response_tokens",
	}
	if !slices.Equal(cfg.Warnings(), want) {
		t.Errorf("warnings %q, want each once: %q", cfg.Warnings(), want)
	}
	// A --set of the old name overrides the file like the new name would, and is reported as a
	// --set, not at the file's line.
	p := writeConfig(t, "[rollout]\ntool_text_chars = 300\n")
	cfg, _ = Load(p)
	if err := cfg.Set("exec.tool_text_chars=2"); err != nil {
		t.Fatal(err)
	}
	err := Locate(cfg.Validate(), p, []string{"exec.tool_text_chars"})
	if err == nil || strings.HasPrefix(err.Error(), p) {
		t.Errorf("bad --set under the old name: %v, want the error without the file's line", err)
	}
}

func TestRenamedKeysAreHidden(t *testing.T) {
	keys := Keys()
	for old, new := range RenamedKeys() {
		if slices.Contains(keys, old) {
			t.Errorf("Keys lists the old name %s", old)
		}
		if !slices.Contains(keys, new) {
			t.Errorf("%s is renamed to %s, which is not a key", old, new)
		}
	}
	if len(RenamedKeys()) < 2 {
		t.Errorf("RenamedKeys %v: want exec.tool_text_chars and eval.max_tokens", RenamedKeys())
	}
}

// The document `gorstar config show` printed before the renames (both tool_text_chars keys,
// eval.max_tokens) still loads: the old names warn and their settings land on the new keys.
func TestConfigShowWithOldNamesLoads(t *testing.T) {
	p := filepath.Join("testdata", "show-with-old-names.toml")
	cfg, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		p + ":88: exec.tool_text_chars is deprecated and ignored: rollout.tool_text_chars (line 112) is set",
		p + ":270: eval.max_tokens is deprecated; use eval.max_response_tokens",
	}
	if !slices.Equal(cfg.Warnings(), want) {
		t.Errorf("warnings %q, want %q", cfg.Warnings(), want)
	}
	if cfg.Rollout.ToolTextChars != 256 || cfg.Eval.MaxResponseTokens != 512 {
		t.Errorf("rollout.tool_text_chars %d, eval.max_response_tokens %d: want the file's 256 and 512",
			cfg.Rollout.ToolTextChars, cfg.Eval.MaxResponseTokens)
	}
}

package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorstar/internal/testmodel"
)

// runTokenize runs `gorstar model tokenize ARGS`.
func runTokenize(t *testing.T, args ...string) cliResult {
	t.Helper()
	return runCLI(t, append([]string{"model", "tokenize"}, args...)...)
}

func TestModelTokenize(t *testing.T) {
	dir := testmodel.TokenizerDir(t)
	r := runTokenize(t, "--model", dir, "--text", "<|im_start|>hi", "--json")
	if r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	m := decodeJSON(t, r)
	ids := m["ids"].([]any)
	if len(ids) != 3 || ids[0].(float64) != 257 || ids[1].(float64) != 'h' || m["count"].(float64) != 3 {
		t.Fatalf("ids = %v", m)
	}
	r = runTokenize(t, "--model", dir, "--text", "<|im_start|>", "--no-special", "--json")
	if got := decodeJSON(t, r)["count"].(float64); got != float64(len("<|im_start|>")) {
		t.Fatalf("--no-special count = %v", got)
	}
	r = runTokenize(t, "--model", dir, "--text", "é")
	if r.Code != 0 || !strings.Contains(r.Stdout, "195\t\"\\xc3\"") || !strings.Contains(r.Stdout, "2 tokens, 2 bytes") {
		t.Fatalf("human output: %+v", r)
	}
	r = runTokenize(t, "--model", dir, "--ids", "[257, 104, 105]", "--json")
	if got := decodeJSON(t, r)["text"]; got != "<|im_start|>hi" {
		t.Fatalf("--ids text = %v", got)
	}
	file := filepath.Join(t.TempDir(), "in.txt")
	os.WriteFile(file, []byte("ab"), 0o644)
	r = runTokenize(t, "--model", filepath.Join(dir, "tokenizer.json"), "--file", file, "--json")
	if got := decodeJSON(t, r)["count"]; got != 2.0 {
		t.Fatalf("--file count = %v", got)
	}
}

func TestModelTokenizeUserErrors(t *testing.T) {
	dir := testmodel.TokenizerDir(t)
	bad := filepath.Join(t.TempDir(), "tokenizer.json")
	os.WriteFile(bad, []byte(`{"model": {"type": "Unigram"}}`), 0o644)
	for name, args := range map[string][]string{
		"no input":        {"--model", dir},
		"two inputs":      {"--model", dir, "--text", "a", "--ids", "[1]"},
		"missing model":   {"--model", filepath.Join(dir, "nope"), "--text", "a"},
		"bad ids":         {"--model", dir, "--ids", "[1,"},
		"id out of vocab": {"--model", dir, "--ids", "[100000]"},
		"missing file":    {"--model", dir, "--file", filepath.Join(dir, "nope.txt")},
		"unigram file":    {"--model", bad, "--text", "a"},
	} {
		r := runTokenize(t, args...)
		if r.Code != 1 || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and one line", name, r.Code, r.Stderr)
		}
	}
}

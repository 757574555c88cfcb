// Package testmodel is the shared fixture of the tests that run a model: the kernels set up for
// tests, the byte-level chat tokenizer, and tiny random Qwen3 models whose vocabulary covers it.
// Only tests import it. Package model's own tests cannot (model is below this package); they call
// kernels.Init themselves.
package testmodel

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"gorstar/kernels"
	"gorstar/model"
	"gorstar/tokenizer"
)

// Threads is the kernel thread count of tests: two, so the parallel paths run on any machine.
const Threads = 2

// Main sets up the kernels (device 0, Threads threads), runs the tests and exits with their
// status. Call it from a package's TestMain.
func Main(m *testing.M) {
	if err := kernels.Init(0, Threads); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// TokenizerJSON is the byte-level chat tokenizer's tokenizer.json: 256 byte tokens and the
// ChatML specials.
func TokenizerJSON(t testing.TB) []byte {
	t.Helper()
	data, err := tokenizer.ByteLevelJSON(tokenizer.ChatSpecials)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Tokenizer is the byte-level chat tokenizer.
func Tokenizer(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	tok, err := tokenizer.Parse(TokenizerJSON(t))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TokenizerDir is a fresh directory holding the byte-level chat tokenizer.json.
func TokenizerDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), TokenizerJSON(t), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Model is a random two-layer Qwen3 (hidden 32, seed 1) over the byte-level chat tokenizer, both
// in memory; the model is closed when the test ends. It is small enough for many engine steps.
func Model(t testing.TB) (*model.Model, *tokenizer.Tokenizer) {
	t.Helper()
	tok := Tokenizer(t)
	c := model.Config{
		ModelType: "qwen3", VocabSize: tok.VocabSize(), HiddenSize: 32, IntermediateSize: 64, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 8, RopeTheta: 1e4, RMSNormEps: 1e-6,
		InitializerRange: 0.5, MaxPositionEmbeddings: 256,
	}
	m, err := model.New(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m, tok
}

// TinyDir writes the `tiny` preset (what `gorstar model init --preset tiny --seed 1` writes: config,
// weights, the byte-level chat tokenizer) into a fresh directory and returns its path.
func TinyDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny")
	if _, err := model.InitDir(dir, model.InitOptions{Preset: "tiny", Seed: 1}); err != nil {
		t.Fatal(err)
	}
	return dir
}

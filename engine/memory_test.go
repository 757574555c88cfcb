package engine

import (
	"testing"

	"gorstar/model"
)

// Empty, the engine is its weights; each KV token adds its keys and values, each sequence two rows
// of logits, and a step's buffers grow with its tokens.
func TestMemoryBytes(t *testing.T) {
	cfg, err := model.Preset("tiny", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := MemoryBytes(cfg, 0, 0, 0); got != 4*cfg.NumParams() {
		t.Errorf("empty: %d bytes, want the weights' %d", got, 4*cfg.NumParams())
	}
	if d := MemoryBytes(cfg, 1024, 8, 512) - MemoryBytes(cfg, 1000, 8, 512); d != 4*24*int64(cfg.KVFloatsPerToken()) {
		t.Errorf("24 more KV tokens: %d bytes more, want %d", d, 4*24*cfg.KVFloatsPerToken())
	}
	if d := MemoryBytes(cfg, 0, 3, 0) - MemoryBytes(cfg, 0, 2, 0); d != 4*2*int64(cfg.VocabSize) {
		t.Errorf("one more sequence: %d bytes more, want %d", d, 8*cfg.VocabSize)
	}
	if a, b := MemoryBytes(cfg, 0, 0, 64), MemoryBytes(cfg, 0, 0, 128); b <= a {
		t.Errorf("step tokens: %d then %d", a, b)
	}
}

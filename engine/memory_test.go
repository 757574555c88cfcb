package engine

import (
	"testing"

	"gorstar/kernels"
	"gorstar/model"
)

// Empty, the engine is its weights; each KV token adds its keys and values (bfloat16 for a bf16
// model on the CPU: half a float32 model's), each sequence two rows of logits, and a step's buffers
// grow with its tokens.
func TestMemoryBytes(t *testing.T) {
	cfg, err := model.Preset("tiny", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []model.Precision{model.FP32, model.BF16} {
		if got := MemoryBytes(cfg, p, 0, 0, 0); got != 4*cfg.NumParams() {
			t.Errorf("%s, empty: %d bytes, want the weights' %d", p, got, 4*cfg.NumParams())
		}
		per := int64(4 * cfg.KVFloatsPerToken())
		if p == model.BF16 && !kernels.OnDevice() {
			per /= 2
		}
		if got := int64(cfg.KVBytesPerToken(p)); got != per {
			t.Errorf("%s: %d KV bytes a token, want %d", p, got, per)
		}
		if d := MemoryBytes(cfg, p, 1024, 8, 512) - MemoryBytes(cfg, p, 1000, 8, 512); d != 24*per {
			t.Errorf("%s, 24 more KV tokens: %d bytes more, want %d", p, d, 24*per)
		}
		if d := MemoryBytes(cfg, p, 0, 3, 0) - MemoryBytes(cfg, p, 0, 2, 0); d != 4*2*int64(cfg.VocabSize) {
			t.Errorf("%s, one more sequence: %d bytes more, want %d", p, d, 8*cfg.VocabSize)
		}
		if a, b := MemoryBytes(cfg, p, 0, 0, 64), MemoryBytes(cfg, p, 0, 0, 128); b <= a {
			t.Errorf("%s, step tokens: %d then %d", p, a, b)
		}
		if kv, want := DefaultKVTokens(cfg, p), max(min(65536, (4<<30)/int(per)), cfg.MaxPositionEmbeddings); kv != want {
			t.Errorf("%s: default KV tokens %d, want %d", p, kv, want)
		}
	}
}

package model

import "testing"

// The estimate holds the weights four times (weights, gradients, two AdamW moments), grows with
// every shape, and a loss chunk past the tokens counts as all of them.
func TestTrainBytes(t *testing.T) {
	cfg, err := Preset("tiny", 0)
	if err != nil {
		t.Fatal(err)
	}
	base := TrainBytes(cfg, 2, 64, 0)
	if base <= 4*4*cfg.NumParams() {
		t.Errorf("%d bytes: not above the weights, gradients and moments (%d)", base, 4*4*cfg.NumParams())
	}
	for name, b := range map[string]int64{"batch": TrainBytes(cfg, 4, 64, 0), "seq": TrainBytes(cfg, 2, 128, 0)} {
		if b <= base {
			t.Errorf("larger %s: %d bytes, not above %d", name, b, base)
		}
	}
	if a, b := TrainBytes(cfg, 2, 64, 1<<20), TrainBytes(cfg, 2, 64, 0); a != b {
		t.Errorf("chunk past the tokens %d, no chunk %d", a, b)
	}
	// A chunk of 16 of the 128 tokens keeps 112 fewer rows of logits and their gradients.
	if a, b := TrainBytes(cfg, 2, 64, 16), base; b-a != 4*2*112*int64(cfg.VocabSize) {
		t.Errorf("chunk 16: %d bytes fewer, want %d", b-a, 4*2*112*cfg.VocabSize)
	}
}

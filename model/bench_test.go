package model

import (
	"context"
	"testing"
)

// BenchmarkTrainTiny times training steps of the tiny preset (16×256); run with -benchtime=3x.
func BenchmarkTrainTiny(b *testing.B) { benchmarkTrain(b, "tiny", 16, 256) }

// BenchmarkTrainSmall times training steps of the small preset (8×512).
func BenchmarkTrainSmall(b *testing.B) { benchmarkTrain(b, "small", 8, 512) }

func benchmarkTrain(b *testing.B, preset string, B, L int) {
	c, err := Preset(preset, 0)
	if err != nil {
		b.Fatal(err)
	}
	m, err := New(c, 1)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	r, err := BenchmarkTrain(context.Background(), m, B, L, b.N, 1)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(r.TokensPerSecond, "tokens/s")
}

// The small preset's training arithmetic per token at 512 tokens, counted by hand: per layer
// q 512·512 + k, v 2·512·256 + o 512·512 + MLP 3·512·1536 = 3,145,728 weights, × 8 layers, +
// lm_head 512·32,000 = 41,549,824, × 6 = 249,298,944; attention 8 layers × 12 × 512 × 256.5
// visible keys = 12,607,488; 261,906,432 in all.
func TestTrainFLOPsPerToken(t *testing.T) {
	c, err := Preset("small", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.TrainFLOPsPerToken(512); got != 261906432 {
		t.Errorf("small at 512 tokens: %.0f FLOP a token, want 261906432", got)
	}
}

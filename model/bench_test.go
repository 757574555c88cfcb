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

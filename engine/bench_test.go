package engine

import (
	"context"
	"fmt"
	"testing"

	"gorstar/internal/testenv"
	"gorstar/internal/testmodel"
	"gorstar/model"
)

// BenchmarkGenerate reports generated tokens per second on the tiny preset at batch 1, 8 and 64
// (64-token prompts, 64 new tokens). `gorstar model bench --generate` runs the same beside PyTorch.
func BenchmarkGenerate(b *testing.B) {
	c, err := model.Preset("tiny", 0)
	if err != nil {
		b.Fatal(err)
	}
	m, err := model.New(c, 1)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	for _, batch := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("tiny/batch%d", batch), func(b *testing.B) {
			var tps float64
			for range b.N {
				r, err := Bench(context.Background(), m, BenchOptions{Batch: batch, PromptLen: 64, NewTokens: 64})
				if err != nil {
					b.Fatal(err)
				}
				tps = r.TokensPerSecond
			}
			b.ReportMetric(tps, "tokens/s")
		})
	}
}

func TestBenchRuns(t *testing.T) {
	testenv.Short(t, "a bench run as a test")
	m, _ := testmodel.Model(t)
	r, err := Bench(context.Background(), m, BenchOptions{Batch: 3, PromptLen: 5, NewTokens: 4})
	if err != nil {
		t.Fatal(err)
	}
	if r.TokensPerSecond <= 0 || r.Steps < 4 {
		t.Errorf("result %+v", r)
	}
}

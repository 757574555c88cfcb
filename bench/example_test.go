package bench_test

import (
	"context"
	"fmt"

	"gorstar/bench"
	"gorstar/model"
)

// Generation throughput of the tiny preset's random model at two batches, beside the PyTorch
// reference where /usr/bin/python3 imports torch.
func ExampleGenerate() {
	res, err := bench.Generate(context.Background(), bench.GenerateOptions{
		Models: []string{"tiny"}, Batches: []int{1, 8}, PromptLen: 64, NewTokens: 64, Repeat: 1,
		Precision: model.FP32,
		Torch:     &bench.Torch{Python: "/usr/bin/python3", Script: bench.DefaultTorchScript},
		Warn:      func(why string) { fmt.Println(why) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range res.Rows {
		fmt.Printf("batch %d: %.0f tokens/s\n", r.Batch, r.TokensPerS)
	}
}

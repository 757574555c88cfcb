package engine_test

import (
	"context"
	"fmt"

	"gorstar/engine"
	"gorstar/model"
)

// Generation from a tiny random model. kernels.Init (or kernels.Setup) must have run first; the
// test binary's TestMain does it. engine.LoadPolicy loads a model directory, its tokenizer and
// chat template and starts an engine in one call.
func ExampleEngine_Submit() {
	cfg, _ := model.Preset("tiny", 0)
	m, err := model.New(cfg, 1)
	if err != nil {
		panic(err)
	}
	defer m.Close()
	eng, err := engine.New(m, engine.Options{KVTokens: 4096, MaxSeqs: 8})
	if err != nil {
		panic(err)
	}
	defer eng.Close()

	ctx := context.Background()
	seed := uint64(7)
	seq, err := eng.Submit(ctx, engine.Request{
		Prompt:    []int32{10, 11, 12, 13},
		MaxTokens: 8,
		Capacity:  64, // KV cache reserved for prompt, samples and appended tool answers
		Sampling:  engine.Sampling{Temperature: 1, Seed: &seed},
		// StopTokens end the sequence; PauseTokens (or PauseStrings with Options.Tokenizer, e.g.
		// "</tool_call>") pause it with its cache intact.
	})
	if err != nil {
		panic(err)
	}
	out, err := seq.Wait(ctx) // tokens and log-probabilities until a pause or the end
	if err != nil {
		panic(err)
	}
	if out.Paused { // with PauseTokens: append the tool's answer, then sampling continues
		if err := seq.Append([]int32{20, 21}); err != nil {
			panic(err)
		}
		if err := seq.Resume(); err != nil {
			panic(err)
		}
	}
	fmt.Println(len(out.Tokens), len(out.LogProbs), out.Finish)
	// Output: 8 8 length
}

// Updating the weights between two batches of generation (RL alternates the two on one model):
// f runs on the engine's goroutine between steps, and WithModel then calls m.WeightsChanged so
// that the decoders repack their weights.
func ExampleEngine_WithModel() {
	cfg, _ := model.Preset("tiny", 0)
	m, err := model.New(cfg, 1)
	if err != nil {
		panic(err)
	}
	defer m.Close()
	eng, err := engine.New(m, engine.Options{KVTokens: 4096, MaxSeqs: 8})
	if err != nil {
		panic(err)
	}
	defer eng.Close()
	err = eng.WithModel(context.Background(), func(m *model.Model) error {
		p := make([]float32, m.Params.Size)
		m.Params.All.CopyTo(p)
		p[0] += 0.01 // a weight sync, or ForwardBackward and an optimizer step
		m.Params.All.CopyFrom(p)
		return nil
	})
	fmt.Println(err)
	// Output: <nil>
}

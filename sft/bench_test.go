package sft

import (
	"context"
	"testing"

	"gorstar/chat"
	"gorstar/data"
	"gorstar/model"
)

// mixedExamples renders conversations of 1 to 4 problems each (user, tool call, tool output,
// answer, repeated): real `data synth --sft` text of mixed lengths, about 230 to 920 byte tokens
// in plain ChatML.
func mixedExamples(b *testing.B, n int) []Example {
	path := synthConversations(b, 4*n, 21, "c.jsonl")
	convs, err := data.ReadAllConversations(path)
	if err != nil {
		b.Fatal(err)
	}
	r, _ := byteRendererTB(b, "chatml")
	var ex []Example
	for i, next := 0, 0; i < n; i++ {
		var msgs []chat.Message
		for k := 0; k <= i%4; k++ {
			msgs = append(msgs, convs[next].Messages...)
			next++
		}
		ids, mask, err := r.Render(msgs)
		if err != nil {
			b.Fatal(err)
		}
		ex = append(ex, Example{Row: i + 1, IDs: ids, Mask: mask})
	}
	return ex
}

// BenchmarkThroughputSmall reports SFT tokens/s on the small preset against `model bench --train`
// at 8×512 = 4096 tokens per step (go test ./sft -run XX -bench ThroughputSmall -benchtime 1x).
func BenchmarkThroughputSmall(b *testing.B) {
	ex := mixedExamples(b, 64)
	for range b.N {
		c, err := model.Preset("small", 0)
		if err != nil {
			b.Fatal(err)
		}
		m, err := model.New(c, 1)
		if err != nil {
			b.Fatal(err)
		}
		res, err := BenchmarkThroughput(context.Background(), m, ex, BenchOptions{TokensPerStep: 4096, SeqLen: 512, Steps: 3, Seed: 1})
		m.Close()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(res.SFTTokensPerS, "sft_tok/s")
		b.ReportMetric(res.TrainTokensPerS, "bench_tok/s")
		b.ReportMetric(res.Ratio, "ratio")
		b.ReportMetric(res.PadFraction, "pad")
	}
}

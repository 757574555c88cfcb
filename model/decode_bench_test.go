package model

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

// BenchmarkDecodeMixedStep times the step rollouts run most: 63 sequences decoding one token each
// over 1,200 cached tokens, the first 960 of them a prompt prefix every cache copied from one
// (the template's system turn), beside one appending a 48-token tool response (tiny preset).
func BenchmarkDecodeMixedStep(b *testing.B) { benchmarkDecodeStep(b, 63, 48, true) }

// BenchmarkDecodeStep is the same step without the append: 64 decoding sequences.
func BenchmarkDecodeStep(b *testing.B) { benchmarkDecodeStep(b, 64, 0, true) }

// BenchmarkDecodeStepUnshared is BenchmarkDecodeStep with the prefix's provenance forgotten: every
// sequence reads its own copy of the prefix (what a decode step did before shared prefixes).
func BenchmarkDecodeStepUnshared(b *testing.B) { benchmarkDecodeStep(b, 64, 0, false) }

func benchmarkDecodeStep(b *testing.B, decoding, appended int, sharedPrefix bool) {
	const past, prefix = 1200, 960
	runtime.LockOSThread() // one OpenMP team, as in the engine's loop
	defer runtime.UnlockOSThread()
	c, err := Preset("tiny", 0)
	if err != nil {
		b.Fatal(err)
	}
	m, err := New(c, 1)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	rows := decoding
	if appended > 0 {
		rows++
	}
	d, err := m.NewDecoder(512, rows)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	tokens := func(n int) []int32 {
		ids := make([]int32, n)
		for i := range ids {
			ids[i] = int32(rng.IntN(c.VocabSize))
		}
		return ids
	}
	// Fill one cache by prefill steps, copy its prefix into the others, and give each its own rest.
	caches := kvCaches(b, m, rows, past+appended+1)
	prompt := tokens(past)
	for off := 0; off < past; off += 400 {
		if err := d.Step([]DecodeInput{{Cache: caches[0], Tokens: prompt[off:min(off+400, past)]}}); err != nil {
			b.Fatal(err)
		}
	}
	for _, kv := range caches[1:] {
		kv.CopyPrefix(caches[0], prefix)
		if !sharedPrefix {
			kv.newOrigin()
		}
		if err := d.Step([]DecodeInput{{Cache: kv, Tokens: tokens(past - prefix)}}); err != nil {
			b.Fatal(err)
		}
	}
	in := make([]DecodeInput, rows)
	for i := range in {
		in[i] = DecodeInput{Cache: caches[i], Tokens: tokens(1)}
	}
	if appended > 0 {
		in[rows/2].Tokens = tokens(appended) // among the decoding rows, as in the engine
	}
	b.ResetTimer()
	for range b.N {
		for _, kv := range caches {
			kv.Truncate(past)
		}
		if err := d.Step(in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/step")
}

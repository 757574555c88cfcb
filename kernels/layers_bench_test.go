package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// Benchmarks of the non-GEMM ops on the `small` preset's shapes (batch 8 x 512 tokens, hidden 512,
// 8 heads, 4 kv heads, head_dim 64, intermediate 1536, vocab 32000) at 1 and 2 threads.

const (
	benchB, benchL, benchC, benchNH, benchNKV, benchHD, benchFF, benchV = 8, 512, 512, 8, 4, 64, 1536, 32000
)

func forThreads(b *testing.B, f func(b *testing.B)) {
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			if err := Init(0, threads); err != nil {
				b.Fatal(err)
			}
			defer Init(0, 2)
			f(b)
		})
	}
}

func BenchmarkAttention(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	T := benchB * benchL
	q, k, v := buf(b, randn(r, T*benchNH*benchHD, 1)), buf(b, randn(r, T*benchNKV*benchHD, 1)), buf(b, randn(r, T*benchNKV*benchHD, 1))
	out, lse := zeros(b, T*benchNH*benchHD), zeros(b, benchB*benchNH*benchL)
	// Causal: half of the L x L scores; 2 products (q k, p v) of hd multiply-adds each.
	flops := float64(benchB*benchNH) * float64(benchL*(benchL+1)/2) * float64(benchHD) * 4
	forThreads(b, func(b *testing.B) {
		b.Run("forward", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				AttentionForward(out, lse, q, k, v, benchB, benchL, benchL, benchNH, benchNKV, benchHD, 0.125)
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
		dq, dk, dv := zeros(b, T*benchNH*benchHD), zeros(b, T*benchNKV*benchHD), zeros(b, T*benchNKV*benchHD)
		b.Run("backward", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				AttentionBackward(dq, dk, dv, out, q, k, v, out, lse, benchB, benchL, benchL, benchNH, benchNKV, benchHD, 0.125)
			}
			// Recomputes q k^T and computes dout v^T, dq, dk, dv: 5 products.
			b.ReportMetric(flops/2*5*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	})
}

func BenchmarkSoftmaxXent(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	T := 1024
	logits := buf(b, randn(r, T*benchV, 2))
	ids := make([]int32, T)
	for i := range ids {
		ids[i] = int32(r.IntN(benchV))
	}
	target, lp, dl := bufI32(b, ids), zeros(b, T), zeros(b, T*benchV)
	forThreads(b, func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			SoftmaxXent(lp, dl, logits, target, Buf{}, T, benchV)
		}
		b.ReportMetric(float64(T*benchV)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
	})
}

// elementwise benchmarks report GB/s of float32 traffic (reads + writes).
func BenchmarkElementwise(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	T := benchB * benchL
	n := T * benchFF
	x, y, z, w := buf(b, randn(r, n, 1)), buf(b, randn(r, n, 1)), zeros(b, n), zeros(b, n)
	ids := make([]int32, T)
	pos := make([]int32, T)
	for i := range ids {
		ids[i] = int32(r.IntN(benchV))
		pos[i] = int32(i % benchL)
	}
	idb, posb := bufI32(b, ids), bufI32(b, pos)
	table := zeros(b, benchV*benchC)
	rstd := zeros(b, T)
	ops := []struct {
		name  string
		bytes int
		run   func()
	}{
		{"SwiGLUForward", 3 * n * 4, func() { SwiGLUForward(z, x, y, n) }},
		{"SwiGLUBackward", 7 * n * 4, func() { SwiGLUBackward(z, w, x, x, y, n) }},
		{"Add", 3 * n * 4, func() { Add(z, x, n) }},
		{"RMSNormForward", 2 * T * benchC * 4, func() { RMSNormForward(z, rstd, x, y, T, benchC, 1e-6) }},
		{"RMSNormBackward", 4 * T * benchC * 4, func() { RMSNormBackward(z, w, x, y, y, rstd, T, benchC) }},
		{"RoPEForward", 2 * T * benchNH * benchHD * 4, func() { RoPEForward(z, posb, T, benchNH, benchHD, 1e6) }},
		{"EmbeddingForward", 2 * T * benchC * 4, func() { EmbeddingForward(z, idb, table, T, benchC) }},
		{"EmbeddingBackward", 3 * T * benchC * 4, func() { EmbeddingBackward(table, x, idb, T, benchC) }},
		{"AdamW", 7 * n * 4, func() { AdamW(x, y, z, w, n, 1e-5, 0.9, 0.95, 1e-8, 0.1, 1, 3) }},
		{"SumSquares", n * 4, func() { SumSquares(x, n) }},
	}
	for _, op := range ops {
		b.Run(op.name, func(b *testing.B) {
			forThreads(b, func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					op.run()
				}
				b.ReportMetric(float64(op.bytes)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		})
	}
}

// BenchmarkAttentionPacked compares attention over rows of packed documents with plain causal
// attention over the same rows (2 x 2048 tokens, the `small` preset's heads), alternating the two
// in every iteration so both see the same machine load. Documents are 64–1024 tokens (seeded),
// packed one after another, the last one in a row cut to fit. It reports the time ratio
// packed/causal and the ideal one, the ratio of visible score cells (Σ n(n+1)/2 over documents
// against L(L+1)/2 per row), and each side's GFLOP/s over the cells it must compute.
func BenchmarkAttentionPacked(b *testing.B) {
	const B, L = 2, 2048
	r := rand.New(rand.NewPCG(7, 8))
	T := B * L
	q, k, v := buf(b, randn(r, T*benchNH*benchHD, 1)), buf(b, randn(r, T*benchNKV*benchHD, 1)), buf(b, randn(r, T*benchNKV*benchHD, 1))
	out, lse := zeros(b, T*benchNH*benchHD), zeros(b, B*benchNH*L)
	dq, dk, dv := zeros(b, T*benchNH*benchHD), zeros(b, T*benchNKV*benchHD), zeros(b, T*benchNKV*benchHD)
	rows := make([][]int, B)
	packedCells := 0.0
	for row := range rows {
		for left := L; left > 0; {
			n := min(64+r.IntN(961), left)
			rows[row] = append(rows[row], n)
			packedCells += float64(n) * float64(n+1) / 2
			left -= n
		}
	}
	docs := bufI32(b, docStartsFor(rows, L))
	causalCells := float64(B) * float64(L) * float64(L+1) / 2
	perCell := float64(benchNH * benchHD * 4) // q k and p v: 2 products of hd multiply-adds per head
	forward := func(ds Buf) {
		AttentionForwardDocs(out, lse, q, k, v, ds, B, L, L, benchNH, benchNKV, benchHD, 0.125)
	}
	backward := func(ds Buf) {
		AttentionBackwardDocs(dq, dk, dv, out, q, k, v, out, lse, ds, B, L, L, benchNH, benchNKV, benchHD, 0.125)
	}
	for _, pass := range []struct {
		name  string
		run   func(Buf)
		flops float64 // per cell, relative to the forward's
	}{{"forward", forward, 1}, {"backward", backward, 2.5}} {
		b.Run(pass.name, func(b *testing.B) {
			forThreads(b, func(b *testing.B) {
				var causal, packed time.Duration
				for i := 0; i < b.N; i++ {
					t0 := time.Now()
					pass.run(Buf{})
					t1 := time.Now()
					pass.run(docs)
					packed += time.Since(t1)
					causal += t1.Sub(t0)
				}
				b.ReportMetric(packed.Seconds()/causal.Seconds(), "packed/causal")
				b.ReportMetric(packedCells/causalCells, "ideal")
				n := float64(b.N) * perCell * pass.flops / 1e9
				b.ReportMetric(n*causalCells/causal.Seconds(), "causal-GFLOP/s")
				b.ReportMetric(n*packedCells/packed.Seconds(), "packed-GFLOP/s")
			})
		})
	}
}

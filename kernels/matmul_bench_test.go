package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// gemmShape is one benchmarked product, named after where the model uses it.
type gemmShape struct {
	name           string
	transA, transB bool
	M, N, K        int
}

var gemmShapes = []gemmShape{
	{"square256", false, false, 256, 256, 256},
	{"square512", false, false, 512, 512, 512},
	{"square1024", false, false, 1024, 1024, 1024},
	// small preset, 4096 tokens: linear forward y = x W^T (NT), backward dx = dy W (NN), dW = dy^T x (TN).
	{"up_fwd_4096x1536x512_NT", false, true, 4096, 1536, 512},
	{"down_fwd_4096x512x1536_NT", false, true, 4096, 512, 1536},
	{"up_dx_4096x512x1536_NN", false, false, 4096, 512, 1536},
	{"up_dw_1536x512x4096_TN", true, false, 1536, 512, 4096},
	{"kv_fwd_4096x256x512_NT", false, true, 4096, 256, 512},
	{"kv_dx_4096x512x256_NN", false, false, 4096, 512, 256},
	{"kv_dw_256x512x4096_TN", true, false, 256, 512, 4096},
	{"q_fwd_4096x512x512_NT", false, true, 4096, 512, 512},
	{"q_dw_512x512x4096_TN", true, false, 512, 512, 4096},
	{"lm_head_chunk_fwd_1048x32000x512_NT", false, true, 1048, 32000, 512},
	{"lm_head_chunk_dx_1048x512x32000_NN", false, false, 1048, 512, 32000},
	{"lm_head_chunk_dw_32000x512x1048_TN", true, false, 32000, 512, 1048},
	{"lm_head_fwd_4096x32000x512_NT", false, true, 4096, 32000, 512},
	{"lm_head_dx_4096x512x32000_NN", false, false, 4096, 512, 32000},
	{"lm_head_dw_32000x512x4096_TN", true, false, 32000, 512, 4096},
	// decoding 4 sequences: few rows, weights streamed once.
	{"decode_up_4x1536x512_NT", false, true, 4, 1536, 512},
	{"decode_lm_head_4x32000x512_NT", false, true, 4, 32000, 512},
	// decoding 64 sequences (the generation benchmark's batch).
	{"decode_up_64x1536x512_NT", false, true, 64, 1536, 512},
	{"decode_down_64x512x1536_NT", false, true, 64, 512, 1536},
	{"decode_lm_head_64x32000x512_NT", false, true, 64, 32000, 512},
}

// BenchmarkSGEMM times gorstar's SGEMM at 1 and 2 threads and, when built with -tags openblas,
// OpenBLAS on the same buffers and thread count, alternating the two so load hits both alike. It
// reports GFLOP/s for each and their ratio (gorstar / OpenBLAS), from each one's fastest call: on a
// shared machine the mean mostly measures the neighbours.
func BenchmarkSGEMM(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, threads := range []int{1, 2} {
		for _, s := range gemmShapes {
			b.Run(fmt.Sprintf("threads=%d/%s", threads, s.name), func(b *testing.B) {
				if err := Init(0, threads); err != nil {
					b.Fatal(err)
				}
				openblasSetThreads(threads)
				lda, ldb := s.K, s.N
				if s.transA {
					lda = s.M
				}
				if s.transB {
					ldb = s.K
				}
				A, B, C := buf(b, randn(r, s.M*s.K, 1)), buf(b, randn(r, s.K*s.N, 1)), zeros(b, s.M*s.N)
				flops := 2 * float64(s.M) * float64(s.N) * float64(s.K)
				ours, theirs := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
				// One OS thread drives both libraries (libgomp keeps a team per OS thread), and each
				// timed call starts after a pause longer than OpenBLAS's worker spin-wait (~0.1 s), so
				// neither library's idle threads still spin on a core the other one is timed on.
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				settle := func() {
					if haveOpenBLAS {
						time.Sleep(150 * time.Millisecond)
					}
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					settle()
					t0 := time.Now()
					SGEMM(s.transA, s.transB, s.M, s.N, s.K, 1, A, lda, B, ldb, 0, C, s.N)
					ours = min(ours, time.Since(t0))
					if haveOpenBLAS {
						settle()
						//lint:ignore SA4006 used when built with -tags openblas (haveOpenBLAS is a constant)
						t0 = time.Now()
						openblasSGEMM(s.transA, s.transB, s.M, s.N, s.K, 1, A, lda, B, ldb, 0, C, s.N)
						theirs = min(theirs, time.Since(t0))
					}
				}
				b.ReportMetric(flops/ours.Seconds()/1e9, "GFLOP/s")
				if haveOpenBLAS {
					b.ReportMetric(flops/theirs.Seconds()/1e9, "openblas-GFLOP/s")
					b.ReportMetric(theirs.Seconds()/ours.Seconds(), "ratio")
				}
			})
		}
	}
	Init(0, 2)
}

//go:build !rocm

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// BenchmarkGEMMBF16 times the bf16 GEMM beside the project's float32 SGEMM on the same shapes (the
// training products of BenchmarkSGEMM), alternating the two call by call so load hits both alike.
// Operands: "bf16" has A and B stored in bf16, as weights and a bf16 model's activations are;
// "mixed" has A in float32 (rounded while packed), as a linear layer's float32 input. It reports
// each one's GFLOP/s from its fastest call and the ratio bf16 / fp32.
func BenchmarkGEMMBF16(b *testing.B) {
	r := rand.New(rand.NewPCG(46, 9))
	for _, threads := range []int{1, 2} {
		for _, s := range gemmShapes {
			for _, mode := range []string{"bf16", "mixed"} {
				b.Run(fmt.Sprintf("threads=%d/%s/%s", threads, s.name, mode), func(b *testing.B) {
					if err := Init(0, threads); err != nil {
						b.Fatal(err)
					}
					lda, ldb := s.K, s.N
					if s.transA {
						lda = s.M
					}
					if s.transB {
						ldb = s.K
					}
					a, bb := randn(r, s.M*s.K, 1), randn(r, s.K*s.N, 1)
					A, B, C := buf(b, a), buf(b, bb), zeros(b, s.M*s.N)
					Ab, Bb := bufBF16(b, a), bufBF16(b, bb)
					if mode == "mixed" {
						Ab = A
					}
					flops := 2 * float64(s.M) * float64(s.N) * float64(s.K)
					f32, b16 := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						t0 := time.Now()
						SGEMM(s.transA, s.transB, s.M, s.N, s.K, 1, A, lda, B, ldb, 0, C, s.N)
						f32 = min(f32, time.Since(t0))
						t0 = time.Now()
						GEMMBF16(s.transA, s.transB, s.M, s.N, s.K, 1, Ab, lda, Bb, ldb, 0, C, s.N)
						b16 = min(b16, time.Since(t0))
					}
					b.ReportMetric(flops/b16.Seconds()/1e9, "GFLOP/s")
					b.ReportMetric(flops/f32.Seconds()/1e9, "fp32-GFLOP/s")
					b.ReportMetric(f32.Seconds()/b16.Seconds(), "ratio")
				})
			}
		}
	}
	Init(0, 2)
}

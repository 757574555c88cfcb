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

// BenchmarkLinearBF16PackedStream times a decode step's products from prepacked weights streamed
// out of memory (enough copies of the weight to overflow the caches, taken in turn): the fp32
// LinearForwardPacked and LinearForwardBF16Packed alternating call by call, each one's fastest call
// reported (GFLOP/s) and the ratio bf16 / fp32. "qkv" and "gate_up" are the products of one input
// in one call (LinearForwardPackedMulti, LinearForwardBF16PackedMulti), as the decoder runs them.
func BenchmarkLinearBF16PackedStream(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 3))
	for _, s := range []struct {
		name string
		T    int
		in   int
		outs []int
	}{{"up_1x512x1536", 1, 512, []int{1536}}, {"up_8x512x1536", 8, 512, []int{1536}},
		{"down_8x1536x512", 8, 1536, []int{512}}, {"qkv_8x512", 8, 512, []int{512, 256, 256}},
		{"gate_up_8x512", 8, 512, []int{1536, 1536}}, {"lm_head_8x512x32000", 8, 512, []int{32000}},
		{"up_16x512x1536", 16, 512, []int{1536}}, {"up_64x512x1536", 64, 512, []int{1536}}} {
		b.Run(s.name, func(b *testing.B) {
			total := 0
			for _, o := range s.outs {
				total += o
			}
			copies := max(3, 150<<20/(4*s.in*total))
			x := buf(b, randn(r, s.T*s.in, 1))
			f32s, b16s := make([][]Linear, copies), make([][]Linear, copies)
			for c := range copies {
				for _, out := range s.outs {
					src := randn(r, out*s.in, 1)
					w, wb := buf(b, src), bufBF16(b, src)
					wp, wpb := Alloc(PackedLinearFloats(s.in, out)), Alloc(PackedLinearBF16Words(s.in, out))
					b.Cleanup(wp.Free)
					b.Cleanup(wpb.Free)
					PackLinear(wp, w, s.in, out)
					PackLinearBF16(wpb, wb, s.in, out)
					f32s[c] = append(f32s[c], Linear{Y: zeros(b, s.T*out), W: w, WP: wp, Out: out})
					b16s[c] = append(b16s[c], Linear{Y: zeros(b, s.T*out), W: wb, WP: wpb, Out: out})
				}
			}
			run := func(ls []Linear, bf16 bool) {
				switch {
				case len(ls) > 1 && bf16:
					LinearForwardBF16PackedMulti(x, s.T, s.in, ls...)
				case len(ls) > 1:
					LinearForwardPackedMulti(x, s.T, s.in, ls...)
				case bf16:
					LinearForwardBF16Packed(ls[0].Y, x, ls[0].W, ls[0].WP, Buf{}, s.T, s.in, ls[0].Out)
				default:
					LinearForwardPacked(ls[0].Y, x, ls[0].W, ls[0].WP, Buf{}, s.T, s.in, ls[0].Out)
				}
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			f32, b16 := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
			b.ResetTimer()
			for range b.N {
				for c := range copies {
					t0 := time.Now()
					run(f32s[c], false)
					f32 = min(f32, time.Since(t0))
					t0 = time.Now()
					run(b16s[c], true)
					b16 = min(b16, time.Since(t0))
				}
			}
			flops := 2 * float64(s.T) * float64(s.in) * float64(total)
			b.ReportMetric(flops/b16.Seconds()/1e9, "GFLOP/s")
			b.ReportMetric(flops/f32.Seconds()/1e9, "fp32-GFLOP/s")
			b.ReportMetric(f32.Seconds()/b16.Seconds(), "ratio")
		})
	}
}

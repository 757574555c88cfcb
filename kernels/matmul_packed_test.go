package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestLinearForwardPackedIsBitIdentical checks, for every SGEMM kernel this CPU runs, that the
// packed forward gives exactly the bits LinearForward gives its rows in a product of many rows (the
// trainer's), over shapes with partial panels, several K slices and few rows (where LinearForward
// itself reads W in place, in another order); and that weights packed under another kernel give
// LinearForward's own bits (W is used).
func TestLinearForwardPackedIsBitIdentical(t *testing.T) {
	defer useSGEMMKernel("")
	r := rand.New(rand.NewPCG(9, 10))
	kernelNames := sgemmKernels()
	for ki, kernel := range kernelNames {
		if err := useSGEMMKernel(kernel); err != nil {
			t.Fatal(err)
		}
		for _, s := range []struct{ T, in, out int }{{1, 7, 6}, {8, 33, 37}, {9, 33, 37}, {64, 389, 70}, {300, 800, 1100}} {
			for _, withBias := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/T%d_in%d_out%d_bias%v", kernel, s.T, s.in, s.out, withBias), func(t *testing.T) {
					x, w := buf(t, randn(r, s.T*s.in, 1)), buf(t, randn(r, s.out*s.in, 1))
					b := Buf{}
					if withBias {
						b = buf(t, randn(r, s.out, 1))
					}
					want, got := largeRows(t, r, x, w, b, s.T, s.in, s.out), zeros(t, s.T*s.out)
					wp := Alloc(PackedLinearFloats(s.in, s.out))
					defer wp.Free()
					PackLinear(wp, w, s.in, s.out)
					LinearForwardPacked(got, x, w, wp, b, s.T, s.in, s.out)
					same(t, read(got), read(want))
					if len(kernelNames) > 1 { // packed for this kernel, used under another: W is used
						other := kernelNames[(ki+1)%len(kernelNames)]
						if err := useSGEMMKernel(other); err != nil {
							t.Fatal(err)
						}
						want := zeros(t, s.T*s.out)
						LinearForward(want, x, w, b, s.T, s.in, s.out)
						LinearForwardPacked(got, x, w, wp, b, s.T, s.in, s.out)
						same(t, read(got), read(want))
						if err := useSGEMMKernel(kernel); err != nil {
							t.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// TestLinearForwardPackedMultiIsBitIdentical checks that several packed products of one input in
// one call give each the bits LinearForwardPacked gives it alone (largeRows: the trainer's), for
// every SGEMM kernel this CPU runs: in one region (rows within one block, partial panels, biases
// on some, several K slices) and on the paths it hands back to the calls one by one (few rows,
// many rows, a weight packed for another shape).
func TestLinearForwardPackedMultiIsBitIdentical(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	forEachSGEMMKernel(t, func(kernel string) {
		for _, s := range []struct {
			T, in int
			outs  []int
		}{{64, 512, []int{512, 256, 256}}, {16, 389, []int{70, 1536}}, {33, 800, []int{100, 37, 64, 200}},
			{5, 64, []int{48, 16}}, {300, 96, []int{128, 64}}, {24, 8, []int{16, 16, 16}}} {
			for _, badPack := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/T%d_in%d_outs%v_badpack%v", kernel, s.T, s.in, s.outs, badPack), func(t *testing.T) {
					x := buf(t, randn(r, s.T*s.in, 1))
					var ls []Linear
					var wants []Buf
					for i, out := range s.outs {
						w := buf(t, randn(r, out*s.in, 1))
						b := Buf{}
						if i%2 == 1 {
							b = buf(t, randn(r, out, 1))
						}
						want := largeRows(t, r, x, w, b, s.T, s.in, out)
						wp := Alloc(PackedLinearFloats(s.in, out))
						defer wp.Free()
						PackLinear(wp, w, s.in, out)
						if badPack && i == len(s.outs)-1 { // a header for another shape: W is the truth
							wp2 := Alloc(PackedLinearFloats(s.in, out+1))
							defer wp2.Free()
							PackLinear(wp2, buf(t, randn(r, (out+1)*s.in, 1)), s.in, out+1)
							wp = wp2
							LinearForward(want, x, w, b, s.T, s.in, out) // W read as LinearForward reads it
						}
						ls = append(ls, Linear{Y: zeros(t, s.T*out), W: w, WP: wp, B: b, Out: out})
						wants = append(wants, want)
					}
					LinearForwardPackedMulti(x, s.T, s.in, ls...)
					for i := range ls {
						same(t, read(ls[i].Y), read(wants[i]))
					}
				})
			}
		}
	})
}

// largeRows is LinearForward's output for the T rows of x computed as the first rows of a product
// of at least 64 rows (the rest random): the bits a training forward gives them.
func largeRows(t testing.TB, r *rand.Rand, x, w, b Buf, T, in, out int) Buf {
	t.Helper()
	L := max(T, 64)
	xs := append(read(x)[:T*in], randn(r, (L-T)*in, 1)...)
	y := zeros(t, L*out)
	LinearForward(y, buf(t, xs), w, b, L, in, out)
	return buf(t, read(y)[:T*out])
}

// forEachSGEMMKernel runs f with each SGEMM kernel this CPU runs in use, then restores the best.
func forEachSGEMMKernel(t *testing.T, f func(kernel string)) {
	t.Helper()
	defer useSGEMMKernel("")
	for _, kernel := range sgemmKernels() {
		if err := useSGEMMKernel(kernel); err != nil {
			t.Fatal(err)
		}
		f(kernel)
	}
}

func same(t *testing.T, got, want []float64) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("element %d: packed %v, unpacked %v", i, got[i], want[i])
		}
	}
}

// BenchmarkLinearForwardPacked times one decode step's linear layers at batch 64 on the small
// preset's shapes: LinearForward (packs w on every call) beside LinearForwardPacked, alternating,
// from each one's fastest call; reports GFLOP/s of both and their ratio (packed / unpacked).
func BenchmarkLinearForwardPacked(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range []struct {
		name       string
		T, in, out int
	}{{"up_64x512x1536", 64, 512, 1536}, {"down_64x1536x512", 64, 1536, 512}, {"lm_head_64x512x32000", 64, 512, 32000},
		{"prefill_up_512x512x1536", 512, 512, 1536}} {
		b.Run(s.name, func(b *testing.B) {
			x, w, y := buf(b, randn(r, s.T*s.in, 1)), buf(b, randn(r, s.out*s.in, 1)), zeros(b, s.T*s.out)
			wp := Alloc(PackedLinearFloats(s.in, s.out))
			defer wp.Free()
			PackLinear(wp, w, s.in, s.out)
			flops := 2 * float64(s.T) * float64(s.in) * float64(s.out)
			plain, packed := bestOf(b, func() { LinearForward(y, x, w, Buf{}, s.T, s.in, s.out) },
				func() { LinearForwardPacked(y, x, w, wp, Buf{}, s.T, s.in, s.out) })
			b.ReportMetric(flops/plain.Seconds()/1e9, "unpacked-GFLOP/s")
			b.ReportMetric(flops/packed.Seconds()/1e9, "packed-GFLOP/s")
			b.ReportMetric(plain.Seconds()/packed.Seconds(), "ratio")
		})
	}
}

// BenchmarkLinearForwardPackedStream is BenchmarkLinearForwardPacked with the weights coming from
// memory, as in a decode step (a model's weights do not fit in cache): it cycles through ~150 MB of
// copies of w and reports the mean GFLOP/s of both paths over every call and their ratio.
func BenchmarkLinearForwardPackedStream(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range []struct {
		name       string
		T, in, out int
	}{{"up_1x512x1536", 1, 512, 1536}, {"up_2x512x1536", 2, 512, 1536}, {"up_4x512x1536", 4, 512, 1536},
		{"up_8x512x1536", 8, 512, 1536}, {"down_8x1536x512", 8, 1536, 512}, {"lm_head_8x512x32000", 8, 512, 32000},
		{"up_16x512x1536", 16, 512, 1536}, {"up_64x512x1536", 64, 512, 1536}, {"lm_head_64x512x32000", 64, 512, 32000}} {
		b.Run(s.name, func(b *testing.B) {
			copies := max(3, 150<<20/(4*s.in*s.out))
			x, y := buf(b, randn(r, s.T*s.in, 1)), zeros(b, s.T*s.out)
			ws, wps := make([]Buf, copies), make([]Buf, copies)
			src := randn(r, s.out*s.in, 1)
			for i := range ws {
				ws[i], wps[i] = buf(b, src), Alloc(PackedLinearFloats(s.in, s.out))
				defer wps[i].Free()
				PackLinear(wps[i], ws[i], s.in, s.out)
			}
			var plain, packed time.Duration
			for range b.N {
				for i := range ws {
					t0 := time.Now()
					LinearForward(y, x, ws[i], Buf{}, s.T, s.in, s.out)
					plain += time.Since(t0)
				}
				for i := range ws {
					t0 := time.Now()
					LinearForwardPacked(y, x, ws[i], wps[i], Buf{}, s.T, s.in, s.out)
					packed += time.Since(t0)
				}
			}
			flops := 2 * float64(s.T) * float64(s.in) * float64(s.out) * float64(copies*b.N)
			b.ReportMetric(flops/plain.Seconds()/1e9, "unpacked-GFLOP/s")
			b.ReportMetric(flops/packed.Seconds()/1e9, "packed-GFLOP/s")
			b.ReportMetric(plain.Seconds()/packed.Seconds(), "ratio")
		})
	}
}

// bestOf runs f and g alternately b.N times and returns each one's fastest time.
func bestOf(b *testing.B, f, g func()) (tf, tg time.Duration) {
	tf, tg = time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
	for range b.N {
		t0 := time.Now()
		f()
		tf = min(tf, time.Since(t0))
		t0 = time.Now()
		g()
		tg = min(tg, time.Since(t0))
	}
	return tf, tg
}

// TestSmallProductsMatchLargeOnes checks that a product small enough to run on the calling thread
// alone (GK_SERIAL_WORK) gives each row the bits that the same row gets in a product large enough
// for the threads: a decode step of a few rows must compute what the trainer's forward does.
func TestSmallProductsMatchLargeOnes(t *testing.T) {
	defer Init(0, 2)
	if err := Init(0, 2); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(11, 12))
	forEachSGEMMKernel(t, func(kernel string) {
		for _, s := range []struct{ small, large, in, out int }{{9, 700, 128, 384}, {16, 400, 133, 390}, {13, 300, 800, 150}} {
			if s.small*s.in*s.out >= 1<<21 || s.large*s.in*s.out < 1<<21 {
				t.Fatalf("%+v: the sizes do not straddle GK_SERIAL_WORK", s)
			}
			t.Run(fmt.Sprintf("%s/%dx%dx%d", kernel, s.small, s.in, s.out), func(t *testing.T) {
				x, w := buf(t, randn(r, s.large*s.in, 1)), buf(t, randn(r, s.out*s.in, 1))
				wp := Alloc(PackedLinearFloats(s.in, s.out))
				defer wp.Free()
				PackLinear(wp, w, s.in, s.out)
				large, small := zeros(t, s.large*s.out), zeros(t, s.small*s.out)
				n := s.small * s.out
				LinearForward(large, x, w, Buf{}, s.large, s.in, s.out)
				LinearForward(small, x, w, Buf{}, s.small, s.in, s.out)
				same(t, read(small), read(large)[:n])
				LinearForwardPacked(small, x, w, wp, Buf{}, s.small, s.in, s.out)
				same(t, read(small), read(large)[:n])
				LinearForwardPacked(large, x, w, wp, Buf{}, s.large, s.in, s.out)
				same(t, read(small), read(large)[:n])
				for _, few := range []int{1, 2, 3, 4, 5, 8} { // a decode step of a few sequences
					y := zeros(t, few*s.out)
					LinearForwardPacked(y, x, w, wp, Buf{}, few, s.in, s.out)
					same(t, read(y), read(large)[:few*s.out])
				}
			})
		}
	})
}

// BenchmarkLinearForwardPackedCalls measures what calling a kernel from Go costs beside calling it
// from C: decode-step products (weights in cache), 50 calls made one by one from Go, then 50 made
// by one C loop, in turn (bestOf: each one's fastest), and the ratio of their rates (from Go over
// from C; 1 is no cost). On the 2-core VM of 2026-12-03: 0.95–0.98, so the cgo calls themselves
// cost little. The fastest batches hide libgomp's spin throttle, which slows both sides alike:
// with mean rates, a test binary without OMP_WAIT_POLICY=active ran 16 rows at 105 GFLOP/s where
// bench/linear_calls.c, the same loop in a C program, ran at 190 (kernels/README.md, "Kernels
// inside a Go process").
func BenchmarkLinearForwardPackedCalls(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, s := range []struct{ T, in, out int }{{16, 512, 1536}, {64, 512, 1536}, {16, 1536, 512}, {8, 512, 32000}} {
		b.Run(fmt.Sprintf("%dx%dx%d", s.T, s.in, s.out), func(b *testing.B) {
			const calls = 50
			x, y := buf(b, randn(r, s.T*s.in, 1)), zeros(b, s.T*s.out)
			w, wp := buf(b, randn(r, s.out*s.in, 1)), Alloc(PackedLinearFloats(s.in, s.out))
			defer wp.Free()
			PackLinear(wp, w, s.in, s.out)
			fromGo, fromC := bestOf(b, func() {
				for range calls {
					LinearForwardPacked(y, x, w, wp, Buf{}, s.T, s.in, s.out)
				}
			}, func() { linearForwardPackedRepeat(calls, y, x, w, wp, Buf{}, s.T, s.in, s.out) })
			flops := 2 * float64(s.T) * float64(s.in) * float64(s.out) * calls
			b.ReportMetric(flops/fromGo.Seconds()/1e9, "from-Go-GFLOP/s")
			b.ReportMetric(flops/fromC.Seconds()/1e9, "from-C-GFLOP/s")
			b.ReportMetric(fromC.Seconds()/fromGo.Seconds(), "ratio")
		})
	}
}

package gpu

import (
	"slices"
	"strings"
	"testing"

	"gorstar/kernels"
)

// Every op of the device backend, on a device without a GPU behind it: each launch's arguments
// are checked against the kernel's parameters as the embedded source declares them (count and
// kinds: address, int, float, size), and the sizes against the buffers.
func TestDeviceOpsLaunchMatchingKernels(t *testing.T) {
	for _, v := range []Vendor{VendorCUDA, VendorROCm} {
		d := &Device{Vendor: v, dry: true, fns: nil, gemm: map[gemmShape]bool{}}
		f := func(n int) Buf { return d.Alloc(n, kernels.F32) }
		i32 := func(n int) Buf { return d.Alloc(n, kernels.I32) }
		h := func(n int) Buf { return d.Alloc(n, kernels.BF16) }
		const T, C, V, nh, nkv, hd, B, L = 6, 32, 50, 4, 2, 16, 2, 3
		d.GEMM(false, true, T, C, C, 1, f(T*C), C, f(C*C), C, 0, f(T*C), C)
		d.GEMM(true, false, C, C, T, 1, h(T*C), C, h(T*C), C, 1, h(C*C), C)
		d.GEMM(false, false, T, C, 0, 1, f(T*C), C, f(C*C), C, 0.5, f(T*C), C)
		d.LinearForward(f(T*C), f(T*C), f(C*C), f(C), T, C, C)
		d.LinearForward(f(T*C), f(T*C), h(C*C), Buf{}, T, C, C)
		d.LinearBackward(f(T*C), f(C*C), f(C), f(T*C), f(T*C), h(C*C), T, C, C)
		d.RMSNormForward(f(T*C), f(T), f(T*C), f(C), T, C, 1e-6)
		d.RMSNormBackward(f(T*C), f(C), f(T*C), f(T*C), f(C), f(T), T, C)
		d.RoPEForward(f(T*nh*hd), i32(T), T, nh, hd, 1e6)
		d.RoPEBackward(f(T*nh*hd), i32(T), T, nh, hd, 1e6)
		d.RoPETable(f(T*hd), i32(T), T, hd, 1e6)
		d.RoPEApply(f(T*nh*hd), f(T*hd), T, nh, hd)
		d.AttentionForward(f(B*L*nh*hd), f(B*nh*L), f(B*L*nh*hd), f(B*L*nkv*hd), f(B*L*nkv*hd), i32(B*L), B, L, L, nh, nkv, hd, 0.25)
		d.AttentionBackward(f(B*L*nh*hd), f(B*L*nkv*hd), f(B*L*nkv*hd), f(B*L*nh*hd), f(B*L*nh*hd), f(B*L*nkv*hd), f(B*L*nkv*hd),
			f(B*L*nh*hd), f(B*nh*L), Buf{}, B, L, L, nh, nkv, hd, 0.25)
		d.AttentionDecode(f(2*nh*hd), f(2*nh*hd), f(2*nkv*hd), f(2*nkv*hd), []Buf{f(8 * nkv * hd), f(8 * nkv * hd)},
			[]Buf{f(8 * nkv * hd), f(8 * nkv * hd)}, []int32{3, 5}, nh, nkv, hd, 0.25)
		d.SwiGLUForward(f(T*C), f(T*C), f(T*C), T*C)
		d.SwiGLUBackward(f(T*C), Buf{}, f(T*C), f(T*C), f(T*C), T*C)
		d.Add(f(T*C), f(T*C), T*C)
		d.Scale(f(T*C), 0.5, T*C)
		d.EmbeddingForward(f(T*C), i32(T), f(V*C), T, C)
		d.EmbeddingForward(f(T*C), i32(T), h(V*C), T, C)
		d.EmbeddingBackward(f(V*C), f(T*C), i32(T), T, C)
		d.ToBF16(h(T*C), f(T*C), T*C)
		d.FromBF16(f(T*C), h(T*C), T*C)
		d.SoftmaxXent(f(T), f(T*V), f(T*V), i32(T), f(T), T, V)
		d.SumSquares(f(10000), 10000)
		d.AdamW(f(T*C), f(T*C), f(T*C), f(T*C), T*C, 1e-3, 0.9, 0.95, 1e-8, 0.1, 1, 3)
		if err := d.Err(); err != nil {
			t.Fatal(err)
		}
		launched := map[string]bool{}
		for _, n := range d.dryLaunches {
			launched[n] = true
		}
		for name := range kernelSignatures() {
			if !launched[name] {
				t.Errorf("%s: kernel %s is never launched by these ops", v, name)
			}
		}
	}
}

func TestLaunchMismatchPanics(t *testing.T) {
	d := &Device{Vendor: VendorCUDA, dry: true}
	defer func() {
		p := recover()
		if p == nil || !strings.Contains(p.(string), "gpu: launch gk_add with arguments ppi, the kernel takes pps") {
			t.Fatalf("panic %v", p)
		}
	}()
	d.launch("gk_add", 1, 1, 256, d.Alloc(4, kernels.F32), d.Alloc(4, kernels.F32), 4)
}

func TestKernelSignatures(t *testing.T) {
	sigs := kernelSignatures()
	want := map[string]string{
		"gk_gemm_hhh":          "iiiiifpipifpi",
		"gk_attention_forward": "pppppiiiiiifp",
		"gk_adamw":             "ppppsffffffff",
		"gk_softmax_xent":      "ppppppi",
	}
	for k, v := range want {
		if sigs[k] != v {
			t.Errorf("%s: %q, want %q", k, sigs[k], v)
		}
	}
	if names := slices.Sorted(func(yield func(string) bool) {
		for k := range sigs {
			if !yield(k) {
				return
			}
		}
	}); len(names) < 25 {
		t.Errorf("%d kernels: %v", len(names), names)
	}
}

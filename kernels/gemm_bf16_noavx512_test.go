//go:build noavx512

package kernels

import (
	"slices"
	"testing"
)

// With -tags noavx512 the bf16 GEMM runs on widened fp32 panels, never on vdpbf16ps.
func TestNoAVX512BF16GEMM(t *testing.T) {
	if k := GEMMBF16Kernel(); k == "bf16-avx512" {
		t.Fatalf("GEMMBF16Kernel() = %q in a -tags noavx512 build", k)
	}
	if ks := gemmBF16Kernels(); slices.Contains(ks, "bf16-avx512") {
		t.Fatalf("gemmBF16Kernels() = %v offers bf16-avx512 in a -tags noavx512 build", ks)
	}
}

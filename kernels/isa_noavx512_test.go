//go:build noavx512

package kernels

import (
	"slices"
	"testing"
)

// With -tags noavx512 no AVX-512 code runs, whatever the CPU: the backend names another kernel and
// the AVX-512 microkernel is not offered to tests either.
func TestNoAVX512Build(t *testing.T) {
	if err := Init(0, 1); err != nil {
		t.Fatal(err)
	}
	if b := Backend(); b == "cpu-avx512" {
		t.Fatalf("Backend() = %q in a -tags noavx512 build", b)
	}
	if ks := sgemmKernels(); slices.Contains(ks, "cpu-avx512") {
		t.Fatalf("sgemmKernels() = %v offers cpu-avx512 in a -tags noavx512 build", ks)
	}
	if err := useSGEMMKernel("cpu-avx512"); err == nil {
		t.Fatal(`useSGEMMKernel("cpu-avx512") succeeded in a -tags noavx512 build`)
	}
	useSGEMMKernel("")
}

//go:build noavx512

package kernels

// Built with -tags noavx512, the CPU kernels leave AVX-512 out even where the CPU has it: the SGEMM
// microkernel and every GK_VECTORIZED clone take their AVX2 (x86-64-v3) paths. It makes the AVX2
// code measurable and testable on an AVX-512 machine (on AMD's Zen 4 both run at the same peak).

// #cgo CFLAGS: -DGK_NO_AVX512
import "C"

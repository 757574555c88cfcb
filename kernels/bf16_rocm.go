//go:build rocm

package kernels

// The ROCm backend has no bfloat16 kernels yet: every bfloat16 entry point panics there.

const noBF16 = "kernels: bfloat16 is not implemented on the ROCm backend"

func AllocBF16(n int) Buf                                         { panic(noBF16) }
func (b Buf) BF16s() []uint16                                     { return nil }
func (b Buf) CopyFromBF16(src []uint16)                           { panic(noBF16) }
func (b Buf) CopyToBF16(dst []uint16)                             { panic(noBF16) }
func ToBF16(dst, src Buf, n int)                                  { panic(noBF16) }
func FromBF16(dst, src Buf, n int)                                { panic(noBF16) }
func GEMMBF16Kernel() string                                      { return "" }
func embeddingForwardBF16(out, ids, table Buf, T, C_ int)         { panic(noBF16) }
func LinearForwardBF16(y, x, w, b Buf, T, in, out int)            { panic(noBF16) }
func LinearBackwardBF16(dx, dw, db, dy, x, w Buf, T, in, out int) { panic(noBF16) }
func GEMMBF16(transA, transB bool, M, N, K int, alpha float32, A Buf, lda int, B Buf, ldb int, beta float32, C_ Buf, ldc int) {
	panic(noBF16)
}

func PackedLinearBF16Words(in, out int) int                      { panic(noBF16) }
func PackLinearBF16(wp, w Buf, in, out int)                      { panic(noBF16) }
func LinearForwardBF16Packed(y, x, w, wp, b Buf, T, in, out int) { panic(noBF16) }

func LinearForwardBF16PackedMulti(x Buf, T, in int, ls ...Linear) { panic(noBF16) }

// DecodeLayerBF16 reports false: the ROCm backend runs a decode layer's operations one by one.
func DecodeLayerBF16(l *DecodeLayer) bool { return false }

// SetDecodeLayerSerialWork does nothing on ROCm (DecodeLayerBF16 never runs) and returns 0.
func SetDecodeLayerSerialWork(n int) int { return 0 }

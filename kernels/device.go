package kernels

import "fmt"

// Device is a backend whose buffers live in its own memory (a GPU; package gpu implements it): the
// ops of this package over such buffers, with the same names, arguments and conventions. Buffers
// it returns carry a device address (DeviceBuf) and no host memory: Floats, Int32s and BF16s are
// nil, and the host reaches them through the Copy methods only.
//
// The sizes and dtypes of every argument are checked by this package before a call reaches the
// Device. Ops are queued in order; SoftmaxXent, SumSquares, the copies to host memory and
// Synchronize wait for the work before them. A device failure (out of memory, a failed launch)
// panics with the device's error, as a failed allocation does on the CPU.
type Device interface {
	Name() string // "cuda-sm_90", "rocm-gfx942": what Backend reports
	Alloc(n int, dt DType) Buf
	Free(b Buf)
	Zero(b Buf)
	Copy(dst, src Buf)
	CopyFromF32(dst Buf, src []float32)
	CopyToF32(dst []float32, src Buf)
	CopyFromI32(dst Buf, src []int32)
	CopyToI32(dst []int32, src Buf)
	CopyFromBF16(dst Buf, src []uint16)
	CopyToBF16(dst []uint16, src Buf)
	Synchronize() error

	SGEMM(transA, transB bool, M, N, K int, alpha float32, A Buf, lda int, B Buf, ldb int, beta float32, C Buf, ldc int)
	GEMMBF16(transA, transB bool, M, N, K int, alpha float32, A Buf, lda int, B Buf, ldb int, beta float32, C Buf, ldc int)
	LinearForward(y, x, w, b Buf, T, in, out int)
	LinearBackward(dx, dw, db, dy, x, w Buf, T, in, out int)
	RMSNormForward(y, rstd, x, w Buf, T, C int, eps float32)
	RMSNormBackward(dx, dw, dy, x, w, rstd Buf, T, C int)
	RoPEForward(x, pos Buf, T, heads, headDim int, theta float32)
	RoPEBackward(dx, pos Buf, T, heads, headDim int, theta float32)
	RoPETable(cs, pos Buf, T, headDim int, theta float32)
	RoPEApply(x, cs Buf, T, heads, headDim int)
	AttentionForward(out, lse, q, k, v, docStart Buf, B, Lq, Lk, nh, nkv, hd int, scale float32)
	AttentionBackward(dq, dk, dv, dout, q, k, v, out, lse, docStart Buf, B, Lq, Lk, nh, nkv, hd int, scale float32)
	AttentionDecode(out, q, kNew, vNew Buf, kCaches, vCaches []Buf, kvLens []int32, nh, nkv, hd int, scale float32)
	SwiGLUForward(out, gate, up Buf, n int)
	SwiGLUBackward(dgate, dup, dout, gate, up Buf, n int)
	Add(y, x Buf, n int)
	Scale(y Buf, a float32, n int)
	EmbeddingForward(out, ids, table Buf, T, C int) // table float32 or bfloat16
	EmbeddingBackward(dtable, dout, ids Buf, T, C int)
	SoftmaxXent(logprob, dlogits, logits, target, weight Buf, T, V int) float64
	SumSquares(x Buf, n int) float64
	AdamW(param, grad, m, v Buf, n int, lr, beta1, beta2, eps, weightDecay, gradScale float32, step int)
	ToBF16(dst, src Buf, n int)
	FromBF16(dst, src Buf, n int)
}

// dev is the installed device backend; nil: the CPU kernels (every op tests it once).
var dev Device

// UseDevice makes every later allocation and op of this package run on d (nil: the CPU again).
// Install it once, before any buffer is allocated: a buffer of one backend passed to the other
// panics (as a nil argument), and the CPU-only features are off on a device (PackedWeights,
// DecodeKeyTiles). Not safe while other calls run.
func UseDevice(d Device) { dev = d }

// OnDevice reports whether a device backend is installed.
func OnDevice() bool { return dev != nil }

// PackedWeights reports whether the prepacked weights of the decode path (PackLinear,
// LinearForwardPacked and their bfloat16 and multi forms) exist on this backend: the CPU's only.
func PackedWeights() bool { return dev == nil }

// DeviceBuf is the Buf of n elements of dt at a device address, for Device implementations.
func DeviceBuf(addr uint64, n int, dt DType) Buf {
	if addr == 0 {
		return Buf{}
	}
	return Buf{d: addr, n: n, dt: dt}
}

// DeviceAddr is a device buffer's address (0 for the zero Buf and for host buffers).
func (b Buf) DeviceAddr() uint64 { return b.d }

// cpuOnly panics for an op that exists on the CPU backend only.
func cpuOnly(op string) {
	if dev != nil {
		panic(fmt.Sprintf("kernels: %s is CPU-only (backend %s)", op, dev.Name()))
	}
}

// deviceErr panics with a device's failure.
func deviceErr(op string, err error) {
	if err != nil {
		panic(fmt.Sprintf("kernels: %s on %s: %v", op, dev.Name(), err))
	}
}

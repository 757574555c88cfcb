package kernels

/*
#include "gorstar_kernels.h"
extern long gk_decode_layer_serial_work;
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// DecodeLayerBF16 runs l in one OpenMP region: RMSNorm, the q, k and v products (bf16), q_norm
// and k_norm, RoPE, the new keys and values into the caches, AttentionDecode, o, the residual,
// RMSNorm, gate and up, SwiGLU, down, the residual (over float32 or bfloat16 caches, as
// AttentionDecode takes them). The same bits as those operations one by one
// (with LinearForwardBF16PackedMulti for q, k, v and for gate, up). It reports false, having done
// nothing, when the packed weights do not suit this kernel or T exceeds one block of rows; the
// caller then runs the operations one by one.
func DecodeLayerBF16(l *DecodeLayer) bool {
	const op = "DecodeLayerBF16"
	if dev != nil { // a CPU kernel: devices run the layer an operation at a time
		return false
	}
	T, C_, I, Q, KV := l.T, l.C, l.I, l.NH*l.HD, l.NKV*l.HD
	dims(op, "T", T, "C", C_, "I", I, "nh", l.NH, "nkv", l.NKV, "hd", l.HD)
	if T == 0 || len(l.KVLens) != T {
		panic(fmt.Sprintf("kernels: %s: %d rows and %d cache lengths", op, T, len(l.KVLens)))
	}
	for _, b := range []struct {
		name string
		b    Buf
		n    int
	}{{"x", l.X, T * C_}, {"mid", l.Mid, T * C_}, {"q", l.Q, T * Q}, {"k", l.K, T * KV}, {"v", l.V, T * KV},
		{"att", l.Att, T * Q}, {"gate", l.Gate, T * I}, {"up", l.Up, T * I}, {"rope", l.Rope, T * l.HD},
		{"inNorm", l.InNorm, C_}, {"postNorm", l.PostNorm, C_}} {
		need(op, b.name, b.b, b.n, F32)
	}
	if !l.QRaw.IsNil() || !l.KRaw.IsNil() {
		need(op, "qRaw", l.QRaw, T*Q, F32)
		need(op, "kRaw", l.KRaw, T*KV, F32)
		need(op, "qNorm", l.QNorm, l.HD, F32)
		need(op, "kNorm", l.KNorm, l.HD, F32)
	}
	optional(op, "bq", l.BQ, Q, F32)
	optional(op, "bk", l.BK, KV, F32)
	optional(op, "bv", l.BV, KV, F32)
	optional(op, "bo", l.BO, C_, F32)
	for _, w := range []Buf{l.WQ, l.WK, l.WV, l.WO, l.WGate, l.WUp, l.WDown} {
		need(op, "packed weight", w, 16, F32) // the header; the sizes are checked in C
	}
	ptrs, dt := decodeCachePtrs(op, l.KCaches, l.VCaches, l.KTiles, l.KVLens, l.Shared, l.NKV, l.HD)
	// The arguments' struct is Go memory holding Go pointers (the pointer arrays): pinned for the call.
	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(&ptrs[0])
	pin.Pin(&l.KVLens[0])
	a := C.gk_decode_layer_args{
		T: C.int(T), C: C.int(C_), I: C.int(I), nh: C.int(l.NH), nkv: C.int(l.NKV), hd: C.int(l.HD),
		eps: C.float(l.Eps), scale: C.float(l.Scale),
		x: fp(l.X), mid: fp(l.Mid), q: fp(l.Q), k: fp(l.K), v: fp(l.V), q_raw: fp(l.QRaw), k_raw: fp(l.KRaw),
		att: fp(l.Att), gate: fp(l.Gate), up: fp(l.Up),
		rope: fp(l.Rope), in_norm: fp(l.InNorm), post_norm: fp(l.PostNorm), q_norm: fp(l.QNorm), k_norm: fp(l.KNorm),
		bq: fp(l.BQ), bk: fp(l.BK), bv: fp(l.BV), bo: fp(l.BO),
		wq: (*C.uint32_t)(l.WQ.p), wk: (*C.uint32_t)(l.WK.p), wv: (*C.uint32_t)(l.WV.p), wo: (*C.uint32_t)(l.WO.p),
		wgate: (*C.uint32_t)(l.WGate.p), wup: (*C.uint32_t)(l.WUp.p), wdown: (*C.uint32_t)(l.WDown.p),
		k_caches: &ptrs[0], v_caches: &ptrs[T],
		kv_lens: (*C.int32_t)(unsafe.Pointer(&l.KVLens[0])), kv_dt: gkDType(op, "KCaches", Buf{dt: dt}),
	}
	if l.KTiles != nil {
		a.k_tiles = &ptrs[2*T]
	}
	if l.Shared != nil {
		pin.Pin(&l.Shared[0])
		a.shared = (*C.int32_t)(unsafe.Pointer(&l.Shared[0]))
	}
	return C.gk_decode_layer_bf16(&a) == 0
}

// SetDecodeLayerSerialWork sets the multiply-adds of a layer below which DecodeLayerBF16 runs on
// the calling thread alone, and returns the value it replaces: for tests, which set 0 so that the
// thread team runs on small models. Not safe while a step runs.
func SetDecodeLayerSerialWork(n int) int {
	old := int(C.gk_decode_layer_serial_work)
	C.gk_decode_layer_serial_work = C.long(n)
	return old
}

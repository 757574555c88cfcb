package kernels

/*
#include "gorstar_kernels.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// AttentionDecode is one decode step of attention for len(kvLens) sequences in one call: each has
// one new query token (q and out are [nseq, nh, hd]) and its own cache, kCaches[s] and vCaches[s]
// laid out [capacity, nkv, hd] with kvLens[s] ≥ 1 valid rows; the query sits at row kvLens[s]-1
// and sees every row. When kNew and vNew ([nseq, nkv, hd]) are not the zero Buf they are first
// written into row kvLens[s]-1 of each cache, all of them before any row attends. The result is
// AttentionForward's with B = 1, Lq = 1, Lk = kvLens[s] for each sequence (the same bits on the
// CPU backend).
//
// Rows next to each other may name the same cache with growing lengths: the new tokens of one
// sequence (a short prefill, such as a tool's answer appended to a rollout), each attending the
// rows before it and itself, which is AttentionForward's causal result for them.
//
// shared, when not nil, says that the first shared[s] rows of cache s hold the same bits as those
// of cache s-1 (shared[0] must be 0; shared[s] < kvLens[s] and < kvLens[s-1], so the rows written
// by this call are never among them): the CPU backend then reads such rows once for a run of
// sequences (a prompt prefix copied between caches) instead of once per sequence. The result does
// not change; a count that claims rows the caches do not share gives wrong attention.
//
// kTiles, when not nil, holds each cache's key tiles (PackKeyTiles' layout, KeyTileFloats of the
// cache's capacity) with rows 0..kvLens[s]-2 in them: where DecodeKeyTiles, the kernel reads the
// keys from there instead of transposing each tile of the cache every step, and writes kNew's rows
// into them as well. Tiles that do not hold the cache's rows give wrong attention.
//
// The caches (and tiles) are all float32 or, on the CPU backend, all bfloat16: kNew and vNew are
// then rounded to bfloat16 (nearest even) as they are stored, and the cached values are widened
// exactly as they are read, so the result has the bits of float32 caches holding the rounded values.
func AttentionDecode(out, q, kNew, vNew Buf, kCaches, vCaches, kTiles []Buf, kvLens, shared []int32, nh, nkv, hd int, scale float32) {
	const op = "AttentionDecode"
	nseq := len(kvLens)
	attentionCheck(op, 1, 1, 1, nh, nkv, hd)
	if len(kCaches) != nseq || len(vCaches) != nseq || (kTiles != nil && len(kTiles) != nseq) {
		panic(fmt.Sprintf("kernels: %s: %d key caches, %d value caches and %d key tiles for %d sequences", op,
			len(kCaches), len(vCaches), len(kTiles), nseq))
	}
	if nseq == 0 {
		return
	}
	need(op, "out", out, nseq*nh*hd, F32)
	need(op, "q", q, nseq*nh*hd, F32)
	optional(op, "kNew", kNew, nseq*nkv*hd, F32)
	optional(op, "vNew", vNew, nseq*nkv*hd, F32)
	if dev != nil {
		attentionDecodeDevice(out, q, kNew, vNew, kCaches, vCaches, kTiles, kvLens, nh, nkv, hd, scale)
		return
	}
	ptrs, dt := decodeCachePtrs(op, kCaches, vCaches, kTiles, kvLens, shared, nkv, hd)
	var sharedPtr *C.int32_t
	if shared != nil {
		sharedPtr = (*C.int32_t)(unsafe.Pointer(&shared[0]))
	}
	var tilesPtr *unsafe.Pointer
	if kTiles != nil {
		tilesPtr = &ptrs[2*nseq]
	}
	C.gk_attention_decode(fp(out), fp(q), fp(kNew), fp(vNew), &ptrs[0], &ptrs[nseq], tilesPtr,
		(*C.int32_t)(unsafe.Pointer(&kvLens[0])), sharedPtr, C.int(nseq), C.int(nh), C.int(nkv), C.int(hd), C.float(scale),
		gkDType(op, "kCaches", Buf{dt: dt}))
}

// attentionDecodeDevice is AttentionDecode on a Device: no key tiles (DecodeKeyTiles is false
// there), and shared prefixes are read once per sequence (the result is the same).
func attentionDecodeDevice(out, q, kNew, vNew Buf, kCaches, vCaches, kTiles []Buf, kvLens []int32, nh, nkv, hd int, scale float32) {
	const op = "AttentionDecode"
	if kTiles != nil {
		panic(fmt.Sprintf("kernels: %s: key tiles on %s (DecodeKeyTiles is false there)", op, dev.Name()))
	}
	for s, n := range kvLens {
		if n < 1 {
			panic(fmt.Sprintf("kernels: %s: sequence %d has %d keys, want ≥ 1", op, s, n))
		}
		need(op, fmt.Sprintf("kCaches[%d]", s), kCaches[s], int(n)*nkv*hd, F32)
		need(op, fmt.Sprintf("vCaches[%d]", s), vCaches[s], int(n)*nkv*hd, F32)
		if s > 0 && kCaches[s].d == kCaches[s-1].d && n <= kvLens[s-1] {
			panic(fmt.Sprintf("kernels: %s: rows %d and %d of one cache have lengths %d and %d, want growing", op, s-1, s, kvLens[s-1], n))
		}
	}
	dev.AttentionDecode(out, q, kNew, vNew, kCaches, vCaches, kvLens, nh, nkv, hd, scale)
}

// KeyTileFloats is the size of the key tiles of a cache of capacity rows of kvDim floats: the rows
// rounded up to blocks of 8.
func KeyTileFloats(capacity, kvDim int) int { return (capacity + 7) / 8 * 8 * kvDim }

// DecodeKeyTiles reports whether AttentionDecode reads key tiles on this backend (the CPU's: it
// multiplies 8 keys at a time, transposed); on others callers need not keep them.
func DecodeKeyTiles() bool { return decodeKeyTiles && dev == nil }

// PackKeyTiles writes rows from..to-1 of a cache's keys ([capacity, kvDim]) into its key tiles
// (KeyTileFloats(capacity, kvDim) elements, of the keys' type: float32 or bfloat16): blocks of 8
// rows, each transposed to [kvDim][8], so tiles[p/8][i][p%8] = keys[p][i]. A cache's tiles must
// hold every row AttentionDecode reads.
func PackKeyTiles(tiles, keys Buf, from, to, kvDim int) {
	const op = "PackKeyTiles"
	if from < 0 || to < from || kvDim <= 0 {
		panic(fmt.Sprintf("kernels: %s: rows %d..%d of %d floats", op, from, to, kvDim))
	}
	if to == from {
		return
	}
	dt := keys.dt
	if dt != BF16 {
		dt = F32
	}
	need(op, "keys", keys, to*kvDim, dt)
	need(op, "tiles", tiles, KeyTileFloats(to, kvDim), dt)
	cpuOnly("PackKeyTiles")
	if dt == BF16 {
		C.gk_pack_key_tiles_bf16((*C.uint16_t)(tiles.p), (*C.uint16_t)(keys.p), C.int(from), C.int(to), C.int(kvDim))
		return
	}
	C.gk_pack_key_tiles(fp(tiles), fp(keys), C.int(from), C.int(to), C.int(kvDim))
}

// fits reports whether b is a buffer of type dt of at least n elements (need, without building the
// argument's name, for checks inside loops).
func fits(b Buf, n int, dt DType) bool { return !b.IsNil() && b.dt == dt && b.n >= n }

// decodeCachePtrs checks AttentionDecode's cache arguments and returns the caches' pointers (the
// key caches, the value caches, then the key tiles: nil entries without them) and their element
// type, float32 or (on the CPU) bfloat16, the same for all of them.
func decodeCachePtrs(op string, kCaches, vCaches, kTiles []Buf, kvLens, shared []int32, nkv, hd int) ([]unsafe.Pointer, DType) {
	nseq := len(kvLens)
	if len(kCaches) != nseq || len(vCaches) != nseq || (kTiles != nil && len(kTiles) != nseq) {
		panic(fmt.Sprintf("kernels: %s: %d key caches, %d value caches and %d key tiles for %d sequences", op,
			len(kCaches), len(vCaches), len(kTiles), nseq))
	}
	// The pointer arrays hold C pointers only, so Go memory may carry them (cgo's rules forbid Go
	// pointers inside memory passed to C, not C pointers).
	ptrs := make([]unsafe.Pointer, 3*nseq)
	dt := F32
	if nseq > 0 && kCaches[0].dt == BF16 {
		dt = BF16
		cpuOnly(op + " over bfloat16 caches")
	}
	for s, n := range kvLens {
		if n < 1 || n > 1<<31-1 {
			panic(fmt.Sprintf("kernels: %s: sequence %d has %d keys, want ≥ 1", op, s, n))
		}
		if want := int(n) * nkv * hd; !fits(kCaches[s], want, dt) || !fits(vCaches[s], want, dt) {
			need(op, fmt.Sprintf("kCaches[%d]", s), kCaches[s], want, dt)
			need(op, fmt.Sprintf("vCaches[%d]", s), vCaches[s], want, dt)
		}
		ptrs[s], ptrs[nseq+s] = kCaches[s].p, vCaches[s].p
		if kTiles != nil {
			if want := KeyTileFloats(int(n), nkv*hd); !fits(kTiles[s], want, dt) {
				need(op, fmt.Sprintf("kTiles[%d]", s), kTiles[s], want, dt)
			}
			ptrs[2*nseq+s] = kTiles[s].p
		}
		if s > 0 && ptrs[s] == ptrs[s-1] && n <= kvLens[s-1] {
			panic(fmt.Sprintf("kernels: %s: rows %d and %d of one cache have lengths %d and %d, want growing", op, s-1, s, kvLens[s-1], n))
		}
	}
	if shared != nil {
		if len(shared) != nseq {
			panic(fmt.Sprintf("kernels: %s: %d shared counts for %d sequences", op, len(shared), nseq))
		}
		for s, n := range shared {
			if n < 0 || (s == 0 && n != 0) || (s > 0 && (n >= kvLens[s] || n >= kvLens[s-1])) {
				panic(fmt.Sprintf("kernels: %s: sequence %d shares %d rows with the one before (lengths %v)", op, s, n, kvLens[max(0, s-1):s+1]))
			}
		}
	}
	return ptrs, dt
}

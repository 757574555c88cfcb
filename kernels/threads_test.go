package kernels

import (
	"math/rand/v2"
	"testing"
)

// allOps runs every op once on shapes large enough to take the parallel paths and returns every
// output, so thread counts can be compared.
func allOps(t *testing.T, threads int) [][]float64 {
	if err := Init(0, threads); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(21, 22))
	B, L, nh, nkv, hd, V := 2, 96, 4, 2, 32, 700
	T, C := B*L, nh*hd
	x, w := buf(t, randn(r, T*C, 1)), buf(t, randn(r, C*C, 0.1))
	ids := make([]int32, T)
	pos := make([]int32, T)
	for i := range ids {
		ids[i] = int32(r.IntN(V))
		pos[i] = int32(i % L)
	}
	idb, posb := bufI32(t, ids), bufI32(t, pos)
	var outs [][]float64
	keep := func(b Buf) { outs = append(outs, read(b)) }

	emb, demb := buf(t, randn(r, V*C, 1)), zeros(t, V*C)
	h := zeros(t, T*C)
	EmbeddingForward(h, idb, emb, T, C)
	EmbeddingBackward(demb, x, idb, T, C)
	keep(demb)

	y, rstd, dx, dw := zeros(t, T*C), zeros(t, T), zeros(t, T*C), zeros(t, C)
	RMSNormForward(y, rstd, x, w.Slice(0, C), T, C, 1e-6)
	RMSNormBackward(dx, dw, h, x, w.Slice(0, C), rstd, T, C)
	keep(y)
	keep(dx)
	keep(dw)

	q := zeros(t, T*C)
	LinearForward(q, y, w, Buf{}, T, C, C)
	RoPEForward(q, posb, T, nh, hd, 1e4)
	keep(q)
	kv := buf(t, randn(r, T*nkv*hd, 1))
	out, lse := zeros(t, T*C), zeros(t, B*nh*L)
	AttentionForward(out, lse, q, kv, kv, B, L, L, nh, nkv, hd, 0.17)
	keep(out)
	dq, dk, dv := zeros(t, T*C), zeros(t, T*nkv*hd), zeros(t, T*nkv*hd)
	AttentionBackward(dq, dk, dv, h, q, kv, kv, out, lse, B, L, L, nh, nkv, hd, 0.17)
	keep(dq)
	keep(dk)
	keep(dv)
	// Packed documents: a row of several, a row of one, and padding.
	docs := bufI32(t, docStartsFor([][]int{{30, 1, 50}, {L}}, L))
	AttentionForwardDocs(out, lse, q, kv, kv, docs, B, L, L, nh, nkv, hd, 0.17)
	keep(out)
	dq.Zero()
	dk.Zero()
	AttentionBackwardDocs(dq, dk, Buf{}, h, q, kv, kv, out, lse, docs, B, L, L, nh, nkv, hd, 0.17)
	keep(dq)
	keep(dk)
	dwl, dbl := zeros(t, C*C), zeros(t, C)
	LinearBackward(dx, dwl, dbl, dq, y, w, T, C, C)
	keep(dx)
	keep(dwl)
	keep(dbl)

	n := 70000
	g, u, s := buf(t, randn(r, n, 1)), buf(t, randn(r, n, 1)), zeros(t, n)
	SwiGLUForward(s, g, u, n)
	dg, du := zeros(t, n), zeros(t, n)
	SwiGLUBackward(dg, du, s, g, u, n)
	Add(dg, du, n)
	Scale(dg, 0.5, n)
	keep(dg)
	m, v := zeros(t, n), zeros(t, n)
	AdamW(g, du, m, v, n, 1e-3, 0.9, 0.95, 1e-8, 0.1, 0.7, 1)
	keep(g)

	logits := buf(t, randn(r, T*V, 2))
	lp := zeros(t, T)
	loss := SoftmaxXent(lp, logits, logits, idb, Buf{}, T, V)
	keep(lp)
	keep(logits)
	outs = append(outs, []float64{loss, SumSquares(logits, T*V)})
	return outs
}

func TestThreadCountsAgree(t *testing.T) {
	defer Init(0, 2)
	one, two, again := allOps(t, 1), allOps(t, 2), allOps(t, 2)
	for i := range one {
		closeTo(t, "1 vs 2 threads", two[i], one[i], 1e-4, 1e-4)
		for j := range two[i] {
			if two[i][j] != again[i][j] {
				t.Fatalf("output %d element %d differs between two runs at 2 threads: %g vs %g", i, j, two[i][j], again[i][j])
			}
		}
	}
}

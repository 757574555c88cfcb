package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Backward tests: the loss is L = sum(dy * f(inputs)) evaluated by the float64 reference; the
// kernel's gradient must match L's central finite differences.

func TestRMSNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	T, C, eps := 4, 24, 1e-6
	x, w, dy := rounded(randn(r, T*C, 1)), rounded(randn(r, C, 1)), rounded(randn(r, T*C, 1))
	y, rstd := zeros(t, T*C), zeros(t, T)
	RMSNormForward(y, rstd, buf(t, x), buf(t, w), T, C, float32(eps))
	closeTo(t, "y", read(y), refRMSNorm(x, w, T, C, eps), 1e-5, 1e-5)
	dx, dw := zeros(t, T*C), zeros(t, C)
	RMSNormBackward(dx, dw, buf(t, dy), buf(t, x), buf(t, w), rstd, T, C)
	loss := func(x, w []float64) float64 { return dotAll(dy, refRMSNorm(x, w, T, C, eps)) }
	closeTo(t, "dx", read(dx), numericGrad(func(v []float64) float64 { return loss(v, w) }, x), 1e-4, 1e-4)
	closeTo(t, "dw", read(dw), numericGrad(func(v []float64) float64 { return loss(x, v) }, w), 1e-4, 1e-4)
}

func TestRoPE(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	T, heads, hd, theta := 5, 3, 8, 1e4
	pos := []int32{0, 1, 7, 100, 3000}
	x, dy := rounded(randn(r, T*heads*hd, 1)), rounded(randn(r, T*heads*hd, 1))
	xb := buf(t, x)
	RoPEForward(xb, bufI32(t, pos), T, heads, hd, float32(theta))
	closeTo(t, "rope(x)", read(xb), refRoPE(x, pos, T, heads, hd, theta), 1e-5, 1e-5)
	d := buf(t, dy)
	RoPEBackward(d, bufI32(t, pos), T, heads, hd, float32(theta))
	want := numericGrad(func(v []float64) float64 { return dotAll(dy, refRoPE(v, pos, T, heads, hd, theta)) }, x)
	closeTo(t, "dx", read(d), want, 1e-4, 1e-4)
}

// TestRoPETable: RoPEApply with RoPETable's angles is RoPEForward, bit for bit, with the positions
// beyond the rows (a decode step: RoPEForward takes the angles per row) and within them (a batch:
// per position), on 1 and 2 threads, serial and parallel sizes.
func TestRoPETable(t *testing.T) {
	defer Init(0, 2)
	for _, threads := range []int{1, 2} {
		if err := Init(0, threads); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ T, heads, hd, maxPos int }{{3, 2, 8, 5000}, {64, 4, 32, 4000}, {64, 8, 64, 4000}, {300, 4, 32, 64}} {
			r := rand.New(rand.NewPCG(uint64(c.T), uint64(c.hd)))
			pos := make([]int32, c.T)
			for i := range pos {
				pos[i] = int32(r.IntN(c.maxPos))
			}
			x := randn(r, c.T*c.heads*c.hd, 1)
			want, got, cs, pb := buf(t, x), buf(t, x), zeros(t, c.T*c.hd), bufI32(t, pos)
			RoPEForward(want, pb, c.T, c.heads, c.hd, 1e6)
			RoPETable(cs, pb, c.T, c.hd, 1e6)
			RoPEApply(got, cs, c.T, c.heads, c.hd)
			w, g := make([]float32, want.Len()), make([]float32, got.Len())
			want.CopyTo(w)
			got.CopyTo(g)
			for i := range w {
				if math.Float32bits(w[i]) != math.Float32bits(g[i]) {
					t.Fatalf("threads %d, %+v: element %d: table %v, forward %v", threads, c, i, g[i], w[i])
				}
			}
		}
	}
}

// Hugging Face pairs dimension i with i + head_dim/2 (not the interleaved 2i, 2i+1 of GPT-J):
// a unit vector on dimension 0 rotates into dimension head_dim/2.
func TestRoPERotateHalfConvention(t *testing.T) {
	x := buf(t, []float64{1, 0, 0, 0, 0, 1, 0, 0})
	RoPEForward(x, bufI32(t, []int32{2}), 1, 2, 4, 100)
	a0, a1 := 2.0, 2.0/10 // pos * theta^(-2i/d) for i = 0, 1
	want := []float64{math.Cos(a0), 0, math.Sin(a0), 0, 0, math.Cos(a1), 0, math.Sin(a1)}
	closeTo(t, "rotated", read(x), want, 1e-6, 0)
}

func TestAttention(t *testing.T) {
	cases := []struct {
		name                   string
		B, Lq, Lk, nh, nkv, hd int
	}{
		{"square", 2, 5, 5, 4, 2, 8},
		{"kv-cache", 2, 3, 7, 4, 2, 8},
		{"decode one token", 1, 1, 6, 2, 1, 4},
		{"multi-head", 1, 4, 4, 2, 2, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(11, uint64(c.Lk)))
			scale := 1 / math.Sqrt(float64(c.hd))
			nq, nk := c.B*c.Lq*c.nh*c.hd, c.B*c.Lk*c.nkv*c.hd
			q, k, v := rounded(randn(r, nq, 1)), rounded(randn(r, nk, 1)), rounded(randn(r, nk, 1))
			dy := rounded(randn(r, nq, 1))
			out, lse := zeros(t, nq), zeros(t, c.B*c.nh*c.Lq)
			qb, kb, vb := buf(t, q), buf(t, k), buf(t, v)
			AttentionForward(out, lse, qb, kb, vb, c.B, c.Lq, c.Lk, c.nh, c.nkv, c.hd, float32(scale))
			wantOut, wantLse := refAttention(q, k, v, nil, c.B, c.Lq, c.Lk, c.nh, c.nkv, c.hd, scale)
			closeTo(t, "out", read(out), wantOut, 1e-5, 1e-5)
			closeTo(t, "lse", read(lse), wantLse, 1e-5, 1e-5)

			loss := func(q, k, v []float64) float64 {
				o, _ := refAttention(q, k, v, nil, c.B, c.Lq, c.Lk, c.nh, c.nkv, c.hd, scale)
				return dotAll(dy, o)
			}
			gq := numericGrad(func(x []float64) float64 { return loss(x, k, v) }, q)
			gk := numericGrad(func(x []float64) float64 { return loss(q, x, v) }, k)
			gv := numericGrad(func(x []float64) float64 { return loss(q, k, x) }, v)
			for _, withLse := range []bool{true, false} {
				l := lse
				if !withLse {
					l = Buf{}
				}
				dq, dk, dv := zeros(t, nq), zeros(t, nk), zeros(t, nk)
				AttentionBackward(dq, dk, dv, buf(t, dy), qb, kb, vb, out, l, c.B, c.Lq, c.Lk, c.nh, c.nkv, c.hd, float32(scale))
				closeTo(t, "dq", read(dq), gq, 1e-4, 1e-3)
				closeTo(t, "dk", read(dk), gk, 1e-4, 1e-3)
				closeTo(t, "dv", read(dv), gv, 1e-4, 1e-3)
			}
		})
	}
}

// Many tiles in both directions, Lq < Lk and a ragged last tile, against the analytic float64
// gradient (itself checked against finite differences in TestAttentionReferenceBackward).
func TestAttentionTiles(t *testing.T) {
	for _, L := range [][2]int{{70, 133}, {100, 100}} {
		B, Lq, Lk, nh, nkv, hd := 2, L[0], L[1], 4, 2, 16
		r := rand.New(rand.NewPCG(23, uint64(Lq)))
		scale := 1 / math.Sqrt(float64(hd))
		nq, nk := B*Lq*nh*hd, B*Lk*nkv*hd
		q, k, v := rounded(randn(r, nq, 1)), rounded(randn(r, nk, 1)), rounded(randn(r, nk, 1))
		dy := rounded(randn(r, nq, 1))
		out, lse := zeros(t, nq), zeros(t, B*nh*Lq)
		qb, kb, vb := buf(t, q), buf(t, k), buf(t, v)
		AttentionForward(out, lse, qb, kb, vb, B, Lq, Lk, nh, nkv, hd, float32(scale))
		wantOut, wantLse := refAttention(q, k, v, nil, B, Lq, Lk, nh, nkv, hd, scale)
		closeTo(t, "out", read(out), wantOut, 1e-5, 1e-4)
		closeTo(t, "lse", read(lse), wantLse, 1e-5, 1e-5)
		gq, gk, gv := refAttentionBackward(dy, q, k, v, nil, B, Lq, Lk, nh, nkv, hd, scale)
		for _, l := range []Buf{lse, {}} {
			dq, dk, dv := zeros(t, nq), zeros(t, nk), zeros(t, nk)
			AttentionBackward(dq, dk, dv, buf(t, dy), qb, kb, vb, out, l, B, Lq, Lk, nh, nkv, hd, float32(scale))
			closeTo(t, "dq", read(dq), gq, 1e-4, 1e-3)
			closeTo(t, "dk", read(dk), gk, 1e-4, 1e-3)
			closeTo(t, "dv", read(dv), gv, 1e-4, 1e-3)
		}
	}
}

func TestAttentionReferenceBackward(t *testing.T) {
	B, Lq, Lk, nh, nkv, hd := 1, 3, 5, 2, 1, 4
	r := rand.New(rand.NewPCG(25, 26))
	q, k, v, dy := randn(r, B*Lq*nh*hd, 1), randn(r, B*Lk*nkv*hd, 1), randn(r, B*Lk*nkv*hd, 1), randn(r, B*Lq*nh*hd, 1)
	loss := func(q, k, v []float64) float64 {
		o, _ := refAttention(q, k, v, nil, B, Lq, Lk, nh, nkv, hd, 0.5)
		return dotAll(dy, o)
	}
	gq, gk, gv := refAttentionBackward(dy, q, k, v, nil, B, Lq, Lk, nh, nkv, hd, 0.5)
	closeTo(t, "dq", gq, numericGrad(func(x []float64) float64 { return loss(x, k, v) }, q), 1e-7, 1e-6)
	closeTo(t, "dk", gk, numericGrad(func(x []float64) float64 { return loss(q, x, v) }, k), 1e-7, 1e-6)
	closeTo(t, "dv", gv, numericGrad(func(x []float64) float64 { return loss(q, k, x) }, v), 1e-7, 1e-6)
}

func TestSwiGLU(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	n := 50
	g, u, dy := rounded(randn(r, n, 2)), rounded(randn(r, n, 1)), rounded(randn(r, n, 1))
	out := zeros(t, n)
	SwiGLUForward(out, buf(t, g), buf(t, u), n)
	closeTo(t, "out", read(out), refSwiGLU(g, u), 1e-6, 1e-5)
	dg, du := buf(t, randn(r, n, 1)), buf(t, randn(r, n, 1)) // written, not added to
	SwiGLUBackward(dg, du, buf(t, dy), buf(t, g), buf(t, u), n)
	closeTo(t, "dgate", read(dg), numericGrad(func(x []float64) float64 { return dotAll(dy, refSwiGLU(x, u)) }, g), 1e-5, 1e-4)
	closeTo(t, "dup", read(du), numericGrad(func(x []float64) float64 { return dotAll(dy, refSwiGLU(g, x)) }, u), 1e-5, 1e-4)
}

func TestAddScale(t *testing.T) {
	y := buf(t, []float64{1, 2, 3})
	Add(y, buf(t, []float64{10, 20, 30}), 3)
	Scale(y, 0.5, 2)
	closeTo(t, "y", read(y), []float64{5.5, 11, 33}, 0, 0)
}

func TestEmbedding(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	V, C := 6, 5
	table := rounded(randn(r, V*C, 1))
	ids := []int32{3, 0, 3, 5}
	T := len(ids)
	out := zeros(t, T*C)
	EmbeddingForward(out, bufI32(t, ids), buf(t, table), T, C)
	want := make([]float64, 0, T*C)
	for _, id := range ids {
		want = append(want, table[int(id)*C:int(id+1)*C]...)
	}
	closeTo(t, "out", read(out), want, 0, 0)

	dy := rounded(randn(r, T*C, 1))
	dtable := zeros(t, V*C)
	EmbeddingBackward(dtable, buf(t, dy), bufI32(t, ids), T, C)
	gw := numericGrad(func(x []float64) float64 {
		o := make([]float64, 0, T*C)
		for _, id := range ids {
			o = append(o, x[int(id)*C:int(id+1)*C]...)
		}
		return dotAll(dy, o)
	}, table)
	closeTo(t, "dtable", read(dtable), gw, 1e-6, 1e-5)
}

func TestSoftmaxXent(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	T, V := 4, 11
	logits := rounded(randn(r, T*V, 3))
	target := []int32{2, -1, 10, 0}
	weight := []float64{1, 5, 0.5, -2} // negative: an RL advantage
	for _, w := range [][]float64{weight, nil} {
		wb := Buf{}
		if w != nil {
			wb = buf(t, w)
		}
		lp, dl := zeros(t, T), zeros(t, T*V)
		lb := buf(t, logits)
		loss := SoftmaxXent(lp, dl, lb, bufI32(t, target), wb, T, V)
		wantLoss, wantLp := refXent(logits, target, w, T, V)
		if math.Abs(loss-wantLoss) > 1e-5*math.Max(1, math.Abs(wantLoss)) {
			t.Errorf("loss = %g, want %g", loss, wantLoss)
		}
		closeTo(t, "logprob", read(lp), wantLp, 1e-5, 1e-5)
		g := numericGrad(func(x []float64) float64 { l, _ := refXent(x, target, w, T, V); return l }, logits)
		closeTo(t, "dlogits", read(dl), g, 1e-5, 1e-4)

		// dlogits may be logits itself.
		SoftmaxXent(Buf{}, lb, lb, bufI32(t, target), wb, T, V)
		closeTo(t, "dlogits in place", read(lb), g, 1e-5, 1e-4)
	}
}

func TestSumSquares(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	x := rounded(randn(r, 3*gkChunk+17, 1))
	if got, want := SumSquares(buf(t, x), len(x)), dotAll(x, x); math.Abs(got-want) > 1e-9*want {
		t.Errorf("SumSquares = %.12g, want %.12g", got, want)
	}
}

// Two steps of AdamW computed by hand (PyTorch's formula) for one parameter.
func TestAdamW(t *testing.T) {
	p, g, m, v := buf(t, []float64{1.0, -2.0}), buf(t, []float64{0.5, 0.25}), zeros(t, 2), zeros(t, 2)
	lr, b1, b2, eps, wd, gs := 0.1, 0.9, 0.99, 1e-8, 0.01, 0.5
	want := []float64{1.0, -2.0}
	mm, vv := []float64{0, 0}, []float64{0, 0}
	grads := []float64{0.5, 0.25}
	for step := 1; step <= 2; step++ {
		AdamW(p, g, m, v, 2, float32(lr), float32(b1), float32(b2), float32(eps), float32(wd), float32(gs), step)
		for i := range want {
			gg := grads[i] * gs
			mm[i] = b1*mm[i] + (1-b1)*gg
			vv[i] = b2*vv[i] + (1-b2)*gg*gg
			mhat := mm[i] / (1 - math.Pow(b1, float64(step)))
			vhat := vv[i] / (1 - math.Pow(b2, float64(step)))
			want[i] = want[i]*(1-lr*wd) - lr*mhat/(math.Sqrt(vhat)+eps)
		}
	}
	closeTo(t, "param", read(p), want, 1e-6, 1e-6)
	closeTo(t, "m", read(m), mm, 1e-7, 1e-6)
	closeTo(t, "v", read(v), vv, 1e-9, 1e-6)
}

// TestZero clears buffers below and above the size that several threads clear in pieces, with a
// last piece that is not whole, and leaves what lies past the buffer alone.
func TestZero(t *testing.T) {
	for _, n := range []int{1, 1000, 1 << 20, 5<<20/4*3 + 7} {
		b := Alloc(n + 16)
		ones := make([]float32, n+16)
		for i := range ones {
			ones[i] = 1
		}
		b.CopyFrom(ones)
		b.Slice(0, n).Zero()
		got := make([]float32, n+16)
		b.CopyTo(got)
		for i, x := range got {
			want := float32(1)
			if i < n {
				want = 0
			}
			if x != want {
				t.Fatalf("n=%d: element %d is %v, want %v", n, i, x, want)
			}
		}
		b.Free()
	}
}

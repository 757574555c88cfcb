package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Document masking: several sequences packed into one row attend only inside their own document.

// docStartsFor lays out rows of documents (lengths per row) over rows of L positions.
func docStartsFor(rows [][]int, L int) []int32 {
	starts := make([]int32, len(rows)*L)
	for b, lengths := range rows {
		DocStarts(starts[b*L:(b+1)*L], lengths)
	}
	return starts
}

type attnCase struct {
	name                   string
	B, Lq, Lk, nh, nkv, hd int
	docs                   [][]int // per row; the rest of a row is one-token documents
}

// run returns the kernel's out, lse and gradients of sum(dy * out) for random inputs, and the
// inputs themselves.
func (c attnCase) inputs(seed uint64) (q, k, v, dy []float64) {
	r := rand.New(rand.NewPCG(seed, uint64(c.Lk)))
	nq, nk := c.B*c.Lq*c.nh*c.hd, c.B*c.Lk*c.nkv*c.hd
	return rounded(randn(r, nq, 1)), rounded(randn(r, nk, 1)), rounded(randn(r, nk, 1)), rounded(randn(r, nq, 1))
}

type attnResult struct{ out, lse, dq, dk, dv []float64 }

func (c attnCase) kernel(t *testing.T, q, k, v, dy []float64, starts []int32, withLse bool) attnResult {
	scale := float32(1 / math.Sqrt(float64(c.hd)))
	nq, nk := c.B*c.Lq*c.nh*c.hd, c.B*c.Lk*c.nkv*c.hd
	var ds Buf
	if starts != nil {
		ds = bufI32(t, starts)
	}
	qb, kb, vb := buf(t, q), buf(t, k), buf(t, v)
	out, lse := zeros(t, nq), zeros(t, c.B*c.nh*c.Lq)
	AttentionForwardDocs(out, lse, qb, kb, vb, ds, c.B, c.Lq, c.Lk, c.nh, c.nkv, c.hd, scale)
	l := lse
	if !withLse {
		l = Buf{}
	}
	dq, dk, dv := zeros(t, nq), zeros(t, nk), zeros(t, nk)
	AttentionBackwardDocs(dq, dk, dv, buf(t, dy), qb, kb, vb, out, l, ds, c.B, c.Lq, c.Lk, c.nh, c.nkv, c.hd, scale)
	return attnResult{read(out), read(lse), read(dq), read(dk), read(dv)}
}

// Small cases: forward against the float64 reference, backward against its finite differences.
func TestAttentionDocs(t *testing.T) {
	for _, c := range []attnCase{
		{"three documents", 1, 9, 9, 4, 2, 8, [][]int{{3, 4, 2}}},
		{"two rows and padding", 2, 7, 7, 4, 2, 8, [][]int{{2, 5}, {3, 1}}},
		{"one-token documents", 1, 5, 5, 2, 1, 4, [][]int{{1, 1, 2, 1}}},
		{"kv-cache, queries begin a document", 1, 4, 9, 4, 2, 8, [][]int{{5, 4}}},
		{"kv-cache, a document spans the cache", 2, 4, 9, 2, 2, 4, [][]int{{3, 6}, {2, 2, 3, 2}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			starts := docStartsFor(c.docs, c.Lk)
			scale := 1 / math.Sqrt(float64(c.hd))
			q, k, v, dy := c.inputs(31)
			wantOut, wantLse := refAttention(q, k, v, starts, c.B, c.Lq, c.Lk, c.nh, c.nkv, c.hd, scale)
			loss := func(q, k, v []float64) float64 {
				o, _ := refAttention(q, k, v, starts, c.B, c.Lq, c.Lk, c.nh, c.nkv, c.hd, scale)
				return dotAll(dy, o)
			}
			gq := numericGrad(func(x []float64) float64 { return loss(x, k, v) }, q)
			gk := numericGrad(func(x []float64) float64 { return loss(q, x, v) }, k)
			gv := numericGrad(func(x []float64) float64 { return loss(q, k, x) }, v)
			for _, withLse := range []bool{true, false} {
				got := c.kernel(t, q, k, v, dy, starts, withLse)
				closeTo(t, "out", got.out, wantOut, 1e-5, 1e-5)
				closeTo(t, "lse", got.lse, wantLse, 1e-5, 1e-5)
				closeTo(t, "dq", got.dq, gq, 1e-4, 1e-3)
				closeTo(t, "dk", got.dk, gk, 1e-4, 1e-3)
				closeTo(t, "dv", got.dv, gv, 1e-4, 1e-3)
			}
		})
	}
}

func TestAttentionDocsReferenceBackward(t *testing.T) {
	B, Lq, Lk, nh, nkv, hd := 2, 4, 7, 2, 1, 4
	starts := docStartsFor([][]int{{2, 3, 2}, {4, 1}}, Lk)
	r := rand.New(rand.NewPCG(27, 28))
	q, k, v, dy := randn(r, B*Lq*nh*hd, 1), randn(r, B*Lk*nkv*hd, 1), randn(r, B*Lk*nkv*hd, 1), randn(r, B*Lq*nh*hd, 1)
	loss := func(q, k, v []float64) float64 {
		o, _ := refAttention(q, k, v, starts, B, Lq, Lk, nh, nkv, hd, 0.5)
		return dotAll(dy, o)
	}
	gq, gk, gv := refAttentionBackward(dy, q, k, v, starts, B, Lq, Lk, nh, nkv, hd, 0.5)
	closeTo(t, "dq", gq, numericGrad(func(x []float64) float64 { return loss(x, k, v) }, q), 1e-7, 1e-6)
	closeTo(t, "dk", gk, numericGrad(func(x []float64) float64 { return loss(q, x, v) }, k), 1e-7, 1e-6)
	closeTo(t, "dv", gv, numericGrad(func(x []float64) float64 { return loss(q, k, x) }, v), 1e-7, 1e-6)
}

// Documents of lengths around the tile sizes (48 queries, 64 keys), many tiles per document,
// against the analytic float64 gradient.
func TestAttentionDocsTiles(t *testing.T) {
	docs := [][]int{{47, 1, 130, 48, 49}, {64, 65, 2, 150}}
	for _, c := range []attnCase{
		{"square", 2, 300, 300, 4, 2, 16, docs},
		{"kv-cache", 2, 170, 300, 4, 2, 16, docs},
	} {
		t.Run(c.name, func(t *testing.T) {
			starts := docStartsFor(c.docs, c.Lk)
			scale := 1 / math.Sqrt(float64(c.hd))
			q, k, v, dy := c.inputs(33)
			wantOut, wantLse := refAttention(q, k, v, starts, c.B, c.Lq, c.Lk, c.nh, c.nkv, c.hd, scale)
			gq, gk, gv := refAttentionBackward(dy, q, k, v, starts, c.B, c.Lq, c.Lk, c.nh, c.nkv, c.hd, scale)
			for _, withLse := range []bool{true, false} {
				got := c.kernel(t, q, k, v, dy, starts, withLse)
				closeTo(t, "out", got.out, wantOut, 1e-5, 1e-4)
				closeTo(t, "lse", got.lse, wantLse, 1e-5, 1e-5)
				closeTo(t, "dq", got.dq, gq, 1e-4, 1e-3)
				closeTo(t, "dk", got.dk, gk, 1e-4, 1e-3)
				closeTo(t, "dv", got.dv, gv, 1e-4, 1e-3)
			}
		})
	}
}

// A document packed into a row gets the tiling it would have alone, so its outputs and gradients
// are the same bits as running it as a row of its own; and document starts of all zeros are the
// plain causal kernel, bit for bit.
func TestAttentionDocsSameBitsAsSeparateRows(t *testing.T) {
	lengths := []int{70, 1, 130, 49}
	packed := attnCase{"packed", 1, 250, 250, 4, 2, 16, [][]int{lengths}}
	q, k, v, dy := packed.inputs(35)
	all := packed.kernel(t, q, k, v, dy, docStartsFor(packed.docs, packed.Lk), true)
	nh, nkv, hd := packed.nh, packed.nkv, packed.hd
	p := 0
	for _, n := range lengths {
		alone := attnCase{"alone", 1, n, n, nh, nkv, hd, nil}
		qs, ks := q[p*nh*hd:(p+n)*nh*hd], k[p*nkv*hd:(p+n)*nkv*hd]
		vs, dys := v[p*nkv*hd:(p+n)*nkv*hd], dy[p*nh*hd:(p+n)*nh*hd]
		got := alone.kernel(t, qs, ks, vs, dys, nil, true)
		for name, pair := range map[string][2][]float64{
			"out": {got.out, all.out[p*nh*hd : (p+n)*nh*hd]},
			"dq":  {got.dq, all.dq[p*nh*hd : (p+n)*nh*hd]},
			"dk":  {got.dk, all.dk[p*nkv*hd : (p+n)*nkv*hd]},
			"dv":  {got.dv, all.dv[p*nkv*hd : (p+n)*nkv*hd]},
		} {
			if !slices.Equal(pair[0], pair[1]) {
				t.Errorf("document at %d of %d tokens: %s differs from the document alone", p, n, name)
			}
		}
		for h := 0; h < nh; h++ {
			if !slices.Equal(got.lse[h*n:(h+1)*n], all.lse[h*packed.Lq+p:h*packed.Lq+p+n]) {
				t.Errorf("document at %d of %d tokens: lse of head %d differs from the document alone", p, n, h)
			}
		}
		p += n
	}

	for _, c := range []attnCase{{"square", 2, 150, 150, 4, 2, 16, nil}, {"kv-cache", 2, 70, 150, 4, 2, 16, nil}} {
		q, k, v, dy := c.inputs(37)
		want := c.kernel(t, q, k, v, dy, nil, true)
		got := c.kernel(t, q, k, v, dy, make([]int32, c.B*c.Lk), true)
		for i, pair := range [][2][]float64{{got.out, want.out}, {got.lse, want.lse}, {got.dq, want.dq}, {got.dk, want.dk}, {got.dv, want.dv}} {
			if !slices.Equal(pair[0], pair[1]) {
				t.Errorf("%s: output %d with zero document starts differs from no documents", c.name, i)
			}
		}
	}
}

func TestCheckDocStarts(t *testing.T) {
	for _, c := range []struct {
		starts []int32
		B, L   int
		bad    string // "" when valid
	}{
		{[]int32{0, 0, 0}, 1, 3, ""},
		{[]int32{0, 1, 2}, 1, 3, ""},
		{[]int32{0, 0, 2, 2, 0, 1, 1, 3}, 2, 4, ""},
		{[]int32{1, 1}, 1, 2, "row 0 position 0"},
		{[]int32{0, 0, 1}, 1, 3, "row 0 position 2"},
		{[]int32{0, 0, 0, 0, 0, 0, 0, 2}, 2, 4, "row 1 position 3"},
		{[]int32{0, 0, 0, 0, -1, 0, 0, 0}, 2, 4, "row 1 position 0"},
		{[]int32{0, 0}, 1, 3, "2 values"},
	} {
		err := CheckDocStarts(c.starts, c.B, c.L)
		if (err == nil) != (c.bad == "") || (err != nil && !strings.Contains(err.Error(), c.bad)) {
			t.Errorf("CheckDocStarts(%v, %d, %d) = %v, want %q", c.starts, c.B, c.L, err, c.bad)
		}
	}
	got := make([]int32, 8)
	if n := DocStarts(got, []int{3, 2}); n != 5 || !slices.Equal(got, []int32{0, 0, 0, 3, 3, 5, 6, 7}) {
		t.Errorf("DocStarts = %v covering %d", got, n)
	}
}

func TestAttentionDocsPanicsOnBadStarts(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "position 2") {
			t.Errorf("panic %v, want one naming position 2", r)
		}
	}()
	q := zeros(t, 3*4)
	AttentionForwardDocs(zeros(t, 3*4), Buf{}, q, q, q, bufI32(t, []int32{0, 0, 1}), 1, 3, 3, 1, 1, 4, 1)
}

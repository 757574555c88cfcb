package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestAttentionDecode checks the batched decode step against AttentionForward (B = 1, Lq = 1)
// per sequence (the same bits, so decode steps and prefills agree exactly), over caches of varied lengths (1 among them) and capacities, with the new key and
// value rows written by the call, on 1 and 2 threads (which must agree bit for bit).
func TestAttentionDecode(t *testing.T) {
	defer Init(0, 2)
	cases := []struct {
		name        string
		nh, nkv, hd int
		lens        []int32
	}{
		{"tiny shape", 4, 2, 32, []int32{1, 2, 7, 64, 129, 300}},
		{"one sequence, one key", 2, 1, 8, []int32{1}},
		{"odd head dim", 6, 3, 12, []int32{5, 1, 257}},
		{"mha", 2, 2, 64, []int32{3, 130}},
		{"group of 3", 6, 2, 16, []int32{65, 9}},
		{"head dim above one sgemm K block", 2, 1, 392, []int32{3, 70}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(5, uint64(len(c.lens))))
			nseq, kvRow := len(c.lens), c.nkv*c.hd
			scale := float32(1 / math.Sqrt(float64(c.hd)))
			q := buf(t, randn(r, nseq*c.nh*c.hd, 1))
			kNew, vNew := buf(t, randn(r, nseq*kvRow, 1)), buf(t, randn(r, nseq*kvRow, 1))
			kc, vc := make([]Buf, nseq), make([]Buf, nseq)
			for s, n := range c.lens {
				capacity := int(n) + s%3 // some caches longer than their contents
				kc[s], vc[s] = buf(t, randn(r, capacity*kvRow, 1)), buf(t, randn(r, capacity*kvRow, 1))
			}
			var got [2][]float64
			for i, threads := range []int{1, 2} {
				if err := Init(0, threads); err != nil {
					t.Fatal(err)
				}
				out := zeros(t, nseq*c.nh*c.hd)
				AttentionDecode(out, q, kNew, vNew, kc, vc, c.lens, c.nh, c.nkv, c.hd, scale)
				got[i] = read(out)
			}
			if d := maxAbsDiff(got[0], got[1]); d != 0 {
				t.Errorf("1 vs 2 threads differ by %g", d)
			}
			qRow := c.nh * c.hd
			for s, n := range c.lens {
				last := int(n-1) * kvRow
				if d := maxAbsDiff(read(kc[s].Slice(last, kvRow)), read(kNew.Slice(s*kvRow, kvRow))); d != 0 {
					t.Errorf("sequence %d: new key row not written (diff %g)", s, d)
				}
				if d := maxAbsDiff(read(vc[s].Slice(last, kvRow)), read(vNew.Slice(s*kvRow, kvRow))); d != 0 {
					t.Errorf("sequence %d: new value row not written (diff %g)", s, d)
				}
				want := zeros(t, qRow)
				AttentionForward(want, Buf{}, q.Slice(s*qRow, qRow), kc[s].Slice(0, int(n)*kvRow),
					vc[s].Slice(0, int(n)*kvRow), 1, 1, int(n), c.nh, c.nkv, c.hd, scale)
				if d := maxAbsDiff(got[1][s*qRow:(s+1)*qRow], read(want)); d != 0 {
					t.Errorf("sequence %d (%d keys): differs from AttentionForward by %g, want the same bits", s, n, d)
				}
			}
		})
	}
}

// TestAttentionDecodeChecks: bad sizes panic with the argument's name instead of reaching C.
func TestAttentionDecodeChecks(t *testing.T) {
	q, out, short := zeros(t, 2*4*8), zeros(t, 2*4*8), zeros(t, 3*2*8)
	long := zeros(t, 10*2*8)
	for _, c := range []struct {
		name   string
		kc, vc []Buf
		lens   []int32
	}{
		{"zero length", []Buf{long, long}, []Buf{long, long}, []int32{0, 1}},
		{"short cache", []Buf{long, short}, []Buf{long, long}, []int32{4, 4}},
		{"caches vs lengths", []Buf{long}, []Buf{long, long}, []int32{1, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil {
					t.Fatal("no panic")
				} else {
					t.Log(fmt.Sprint(r))
				}
			}()
			AttentionDecode(out, q, Buf{}, Buf{}, c.kc, c.vc, c.lens, 4, 2, 8, 0.3)
		})
	}
}

func maxAbsDiff(a, b []float64) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(a[i]-b[i]))
	}
	return d
}

// BenchmarkAttentionDecode: one decode step of 64 sequences (tiny preset's heads, caches of 65 to
// 128 keys) as one AttentionDecode call against one AttentionForward call per sequence.
func BenchmarkAttentionDecode(b *testing.B) {
	const nseq, nh, nkv, hd = 64, 4, 2, 32
	r := rand.New(rand.NewPCG(1, 1))
	kvRow, qRow := nkv*hd, nh*hd
	q, out := buf(b, randn(r, nseq*qRow, 1)), zeros(b, nseq*qRow)
	kc, vc, lens := make([]Buf, nseq), make([]Buf, nseq), make([]int32, nseq)
	for s := range nseq {
		lens[s] = int32(65 + r.IntN(64))
		kc[s], vc[s] = buf(b, randn(r, int(lens[s])*kvRow, 1)), buf(b, randn(r, int(lens[s])*kvRow, 1))
	}
	b.Run("forward-per-sequence", func(b *testing.B) {
		for range b.N {
			for s, n := range lens {
				AttentionForward(out.Slice(s*qRow, qRow), Buf{}, q.Slice(s*qRow, qRow), kc[s], vc[s], 1, 1, int(n),
					nh, nkv, hd, 0.17)
			}
		}
	})
	b.Run("decode-batched", func(b *testing.B) {
		for range b.N {
			AttentionDecode(out, q, Buf{}, Buf{}, kc, vc, lens, nh, nkv, hd, 0.17)
		}
	})
}

package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAttentionDecodeBF16Cache: AttentionDecode over bfloat16 caches (and bfloat16 key tiles) gives
// the same bits as over float32 caches holding the same values with the new rows rounded to
// bfloat16, and as AttentionForward over those per sequence: the cached values are widened exactly
// and each query's arithmetic keeps its order. The new rows land in the caches and tiles rounded to
// nearest even. Head dims off a multiple of 8 (the products' scalar tail), groups of 3, shared
// prefixes, sequences of one key and several tiles; 1 and 2 threads.
func TestAttentionDecodeBF16Cache(t *testing.T) {
	defer Init(0, 2)
	for _, c := range []decodeCase{
		{"tiny shape", 4, 2, 32, []int32{1, 2, 7, 64, 129, 300}, nil},
		{"odd head dim", 6, 3, 12, []int32{5, 1, 257}, nil},
		{"group of 3, shared prefixes", 6, 2, 16, []int32{200, 150, 190, 9, 70}, []int32{0, 130, 140, 0, 0}},
		{"many sequences", 4, 2, 32, []int32{1, 97, 3, 64, 65, 130, 8, 200, 33, 1, 129, 70, 2, 64, 300, 17}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(11, uint64(len(c.lens))))
			nseq, kvRow, qRow := len(c.lens), c.nkv*c.hd, c.nh*c.hd
			scale := float32(1 / math.Sqrt(float64(c.hd)))
			hk, hv := make([][]float64, nseq), make([][]float64, nseq)
			for s, n := range c.lens {
				capacity := int(n) + s%3
				hk[s], hv[s] = bf16Rounded(randn(r, capacity*kvRow, 1)), bf16Rounded(randn(r, capacity*kvRow, 1))
				if c.shared != nil && c.shared[s] > 0 { // rows in common with the sequence before
					m := int(c.shared[s]) * kvRow
					copy(hk[s][:m], hk[s-1])
					copy(hv[s][:m], hv[s-1])
				}
			}
			q := buf(t, randn(r, nseq*qRow, 1))
			kNew, vNew := randn(r, nseq*kvRow, 1), randn(r, nseq*kvRow, 1)
			// The float32 reference: caches of the same values, new rows rounded.
			kc, vc := make([]Buf, nseq), make([]Buf, nseq)
			for s := range nseq {
				kc[s], vc[s] = buf(t, hk[s]), buf(t, hv[s])
			}
			want := zeros(t, nseq*qRow)
			AttentionDecode(want, q, buf(t, bf16Rounded(kNew)), buf(t, bf16Rounded(vNew)), kc, vc, nil, c.lens, c.shared,
				c.nh, c.nkv, c.hd, scale)
			for s, n := range c.lens {
				fwd := zeros(t, qRow)
				AttentionForward(fwd, Buf{}, q.Slice(s*qRow, qRow), kc[s].Slice(0, int(n)*kvRow), vc[s].Slice(0, int(n)*kvRow),
					1, 1, int(n), c.nh, c.nkv, c.hd, scale)
				if d := maxAbsDiff(read(want)[s*qRow:(s+1)*qRow], read(fwd)); d != 0 {
					t.Fatalf("sequence %d: the float32 reference differs from AttentionForward by %g", s, d)
				}
			}
			for _, threads := range []int{1, 2} {
				for _, tiled := range []bool{false, true} {
					if err := Init(0, threads); err != nil {
						t.Fatal(err)
					}
					kb, vb := make([]Buf, nseq), make([]Buf, nseq)
					var tiles []Buf
					for s, n := range c.lens {
						kb[s], vb[s] = bufBF16(t, hk[s]), bufBF16(t, hv[s])
						if tiled {
							nan := make([]float64, KeyTileFloats(kb[s].Len()/kvRow, kvRow))
							for i := range nan {
								nan[i] = math.NaN()
							}
							tiles = append(tiles, bufBF16(t, nan))
							PackKeyTiles(tiles[s], kb[s], 0, int(n)-1, kvRow)
						}
					}
					out := zeros(t, nseq*qRow)
					AttentionDecode(out, q, buf(t, kNew), buf(t, vNew), kb, vb, tiles, c.lens, c.shared, c.nh, c.nkv, c.hd, scale)
					if d := maxAbsDiff(read(out), read(want)); d != 0 {
						t.Errorf("%d threads, key tiles %v: differs from float32 caches of the same values by %g, want the same bits",
							threads, tiled, d)
					}
					for s, n := range c.lens {
						last := int(n-1) * kvRow
						if d := maxAbsDiff(readBF16(kb[s].Slice(last, kvRow)), bf16Rounded(kNew[s*kvRow:(s+1)*kvRow])); d != 0 {
							t.Errorf("sequence %d: new key row differs from the rounded one by %g", s, d)
						}
						if d := maxAbsDiff(readBF16(vb[s].Slice(last, kvRow)), bf16Rounded(vNew[s*kvRow:(s+1)*kvRow])); d != 0 {
							t.Errorf("sequence %d: new value row differs from the rounded one by %g", s, d)
						}
						if !tiled {
							continue
						}
						got, keys := readBF16(tiles[s]), readBF16(kb[s])
						for p := range int(n) {
							for i := range kvRow {
								if g, w := got[p/8*8*kvRow+i*8+p%8], keys[p*kvRow+i]; g != w {
									t.Fatalf("sequence %d: key tiles hold %g for row %d, element %d; the cache %g", s, g, p, i, w)
								}
							}
						}
					}
				}
			}
		})
	}
}

// TestRoundBF16: in place, the bits ToBF16 then FromBF16 give (nearest even; NaN and infinities kept).
func TestRoundBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	x := randn(r, 1000, 3)
	x = append(x, math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1+1.0/256, 1+3.0/256, 3.4e38)
	b := buf(t, x)
	RoundBF16(b, len(x))
	got, want := read(b), bf16Rounded(x)
	for i := range got {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Fatalf("element %d: %g rounds to %g, want %g", i, x[i], got[i], want[i])
		}
	}
	nan := buf(t, []float64{math.NaN()})
	RoundBF16(nan, 1)
	if v := read(nan)[0]; !math.IsNaN(v) {
		t.Errorf("NaN rounds to %g", v)
	}
}

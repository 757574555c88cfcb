package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
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
		scale       float32 // 0: 1/sqrt(hd)
	}{
		{"tiny shape", 4, 2, 32, []int32{1, 2, 7, 64, 129, 300}, 0},
		{"one sequence, one key", 2, 1, 8, []int32{1}, 0},
		{"odd head dim", 6, 3, 12, []int32{5, 1, 257}, 0},
		{"mha", 2, 2, 64, []int32{3, 130}, 0},
		{"group of 3", 6, 2, 16, []int32{65, 9}, 0},
		{"head dim above one sgemm K block", 2, 1, 392, []int32{3, 70}, 0},
		// Scores tens apart: many exponentials below -87 (exactly 0) and around it, where the
		// decode's exp drops gk_expf's clamps and must still give its bits.
		{"scores past exp's range", 4, 2, 32, []int32{9, 64, 200}, 12},
		// Enough sequences that each thread takes all kv heads of a sequence in turn.
		{"many sequences", 4, 2, 32, []int32{1, 97, 3, 64, 65, 130, 8, 200, 33, 1, 129, 70, 2, 64, 300, 17, 5, 96}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(5, uint64(len(c.lens))))
			nseq, kvRow := len(c.lens), c.nkv*c.hd
			scale := float32(1 / math.Sqrt(float64(c.hd)))
			if c.scale != 0 {
				scale = c.scale
			}
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
				AttentionDecode(out, q, kNew, vNew, kc, vc, nil, c.lens, nil, c.nh, c.nkv, c.hd, scale)
				got[i] = read(out)
			}
			if d := maxAbsDiff(got[0], got[1]); d != 0 {
				t.Errorf("1 vs 2 threads differ by %g", d)
			}
			// With key tiles holding every row but the new one: the same bits, and the new row
			// lands in the tiles as PackKeyTiles would put it.
			tiles := keyTiles(t, kc, c.lens, kvRow, -1)
			out := zeros(t, nseq*c.nh*c.hd)
			AttentionDecode(out, q, kNew, vNew, kc, vc, tiles, c.lens, nil, c.nh, c.nkv, c.hd, scale)
			if d := maxAbsDiff(read(out), got[1]); d != 0 {
				t.Errorf("with key tiles the output differs by %g, want the same bits", d)
			}
			for s, n := range c.lens {
				got, keys := read(tiles[s]), read(kc[s])
				for p := range int(n) {
					for i := range kvRow {
						if g, w := got[p/8*8*kvRow+i*8+p%8], keys[p*kvRow+i]; g != w {
							t.Fatalf("sequence %d: key tiles hold %g for row %d, element %d; the cache %g", s, g, p, i, w)
						}
					}
				}
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

// TestAttentionDecodeSharedPrefix: sequences whose caches begin with the same rows (prompt
// prefixes copied from one cache to the others), told to the kernel through shared, give the same
// bits as without it and as AttentionForward per sequence, on 1 to 3 threads (which chunk the
// sequences differently). The runs share less than a tile, exactly whole tiles, and ragged counts;
// one pair inside a run shares more than the run.
func TestAttentionDecodeSharedPrefix(t *testing.T) {
	defer Init(0, 2)
	for _, c := range []struct {
		name        string
		nh, nkv, hd int
	}{{"tiny shape", 4, 2, 32}, {"group of 3", 6, 2, 16}} {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(9, uint64(c.nh)))
			kvRow, qRow := c.nkv*c.hd, c.nh*c.hd
			// prefix[s]: rows copied from the run's master; shared[s]: rows in common with s-1.
			lens := []int32{301, 250, 270, 400, 205, 90, 140, 129, 200, 131, 150, 64, 70}
			prefix := []int{200, 200, 200, 260, 200, 0, 128, 128, 128, 128, 63, 63, 63}
			master := []int{0, 0, 0, 0, 0, -1, 1, 1, 1, 1, 2, 2, 2}
			shared := []int32{0, 200, 200, 200, 200, 0, 0, 128, 128, 128, 0, 63, 63}
			// Sequences 2 and 3 share 260 rows: 3 copies 2's first 260.
			shared[3] = 260
			nseq := len(lens)
			masters := [3][2][]float64{}
			for i := range masters {
				masters[i] = [2][]float64{randn(r, 400*kvRow, 1), randn(r, 400*kvRow, 1)}
			}
			hk, hv := make([][]float64, nseq), make([][]float64, nseq)
			for s := range nseq {
				hk[s], hv[s] = randn(r, int(lens[s])*kvRow, 1), randn(r, int(lens[s])*kvRow, 1)
				if master[s] >= 0 {
					copy(hk[s][:prefix[s]*kvRow], masters[master[s]][0])
					copy(hv[s][:prefix[s]*kvRow], masters[master[s]][1])
				}
			}
			copy(hk[3][:260*kvRow], hk[2])
			copy(hv[3][:260*kvRow], hv[2])
			q := buf(t, randn(r, nseq*qRow, 1))
			kNew, vNew := randn(r, nseq*kvRow, 1), randn(r, nseq*kvRow, 1)
			scale := float32(1 / math.Sqrt(float64(c.hd)))
			run := func(threads int, sh []int32, tiled bool) []float64 {
				if err := Init(0, threads); err != nil {
					t.Fatal(err)
				}
				kc, vc := make([]Buf, nseq), make([]Buf, nseq)
				for s := range nseq {
					kc[s], vc[s] = buf(t, hk[s]), buf(t, hv[s])
				}
				var tiles []Buf
				if tiled {
					tiles = keyTiles(t, kc, lens, kvRow, -1)
				}
				out := zeros(t, nseq*qRow)
				AttentionDecode(out, q, buf(t, kNew), buf(t, vNew), kc, vc, tiles, lens, sh, c.nh, c.nkv, c.hd, scale)
				return read(out)
			}
			want := run(2, nil, false)
			for s, n := range lens { // AttentionForward over the caches as the decode call leaves them
				k, v := append([]float64(nil), hk[s]...), append([]float64(nil), hv[s]...)
				last := int(n-1) * kvRow
				copy(k[last:last+kvRow], kNew[s*kvRow:])
				copy(v[last:last+kvRow], vNew[s*kvRow:])
				fwd := zeros(t, qRow)
				AttentionForward(fwd, Buf{}, q.Slice(s*qRow, qRow), buf(t, k), buf(t, v), 1, 1, int(n), c.nh, c.nkv, c.hd, scale)
				if d := maxAbsDiff(want[s*qRow:(s+1)*qRow], read(fwd)); d != 0 {
					t.Fatalf("sequence %d: decode differs from AttentionForward by %g", s, d)
				}
			}
			for _, threads := range []int{1, 2, 3} {
				if d := maxAbsDiff(run(threads, shared, false), want); d != 0 {
					t.Errorf("%d threads: with shared prefixes the output differs by %g, want the same bits", threads, d)
				}
				if d := maxAbsDiff(run(threads, shared, true), want); d != 0 {
					t.Errorf("%d threads: with shared prefixes and key tiles the output differs by %g, want the same bits", threads, d)
				}
			}
		})
	}
}

// keyTiles packs rows 0..lens[s]+extra-1 of each cache into key tiles of their own (the rest of
// each tile holds NaN, which a kernel reading past the rows it should would spread).
func keyTiles(t *testing.T, kc []Buf, lens []int32, kvRow, extra int) []Buf {
	tiles := make([]Buf, len(kc))
	for s, k := range kc {
		nan := make([]float64, KeyTileFloats(k.Len()/kvRow, kvRow))
		for i := range nan {
			nan[i] = math.NaN()
		}
		tiles[s] = buf(t, nan)
		PackKeyTiles(tiles[s], k, 0, int(lens[s])+extra, kvRow)
	}
	return tiles
}

// TestAttentionDecodeChecks: bad sizes panic with the argument's name instead of reaching C.
func TestAttentionDecodeChecks(t *testing.T) {
	q, out, short := zeros(t, 2*4*8), zeros(t, 2*4*8), zeros(t, 3*2*8)
	long := zeros(t, 10*2*8)
	for _, c := range []struct {
		name   string
		kc, vc []Buf
		lens   []int32
		shared []int32
	}{
		{"zero length", []Buf{long, long}, []Buf{long, long}, []int32{0, 1}, nil},
		{"short cache", []Buf{long, short}, []Buf{long, long}, []int32{4, 4}, nil},
		{"caches vs lengths", []Buf{long}, []Buf{long, long}, []int32{1, 1}, nil},
		{"shared vs lengths", []Buf{long, long}, []Buf{long, long}, []int32{4, 4}, []int32{0}},
		{"shares the new row", []Buf{long, long}, []Buf{long, long}, []int32{4, 4}, []int32{0, 4}},
		{"first shares", []Buf{long, long}, []Buf{long, long}, []int32{4, 4}, []int32{1, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil {
					t.Fatal("no panic")
				} else {
					t.Log(fmt.Sprint(r))
				}
			}()
			AttentionDecode(out, q, Buf{}, Buf{}, c.kc, c.vc, nil, c.lens, c.shared, 4, 2, 8, 0.3)
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
			AttentionDecode(out, q, Buf{}, Buf{}, kc, vc, nil, lens, nil, nh, nkv, hd, 0.17)
		}
	})
	// As the engine calls it during rollouts (key tiles; a prompt prefix shared by the sequences
	// of a group, read once per chunk): the rollout bench's shape (64 sequences, the system turn's
	// ~900 byte-level tokens, ~200 of their own), and a compute-bound one (16 sharing 512 keys).
	for _, sc := range []struct {
		name                  string
		nseq, group, pre, own int
	}{{"shared-64x(896+200)", 64, 8, 896, 200}, {"shared-16x(512+8)", 16, 16, 512, 8}} {
		b.Run(sc.name, func(b *testing.B) { benchmarkDecodeShared(b, sc.nseq, sc.group, sc.pre, sc.own) })
	}
}

// benchmarkDecodeShared times AttentionDecode over nseq sequences of pre+own keys (tiny preset's
// heads), each group of them sharing its first pre keys, and reports GFLOP/s (4·hd a query and key).
func benchmarkDecodeShared(b *testing.B, nseq, group, pre, own int) {
	const nh, nkv, hd = 4, 2, 32
	r := rand.New(rand.NewPCG(1, 1))
	kvRow, qRow, n := nkv*hd, nh*hd, pre+own
	q, out := buf(b, randn(r, nseq*qRow, 1)), zeros(b, nseq*qRow)
	kc, vc, kt := make([]Buf, nseq), make([]Buf, nseq), make([]Buf, nseq)
	lens, shared := make([]int32, nseq), make([]int32, nseq)
	prefix := randn(r, 2*pre*kvRow, 1)
	for s := range nseq {
		lens[s] = int32(n)
		kc[s] = buf(b, append(append([]float64{}, prefix[:pre*kvRow]...), randn(r, own*kvRow, 1)...))
		vc[s] = buf(b, append(append([]float64{}, prefix[pre*kvRow:]...), randn(r, own*kvRow, 1)...))
		kt[s] = zeros(b, KeyTileFloats(n, kvRow))
		PackKeyTiles(kt[s], kc[s], 0, n, kvRow)
		if s%group != 0 {
			shared[s] = int32(pre)
		}
	}
	b.ResetTimer()
	for range b.N {
		AttentionDecode(out, q, Buf{}, Buf{}, kc, vc, kt, lens, shared, nh, nkv, hd, 0.17)
	}
	b.ReportMetric(float64(nseq*n)*nh*hd*4*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkAttentionDecodeCold: a decode step's attention as a model runs it, with the caches
// coming from memory — 64 sequences, each its own keys (no shared prefix), key tiles; the caches of
// several layers in turn and a 32 MB copy between calls (the weights a step streams between two
// layers' attention). small's heads at 97 and 400 keys, tiny's at 1,100 (a rollout's context);
// float32 caches and bf16 ones (a bf16 model's). Reports µs a call (one layer).
func BenchmarkAttentionDecodeCold(b *testing.B) {
	for _, sc := range []struct{ nh, nkv, hd, keys, layers int }{{8, 4, 64, 97, 8}, {8, 4, 64, 400, 4}, {4, 2, 32, 1100, 4}} {
		for _, bf := range []bool{false, true} {
			name := fmt.Sprintf("heads%dx%d-kv%d-keys%d", sc.nh, sc.hd, sc.nkv, sc.keys)
			if bf {
				name += "-bf16"
			}
			b.Run(name, func(b *testing.B) {
				benchmarkDecodeCold(b, sc.nh, sc.nkv, sc.hd, sc.keys, sc.layers, bf)
			})
		}
	}
}

func benchmarkDecodeCold(b *testing.B, nh, nkv, hd, keys, layers int, bf bool) {
	const nseq = 64
	r := rand.New(rand.NewPCG(1, 1))
	kvRow, qRow := nkv*hd, nh*hd
	q, out := buf(b, randn(r, nseq*qRow, 1)), zeros(b, nseq*qRow)
	kNew, vNew := buf(b, randn(r, nseq*kvRow, 1)), buf(b, randn(r, nseq*kvRow, 1))
	from, to := zeros(b, 8<<20), zeros(b, 8<<20)
	type caches struct{ k, v, tiles []Buf }
	cs := make([]caches, layers)
	lens := make([]int32, nseq)
	for s := range lens {
		lens[s] = int32(keys)
	}
	for l := range cs {
		cs[l] = caches{make([]Buf, nseq), make([]Buf, nseq), make([]Buf, nseq)}
		for s := range nseq {
			cs[l].k[s], cs[l].v[s] = buf(b, randn(r, keys*kvRow, 1)), buf(b, randn(r, keys*kvRow, 1))
			cs[l].tiles[s] = zeros(b, KeyTileFloats(keys, kvRow))
			if bf {
				cs[l].k[s], cs[l].v[s] = bufBF16(b, randn(r, keys*kvRow, 1)), bufBF16(b, randn(r, keys*kvRow, 1))
				cs[l].tiles[s] = bufBF16(b, make([]float64, KeyTileFloats(keys, kvRow)))
			}
			PackKeyTiles(cs[l].tiles[s], cs[l].k[s], 0, keys-1, kvRow)
		}
	}
	var in time.Duration
	b.ResetTimer()
	for i := range b.N {
		Copy(to, from)
		c := cs[i%layers]
		t0 := time.Now()
		AttentionDecode(out, q, kNew, vNew, c.k, c.v, c.tiles, lens, nil, nh, nkv, hd, 0.17)
		in += time.Since(t0)
	}
	b.ReportMetric(float64(in.Microseconds())/float64(b.N), "µs/call")
}

// decodeCase is one batch of sequences for the decode-attention tests: heads, KV heads and head
// dim, each sequence's key count and the length of the prefix it shares with the sequence before.
type decodeCase struct {
	name        string
	nh, nkv, hd int
	lens        []int32
	shared      []int32
}

// TestAttentionDecodeTwoQueries covers decode_scores_2, the two-query score body, in both of its
// loops: a shared prefix of exactly one tile attended by a chunk of two queries (where GCC once
// warned that the remainder loop's b * 8 overflowed, in the copy of it kept for 64 keys), and own
// tiles of 2–9 keys, a block or two, attended by a group of two query heads. The bits must be
// AttentionForward's for every sequence.
func TestAttentionDecodeTwoQueries(t *testing.T) {
	defer Init(0, 2)
	for _, c := range []decodeCase{
		{"shared tile, two sequences", 1, 1, 8, []int32{65, 65}, []int32{0, 64}},
		{"shared tile and own keys, two sequences", 1, 1, 12, []int32{70, 73}, []int32{0, 64}},
		{"group of two, short own tiles", 2, 1, 8, []int32{2, 9, 66, 72}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(11, uint64(len(c.lens))))
			kvRow, qRow, nseq := c.nkv*c.hd, c.nh*c.hd, len(c.lens)
			hk, hv := make([][]float64, nseq), make([][]float64, nseq)
			for s, n := range c.lens {
				hk[s], hv[s] = randn(r, int(n)*kvRow, 1), randn(r, int(n)*kvRow, 1)
				if s > 0 && len(c.shared) > s {
					copy(hk[s][:int(c.shared[s])*kvRow], hk[s-1])
					copy(hv[s][:int(c.shared[s])*kvRow], hv[s-1])
				}
			}
			q := buf(t, randn(r, nseq*qRow, 1))
			scale := float32(1 / math.Sqrt(float64(c.hd)))
			kc, vc := make([]Buf, nseq), make([]Buf, nseq)
			for s := range nseq {
				kc[s], vc[s] = buf(t, hk[s]), buf(t, hv[s])
			}
			for _, threads := range []int{1, 2} {
				if err := Init(0, threads); err != nil {
					t.Fatal(err)
				}
				out := zeros(t, nseq*qRow)
				AttentionDecode(out, q, Buf{}, Buf{}, kc, vc, nil, c.lens, c.shared, c.nh, c.nkv, c.hd, scale)
				got := read(out)
				for s, n := range c.lens {
					want := zeros(t, qRow)
					AttentionForward(want, Buf{}, q.Slice(s*qRow, qRow), kc[s], vc[s], 1, 1, int(n), c.nh, c.nkv, c.hd, scale)
					if d := maxAbsDiff(got[s*qRow:(s+1)*qRow], read(want)); d != 0 {
						t.Errorf("%d threads, sequence %d: decode differs from AttentionForward by %g, want the same bits",
							threads, s, d)
					}
				}
			}
		})
	}
}

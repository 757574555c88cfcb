package model

import (
	"fmt"
	"math"
	"testing"

	"gorstar/kernels"
)

// A bf16 decode step whose rows are all short inputs' runs each layer in one parallel region
// (kernels.DecodeLayerBF16): logits and the caches' keys and values have the bits of the same steps
// run an operation at a time, for q/k norms and for biases, decoding rows of several origins (one
// sequence's prefix copied into others) and appended chunks of a few tokens; with the thread team
// and on the calling thread alone.
func TestBF16WholeLayerMatchesPerOp(t *testing.T) {
	// The thread team whatever the work (the test's models are far below the threshold).
	defer kernels.SetDecodeLayerSerialWork(kernels.SetDecodeLayerSerialWork(0))
	for _, v := range []struct {
		name string
		c    Config
	}{{"qwen3", microConfig("qwen3", false)}, {"qwen2-bias", func() Config {
		c := microConfig("qwen2", false)
		c.AttentionBias = true
		return c
	}()}, {"wider", widerConfig()}} {
		t.Run(v.name, func(t *testing.T) {
			low, _ := bf16Pair(t, v.c, 4)
			ids := randomBatch(v.c, 1, 400, 11).IDs
			run := func(perOp bool) (logits [][]float32, caches []*KVCache, whole int) {
				d, err := low.NewDecoder(64, 6)
				if err != nil {
					t.Fatal(err)
				}
				defer d.Close()
				d.perOp = perOp
				caches = kvCaches(t, low, 6, 200)
				step := func(in []DecodeInput) {
					t.Helper()
					if err := d.Step(in); err != nil {
						t.Fatal(err)
					}
					out := make([]float32, len(in)*v.c.VocabSize)
					d.Logits(out)
					logits = append(logits, out)
				}
				step([]DecodeInput{{Cache: caches[0], Tokens: ids[:40]}}) // a prompt: per operation
				for i := 1; i < 4; i++ {
					caches[i].CopyPrefix(caches[0], 40-3*i)
				}
				step([]DecodeInput{{Cache: caches[4], Tokens: ids[100:130]}, {Cache: caches[5], Tokens: ids[130:150]}})
				at := 150
				for s := range 30 {
					in := make([]DecodeInput, 0, 6)
					for i, kv := range caches {
						n := 1
						if (s+i)%7 == 3 { // an appended chunk of a few tokens
							n = 5
						}
						if i == 2 && s%4 == 0 {
							continue // a paused sequence
						}
						in = append(in, DecodeInput{Cache: kv, Tokens: ids[at : at+n]})
						at = (at+n)%300 + 10
					}
					step(in)
				}
				return logits, caches, d.wholeLayers
			}
			want, wantCaches, perOpWhole := run(true)
			for _, serialWork := range []int{0, 1 << 40} { // the team; the calling thread alone
				kernels.SetDecodeLayerSerialWork(serialWork)
				got, gotCaches, whole := run(false)
				if perOpWhole != 0 || whole < 30*v.c.NumHiddenLayers {
					t.Fatalf("layers in one call: %d with perOp, %d without, want 0 and ≥ %d", perOpWhole, whole, 30*v.c.NumHiddenLayers)
				}
				for s := range want {
					if i := firstDiff(got[s], want[s]); i >= 0 {
						t.Fatalf("serial work %d, step %d: logit %d = %g in one call, %g an operation at a time", serialWork, s, i, got[s][i], want[s][i])
					}
				}
				for i := range wantCaches {
					if err := sameCache(gotCaches[i], wantCaches[i]); err != nil {
						t.Errorf("serial work %d, cache %d: %v", serialWork, i, err)
					}
				}
			}
		})
	}
}

// firstDiff is the first index where a and b differ in bits, or -1.
func firstDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// cacheFloats is a cache buffer's first n elements, float32 or bfloat16 (widened), as float32.
func cacheFloats(b kernels.Buf, n int) []float32 {
	x := make([]float32, n)
	if b.DType() != kernels.BF16 {
		b.Slice(0, n).CopyTo(x)
		return x
	}
	h := make([]uint16, n)
	b.Slice(0, n).CopyToBF16(h)
	for i, v := range h {
		x[i] = math.Float32frombits(uint32(v) << 16)
	}
	return x
}

// sameCache compares the keys and values (and key tiles) two caches hold, bit for bit.
func sameCache(a, b *KVCache) error {
	if a.Len() != b.Len() {
		return fmt.Errorf("%d tokens against %d", a.Len(), b.Len())
	}
	n := a.Len() * a.kvDim
	for l := range a.layers() {
		for _, pair := range [][2]kernels.Buf{{a.keys(l), b.keys(l)}, {a.values(l), b.values(l)}} {
			x, y := cacheFloats(pair[0], n), cacheFloats(pair[1], n)
			if i := firstDiff(x, y); i >= 0 {
				return fmt.Errorf("layer %d: float %d is %g against %g", l, i, x[i], y[i])
			}
		}
		if !a.tiles.IsNil() {
			m := kernels.KeyTileFloats(a.Len(), a.kvDim)
			x, y := cacheFloats(a.keyTiles(l), m), cacheFloats(b.keyTiles(l), m)
			for i := range x { // lanes past the last row are never written
				if p := i / a.kvDim / 8 * 8; p+i%8 < a.Len() && math.Float32bits(x[i]) != math.Float32bits(y[i]) {
					return fmt.Errorf("layer %d: key tile float %d is %g against %g", l, i, x[i], y[i])
				}
			}
		}
	}
	return nil
}

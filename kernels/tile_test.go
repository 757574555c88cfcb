package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestTileProductIsSGEMM holds the tile products attention runs on (operands packed once, then
// multiplied, possibly through a prefix of a packed B) to the bits of the microkernel SGEMM on one
// thread, which attention's products were before: every kernel this CPU runs,
// all four transpose cases, partial panels, K over one KC slice (400), alpha and beta, a C wider
// than the product.
func TestTileProductIsSGEMM(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	const extraK, extraN, extraC = 3, 5, 2
	forEachSGEMMKernel(t, func(kernel string) {
		mr, nr := tileDims()
		for _, s := range []struct{ m, n, k int }{{1, 1, 1}, {5, 7, 3}, {48, 64, 64}, {64, 64, 48}, {13, 40, 400}, {30, 100, 17}} {
			for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
				ta, tb := tr[0], tr[1]
				t.Run(fmt.Sprintf("%s/%dx%dx%d/ta%v_tb%v", kernel, s.m, s.n, s.k, ta, tb), func(t *testing.T) {
					m, n, k := s.m, s.n, s.k
					lda := k // op(A) is m x k
					if ta {
						lda = m
					}
					kb, nb := k+extraK, n+extraN // B is packed larger than the product uses
					ldb := nb
					if tb {
						ldb = kb
					}
					a, b := buf(t, randn(r, m*k, 1)), buf(t, randn(r, kb*nb, 1))
					ldc := n + extraC
					c0 := randn(r, m*ldc, 1)
					want, got := buf(t, c0), buf(t, c0)
					sgemmSerial(ta, tb, m, n, k, 0.7, a, lda, b, ldb, 0.5, want, ldc)

					ap := Alloc((m + mr - 1) / mr * mr * k)
					bp := Alloc(kb * ((nb + nr - 1) / nr * nr))
					defer ap.Free()
					defer bp.Free()
					tilePackA(ap, a, lda, ta, m, k)
					tilePackB(bp, b, ldb, tb, kb, nb)
					tileProduct(m, n, k, 0.7, ap, mr*k, bp, nr*kb, 0.5, got, ldc)
					same(t, read(got), read(want))
				})
			}
		}
	})
}

// The forward packs every key tile first on long rows and each where it is used on short ones
// (setAttentionPrepack): the same bits either way, with and without documents, a KV cache longer
// than the queries and a kv head shared by 3 heads, on every SGEMM kernel.
func TestAttentionPrepackSameBits(t *testing.T) {
	defer setAttentionPrepack(setAttentionPrepack(0))
	docs := [][]int{{47, 1, 130, 48, 49}, {64, 65, 2, 150}}
	forEachSGEMMKernel(t, func(kernel string) {
		for _, c := range []attnCase{
			{"square", 2, 300, 300, 6, 2, 16, nil},
			{"docs", 2, 300, 300, 4, 2, 16, docs},
			{"kv-cache", 2, 170, 300, 3, 1, 24, docs},
		} {
			t.Run(kernel+"/"+c.name, func(t *testing.T) {
				var starts []int32
				if c.docs != nil {
					starts = docStartsFor(c.docs, c.Lk)
				}
				q, k, v, dy := c.inputs(35)
				setAttentionPrepack(0)
				packed := c.kernel(t, q, k, v, dy, starts, true)
				setAttentionPrepack(1 << 30)
				each := c.kernel(t, q, k, v, dy, starts, true)
				same(t, packed.out, each.out)
				same(t, packed.lse, each.lse)
			})
		}
	})
}

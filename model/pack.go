package model

import (
	"gorstar/internal/usererr"
)

// Pack places sequences of the given lengths into rows of at most L tokens, first fit in the order
// given: each sequence goes into the first row that still has room for it, else into a new row.
// The order given is kept within each row and across rows' first members, so a seeded shuffle
// before packing stays meaningful. It returns, per row, the indices of its sequences; their
// lengths are the row's Batch.Docs (PackedBatch builds the batch). A length below 1 or above L is
// an error naming the sequence: dropping or truncating long sequences is the caller's policy.
func Pack(lengths []int, L int) ([][]int, error) {
	if L < 1 {
		return nil, usererr.New("pack: row length %d, want ≥ 1", L)
	}
	for i, n := range lengths {
		if n < 1 || n > L {
			return nil, usererr.New("pack: sequence %d has %d tokens, want 1 to %d", i, n, L)
		}
	}
	free := newFreeTree(len(lengths), L)
	var rows [][]int
	for i, n := range lengths {
		r := free.firstWithRoom(n) // rows never outnumber sequences, so one always exists
		if r == len(rows) {
			rows = append(rows, nil)
		}
		rows[r] = append(rows[r], i)
		free.take(r, n)
	}
	return rows, nil
}

// freeTree finds the first row with at least n free tokens in O(log rows): a segment tree over the
// rows' free space, each node holding the most free space below it.
type freeTree struct {
	size int   // leaves, a power of two
	most []int // most[1] is the root; leaves at size..2*size-1
}

func newFreeTree(rows, L int) *freeTree {
	size := 1
	for size < max(rows, 1) {
		size *= 2
	}
	t := &freeTree{size: size, most: make([]int, 2*size)}
	for i := range t.most {
		t.most[i] = L // every row starts empty
	}
	return t
}

func (t *freeTree) firstWithRoom(n int) int {
	node := 1
	for node < t.size {
		if t.most[2*node] >= n {
			node = 2 * node
		} else {
			node = 2*node + 1
		}
	}
	return node - t.size
}

func (t *freeTree) take(row, n int) {
	node := row + t.size
	t.most[node] -= n
	for node /= 2; node >= 1; node /= 2 {
		t.most[node] = max(t.most[2*node], t.most[2*node+1])
	}
}

// PackedBatch lays out the rows from Pack as a batch of rows of L tokens: ids[i] (and weights[i],
// the loss weights of sequence i) one after another from the start of each row, the rest of the
// row filled with pad and weight 0, and Docs set. weights nil gives Batch.Weights nil (weight 1
// everywhere; padding predicts nothing whatever its weight).
func PackedBatch(rows [][]int, ids [][]int32, weights [][]float32, L int, pad int32) *Batch {
	B := len(rows)
	b := &Batch{B: B, L: L, IDs: make([]int32, B*L), Docs: make([][]int, B)}
	if weights != nil {
		b.Weights = make([]float32, B*L)
	}
	for r, seqs := range rows {
		p := r * L
		for _, i := range seqs {
			copy(b.IDs[p:p+len(ids[i])], ids[i])
			if weights != nil {
				copy(b.Weights[p:p+len(ids[i])], weights[i])
			}
			p += len(ids[i])
			b.Docs[r] = append(b.Docs[r], len(ids[i]))
		}
		for ; p < (r+1)*L; p++ {
			b.IDs[p] = pad
		}
	}
	return b
}

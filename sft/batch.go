package sft

import (
	"cmp"
	"slices"

	"gorstar/model"
)

// A row is the examples that share one sequence of a batch: packed one after another, each its
// own document (attention stays inside it and RoPE positions restart).
type row []int

func (r row) length(ex []Example) int {
	n := 0
	for _, i := range r {
		n += len(ex[i].IDs)
	}
	return n
}

// Pack places examples into rows of at most maxLen tokens, first fit in order of decreasing
// length (ties in the given order), so rows come out nearly full. An example longer than maxLen
// gets a row of its own. Deterministic.
func Pack(ex []Example, idx []int, maxLen int) []row {
	sorted := slices.Clone(idx)
	slices.SortStableFunc(sorted, func(a, b int) int { return cmp.Compare(len(ex[b].IDs), len(ex[a].IDs)) })
	var rows []row
	var used []int
	for _, i := range sorted {
		n := len(ex[i].IDs)
		k := slices.IndexFunc(used, func(u int) bool { return u+n <= maxLen })
		if k < 0 {
			rows, used = append(rows, nil), append(used, 0)
			k = len(rows) - 1
		}
		rows[k] = append(rows[k], i)
		used[k] += n
	}
	return rows
}

// passesOf splits a step's examples into forward/backward passes of at most maxTokens tokens,
// each pass one row (Pack with maxTokens for the row length; buildBatch of that row alone): the
// examples lie one after another as documents, and attention skips the pairs across documents, so
// a pass computes no padding — rows of several sequences padded to the longest would (5–10% of the
// tokens on synthetic conversations). sft.max_seq_len still bounds each conversation (truncate or
// drop), and the config keeps micro_batch_tokens ≥ max_seq_len, so every example fits a pass.
func passesOf(ex []Example, idx []int, maxTokens int) []row { return Pack(ex, idx, maxTokens) }

// buildBatch lays rows out as a right-padded batch: pads are id 0 with weight 0, and every
// assistant token weighs scale (1 / the step's target count, so the step's loss is the mean over
// its assistant tokens however it is split into passes). It returns the batch and its real
// (non-pad) token count.
func buildBatch(ex []Example, rows []row, scale float32) (*model.Batch, int) {
	L := 0
	for _, r := range rows {
		L = max(L, r.length(ex))
	}
	b := &model.Batch{B: len(rows), L: L, IDs: make([]int32, len(rows)*L), Weights: make([]float32, len(rows)*L),
		Docs: make([][]int, len(rows))}
	real := 0
	for k, r := range rows {
		pos := k * L
		for _, i := range r {
			e := ex[i]
			b.Docs[k] = append(b.Docs[k], len(e.IDs))
			copy(b.IDs[pos:], e.IDs)
			for t := 1; t < len(e.Mask); t++ { // t = 0 would predict across a document boundary
				if e.Mask[t] {
					b.Weights[pos+t] = scale
				}
			}
			pos += len(e.IDs)
			real += len(e.IDs)
		}
	}
	return b, real
}

// stepTargets counts the tokens whose loss counts in a step.
func stepTargets(ex []Example, step []int) int {
	n := 0
	for _, i := range step {
		n += ex[i].Targets()
	}
	return n
}

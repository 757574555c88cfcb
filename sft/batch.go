package sft

import (
	"cmp"
	"slices"

	"gorstar/model"
)

// A row is the examples that share one sequence of a batch. Until model.Batch carries document
// boundaries every row holds one example (rowsOf); Pack fills rows with several.
type row []int

func (r row) length(ex []Example) int {
	n := 0
	for _, i := range r {
		n += len(ex[i].IDs)
	}
	return n
}

// rowsOf turns a step's examples into rows: one example per row, as long as attention cannot be
// kept inside each conversation of a packed row.
//
// Packing plugs in here: return Pack(ex, step, maxSeqLen) instead, and have buildBatch write each
// row's document boundaries (the cumulative lengths of its examples, cu_seqlens style) into the
// batch so the attention kernel masks across documents and RoPE positions restart at each one.
// buildBatch already zeroes the weight of the first token of every document, so the loss never
// predicts across a boundary.
func rowsOf(ex []Example, step []int) []row {
	rows := make([]row, len(step))
	for k, i := range step {
		rows[k] = row{i}
	}
	return rows
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

// microBatches groups rows into forward/backward passes of at most maxTokens tokens (rows ×
// padded length): longest first, so each pass pads its rows only to rows of similar length. A
// row longer than maxTokens still gets a pass of its own.
func microBatches(ex []Example, rows []row, maxTokens int) [][]row {
	sorted := slices.Clone(rows)
	slices.SortStableFunc(sorted, func(a, b row) int { return cmp.Compare(b.length(ex), a.length(ex)) })
	var out [][]row
	for _, r := range sorted {
		last := len(out) - 1
		if last >= 0 && (len(out[last])+1)*out[last][0].length(ex) <= maxTokens {
			out[last] = append(out[last], r)
			continue
		}
		out = append(out, []row{r})
	}
	return out
}

// buildBatch lays rows out as a right-padded batch: pads are id 0 with weight 0, and every
// assistant token weighs scale (1 / the step's target count, so the step's loss is the mean over
// its assistant tokens however it is split into passes). It returns the batch and its real
// (non-pad) token count.
func buildBatch(ex []Example, rows []row, scale float32) (*model.Batch, int) {
	L := 0
	for _, r := range rows {
		L = max(L, r.length(ex))
	}
	b := &model.Batch{B: len(rows), L: L, IDs: make([]int32, len(rows)*L), Weights: make([]float32, len(rows)*L)}
	real := 0
	for k, r := range rows {
		pos := k * L
		for _, i := range r {
			e := ex[i]
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

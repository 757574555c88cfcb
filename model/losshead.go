package model

import "gorstar/kernels"

// lossHead runs the lm_head and the cross-entropy chunk by chunk over the final-norm output, so
// [tokens, vocab] logits are never all live, and leaves the log-probabilities in a.hostLP
// (indexed by predicting position). With grad it also writes dLNF (the gradient of the final-norm
// output) and adds the lm_head gradient; then only the rows of nonzero weight are computed: they
// are gathered into a compact block first (prompt tokens and padding cost nothing in the lm_head,
// often its largest GEMMs) and their gradients scattered back.
func (m *Model) lossHead(a *activations, grad bool) float64 {
	T, C := a.T, m.Config.HiddenSize
	if !grad {
		loss := m.lossChunks(a, a.lnf, a.targets, a.weights, a.logprob, kernels.Buf{}, T)
		a.logprob.CopyTo(a.hostLP[:T])
		return loss
	}
	m.gradScratchFor(a)
	rows := a.hostRows[:0]
	for t := 0; t < T; t++ {
		if a.hostW[t] != 0 {
			rows = append(rows, int32(t))
		}
	}
	a.hostRows = rows
	n := len(rows) // < T: the last position of every row predicts nothing
	if a.rowIdx.IsNil() {
		a.rowIdx, a.targetsC = a.allocI32(a.capT), a.allocI32(a.capT)
		a.weightsC, a.logprobC = a.alloc(a.capT), a.alloc(a.capT)
		a.lnfC, a.dLNFC = a.alloc(a.capT*C), a.alloc(a.capT*C)
	}
	clear(a.hostLP[:T])
	a.dLNF.Slice(0, T*C).Zero()
	if n == 0 {
		return 0
	}
	// Compact targets and weights on the host .
	tc, wc := make([]int32, n), make([]float32, n)
	for i, t := range rows {
		tc[i], wc[i] = a.hostTargets[t], a.hostW[t]
	}
	a.rowIdx.CopyFromI32(rows)
	a.targetsC.CopyFromI32(tc)
	a.weightsC.CopyFrom(wc)
	kernels.EmbeddingForward(a.lnfC, a.rowIdx, a.lnf, n, C) // gather rows
	loss := m.lossChunks(a, a.lnfC, a.targetsC, a.weightsC, a.logprobC, a.dLNFC, n)
	kernels.EmbeddingBackward(a.dLNF, a.dLNFC, a.rowIdx, n, C) // scatter-add rows
	lp := make([]float32, n)
	a.logprobC.CopyTo(lp)
	for i, t := range rows {
		a.hostLP[t] = lp[i]
	}
	return loss
}

// lossChunks runs lm_head + softmax cross-entropy over n rows of x in chunks of a.chunk rows.
// With dX not nil it writes dX and adds the lm_head gradient.
func (m *Model) lossChunks(a *activations, x, targets, weights, logprob, dX kernels.Buf, n int) float64 {
	C, V := m.Config.HiddenSize, m.Config.VocabSize
	grad := !dX.IsNil()
	var loss float64
	for t0 := 0; t0 < n; t0 += a.chunk {
		k := min(a.chunk, n-t0)
		logits, xs := a.logits.Slice(0, k*V), x.Slice(t0*C, k*C)
		kernels.LinearForward(logits, xs, m.w.lmHead, kernels.Buf{}, k, C, V)
		var dLogits kernels.Buf
		if grad {
			dLogits = logits // the gradient overwrites the logits in place
		}
		loss += kernels.SoftmaxXent(logprob.Slice(t0, k), dLogits, logits, targets.Slice(t0, k),
			weights.Slice(t0, k), k, V)
		if grad {
			// dx = dlogits·W written (beta 0), so dX needs no zeroing; dW added.
			matmulInto(dX.Slice(t0*C, k*C), logits, m.w.lmHead, k, C, V, 0)
			kernels.LinearBackward(kernels.Buf{}, m.g.lmHead, kernels.Buf{}, logits, xs, m.w.lmHead, k, C, V)
		}
	}
	return loss
}

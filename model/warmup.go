package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"gorstar/tokenizer"
)

// CopyWarmupOptions configure CopyWarmup.
type CopyWarmupOptions struct {
	Steps int     // optimizer steps (0 = none)
	Rows  int     // rows per step (default 8)
	Len   int     // tokens per row (default 64: one or two examples)
	LR    float64 // peak learning rate after a 20-step linear warm-up (default 3e-3)
	Seed  uint64
	// Progress, when set, is called after every step with the step (1-based) and the mean loss
	// per copied token.
	Progress func(step int, loss float64)
}

// CopyWarmup trains m to copy numbers from its context: each row packs examples
// "#<1–8 digits><0–40 filler bytes>=<the same digits>." and only the copy after '=' is in the loss.
// The distance varies, so the model has to find the source by content — an induction head, the
// mechanism a pretrained language model brings to fine-tuning and a random-init one lacks. SFT on
// the synthetic task needs it: the code repeats the problem's operands and the answer repeats the
// tool's output. It returns the mean loss per copied token over the last 10 steps (ln 10 ≈ 2.3 when
// guessing digits, ~0 once the model copies).
func CopyWarmup(m *Model, tok *tokenizer.Tokenizer, o CopyWarmupOptions) (float64, error) {
	if o.Steps <= 0 {
		return 0, nil
	}
	if o.Rows <= 0 {
		o.Rows = 8
	}
	if o.Len <= 0 {
		o.Len = 64
	}
	if o.LR <= 0 {
		o.LR = 3e-3
	}
	pad := int32(0)
	if m.Config.EOSTokenID != nil {
		pad = int32(*m.Config.EOSTokenID)
	}
	opt := m.NewOptimizer(DefaultAdamW())
	defer opt.Close()
	rng := rand.New(rand.NewPCG(o.Seed, 0x636f7079))
	recent, n := 0.0, 0
	for s := 0; s < o.Steps; s++ {
		b, err := copyRows(rng, tok, o.Rows, o.Len, pad)
		if err != nil {
			return 0, err
		}
		m.ZeroGrads()
		r, err := m.ForwardBackward(b)
		if err != nil {
			return 0, err
		}
		if math.IsNaN(r.Loss) || math.IsInf(r.Loss, 0) {
			return 0, fmt.Errorf("copy warm-up step %d: loss %v", s+1, r.Loss)
		}
		warm := math.Min(1, float64(s+1)/20)
		if _, err := opt.Update(o.LR * warm); err != nil {
			return 0, err
		}
		if s >= o.Steps-10 {
			recent += r.Loss
			n++
		}
		if o.Progress != nil {
			o.Progress(s+1, r.Loss)
		}
	}
	return recent / float64(n), nil
}

// copyFiller is the filler alphabet: printable ASCII without digits and the two markers.
var copyFiller = func() []byte {
	var b []byte
	for c := byte(' '); c <= '~'; c++ {
		if (c < '0' || c > '9') && c != '#' && c != '=' {
			b = append(b, c)
		}
	}
	return b
}()

// copyRows builds one batch of copy examples, each row filled with whole examples and padded with
// weight 0; the loss weights average over every copied token of the batch.
func copyRows(rng *rand.Rand, tok *tokenizer.Tokenizer, rows, L int, pad int32) (*Batch, error) {
	b := &Batch{B: rows, L: L, IDs: make([]int32, rows*L), Weights: make([]float32, rows*L)}
	for i := range b.IDs {
		b.IDs[i] = pad
	}
	copied := 0
	var sb strings.Builder
	for r := 0; r < rows; r++ {
		row := b.IDs[r*L : (r+1)*L]
		w := b.Weights[r*L : (r+1)*L]
		at := 0
		for {
			sb.Reset()
			digits := 1 + rng.IntN(8)
			for i := 0; i < digits; i++ {
				sb.WriteByte(byte('0' + rng.IntN(10)))
			}
			num := sb.String()
			sb.Reset()
			sb.WriteByte('#')
			sb.WriteString(num)
			for i, gap := 0, rng.IntN(41); i < gap; i++ {
				sb.WriteByte(copyFiller[rng.IntN(len(copyFiller))])
			}
			sb.WriteByte('=')
			src := tok.Encode(sb.String())
			dst := tok.Encode(num + ".")
			if len(src) == 0 || len(dst) == 0 {
				return nil, fmt.Errorf("copy warm-up: the tokenizer encodes %q to nothing", sb.String())
			}
			if at+len(src)+len(dst) > L {
				break
			}
			copy(row[at:], src)
			at += len(src)
			copy(row[at:], dst)
			for i := range dst {
				w[at+i] = 1
			}
			at += len(dst)
			copied += len(dst)
		}
	}
	if copied == 0 {
		return nil, fmt.Errorf("copy warm-up: rows of %d tokens hold no example", L)
	}
	for i := range b.Weights {
		b.Weights[i] /= float32(copied)
	}
	return b, nil
}

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
	Steps int // most optimizer steps (0 = none)
	// Target, when > 0, ends the warm-up early once the mean loss of the last 20 steps is at most
	// Target nats per copied token: how long the model sits on the plateau before it finds the
	// induction head depends on the seed (hundreds of steps either way).
	Target float64
	// Rows per step (default 32). The plateau before the induction head forms is a matter of
	// gradient noise: with 8 rows one seed left it after ~500 steps and another was still on it
	// after 2,000; with 32 rows both reached 0.1 in 760–900 steps.
	Rows int
	Len  int     // tokens per row (default 64: one or two examples)
	LR   float64 // peak learning rate after a 20-step linear warm-up (default 3e-3)
	Seed uint64
	// Progress, when set, is called after every step with the step (1-based) and the mean loss
	// per copied token.
	Progress func(step int, loss float64)
}

// CopyWarmup trains m to copy numbers from its context: each row packs examples
// "#<1–8 digits><0–40 filler bytes>=<the same digits>." and only the copy after '=' is in the loss.
// The distance varies, so the model has to find the source by content — an induction head, the
// mechanism a pretrained language model brings to fine-tuning and a random-init one lacks. SFT on
// the synthetic task needs it: the code repeats the problem's operands and the answer repeats the
// tool's output. It returns the steps taken and the mean loss per copied token over the last 20
// (ln 10 ≈ 2.3 when guessing digits, ~0 once the model copies).
func CopyWarmup(m *Model, tok *tokenizer.Tokenizer, o CopyWarmupOptions) (steps int, loss float64, err error) {
	if o.Steps <= 0 {
		return 0, 0, nil
	}
	if o.Rows <= 0 {
		o.Rows = 32
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
	const window = 20
	var recent [window]float64
	sum := 0.0
	for s := 0; s < o.Steps; s++ {
		b, err := copyRows(rng, tok, o.Rows, o.Len, pad)
		if err != nil {
			return s, 0, err
		}
		m.ZeroGrads()
		r, err := m.ForwardBackward(b)
		if err != nil {
			return s, 0, err
		}
		if math.IsNaN(r.Loss) || math.IsInf(r.Loss, 0) {
			return s, 0, fmt.Errorf("copy warm-up step %d: loss %v", s+1, r.Loss)
		}
		warm := math.Min(1, float64(s+1)/20)
		if _, err := opt.Update(o.LR * warm); err != nil {
			return s, 0, err
		}
		sum += r.Loss - recent[s%window]
		recent[s%window] = r.Loss
		n := min(s+1, window)
		if o.Progress != nil {
			o.Progress(s+1, sum/float64(n))
		}
		if o.Target > 0 && n == window && sum/window <= o.Target {
			return s + 1, sum / window, nil
		}
	}
	return o.Steps, sum / float64(min(o.Steps, window)), nil
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

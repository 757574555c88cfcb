package engine

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// The sampler's frequencies follow the truncated, renormalized softmax for every combination of
// temperature, top-k and top-p.
func TestSamplerDistribution(t *testing.T) {
	logits := []float32{2, 1.5, 1.5, 0.3, -1, 0.9, -3, 0.0}
	softmax := func(temp float64) []float64 {
		p := make([]float64, len(logits))
		var z float64
		for i, l := range logits {
			p[i] = math.Exp(float64(l) / temp)
			z += p[i]
		}
		for i := range p {
			p[i] /= z
		}
		return p
	}
	// order of the tokens by probability, ties by id: 0, 1, 2, 5, 3, 7, 4, 6
	order := []int{0, 1, 2, 5, 3, 7, 4, 6}
	for _, tc := range []struct {
		name string
		s    Sampling
		keep []int // the tokens that may appear
	}{
		{"plain", Sampling{Temperature: 1}, order},
		{"hot", Sampling{Temperature: 2}, order},
		{"top-k 3", Sampling{Temperature: 1, TopK: 3}, order[:3]},
		{"top-p 0.6", Sampling{Temperature: 1, TopP: 0.6}, nil},
		{"top-k 4 top-p 0.8", Sampling{Temperature: 0.7, TopK: 4, TopP: 0.8}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := softmax(tc.s.Temperature)
			keep := tc.keep
			if keep == nil { // nucleus over the (top-k) set, renormalized
				set := order
				if tc.s.TopK > 0 {
					set = order[:tc.s.TopK]
				}
				var mass, acc float64
				for _, id := range set {
					mass += p[id]
				}
				for i, id := range set {
					acc += p[id]
					if acc >= tc.s.TopP*mass {
						keep = set[:i+1]
						break
					}
				}
			}
			want := make([]float64, len(p))
			var z float64
			for _, id := range keep {
				z += p[id]
			}
			for _, id := range keep {
				want[id] = p[id] / z
			}
			var sm sampler
			rng := rand.New(rand.NewPCG(1, 2))
			const n = 40000
			count := make([]float64, len(p))
			row := make([]float32, len(logits))
			for range n {
				copy(row, logits)
				count[sm.sample(row, tc.s, rng)]++
			}
			for id := range p {
				got := count[id] / n
				sd := math.Sqrt(want[id]*(1-want[id])/n) + 1e-9
				if math.Abs(got-want[id]) > 5*sd {
					t.Errorf("token %d: frequency %.4f, want %.4f (±%.4f)", id, got, want[id], sd)
				}
			}
		})
	}
}

func TestSamplerGreedyAndDeterministic(t *testing.T) {
	var sm sampler
	logits := []float32{0.1, 3, 3, -2}
	if got := sm.sample(append([]float32(nil), logits...), Sampling{}, nil); got != 1 {
		t.Errorf("greedy picked %d, want 1 (the first of the tied maxima)", got)
	}
	draw := func() []int32 {
		rng := newStream(7)
		var out []int32
		for range 50 {
			out = append(out, sm.sample(append([]float32(nil), logits...), Sampling{Temperature: 1, TopP: 0.9}, rng))
		}
		return out
	}
	a, b := draw(), draw()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed, draw %d: %d then %d", i, a[i], b[i])
		}
	}
}

func TestSamplingValidate(t *testing.T) {
	for _, s := range []Sampling{{Temperature: -1}, {TopP: 1.5}, {TopP: -0.1}, {TopK: -2}, {Temperature: math.NaN()}} {
		if s.Validate() == nil {
			t.Errorf("%+v: no error", s)
		}
	}
	if err := (Sampling{Temperature: 0.7, TopP: 1, TopK: 20}).Validate(); err != nil {
		t.Error(err)
	}
}

func TestTopLogProbs(t *testing.T) {
	logits := []float32{0.5, 2, -1, 2, 1.5, 0}
	top := topLogProbs(logits, 3)
	var z float64
	for _, l := range logits {
		z += math.Exp(float64(l))
	}
	want := []int32{1, 3, 4} // ties by lower id
	for i, tl := range top {
		lp := float32(float64(logits[want[i]]) - math.Log(z))
		if tl.Token != want[i] || math.Abs(float64(tl.LogProb-lp)) > 1e-6 {
			t.Errorf("top[%d] = %+v, want token %d logprob %g", i, tl, want[i], lp)
		}
	}
	if n := len(topLogProbs(logits, 50)); n != len(logits) {
		t.Errorf("k over the vocabulary: %d entries", n)
	}
}

// argmaxPlain is argmax's definition: the first index at which the running maximum grows.
func argmaxPlain(x []float32) int32 {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return int32(best)
}

// TestArgmaxMatchesPlainLoop checks the unrolled argmax against its definition on rows with ties,
// signed zeros, infinities and NaNs at every position that matters, at lengths around the unroll.
func TestArgmaxMatchesPlainLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1, inf, -inf, nan, 3, 3}
	for n := 1; n <= 13; n++ {
		for trial := range 4000 {
			x := make([]float32, n)
			for i := range x {
				if trial%2 == 0 {
					x[i] = special[r.IntN(len(special))]
				} else {
					x[i] = float32(r.IntN(5)) // many ties
				}
			}
			if got, want := argmax(x), argmaxPlain(x); got != want {
				t.Fatalf("argmax(%v) = %d, want %d", x, got, want)
			}
		}
	}
	x := make([]float32, 32000)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	if got, want := argmax(x), argmaxPlain(x); got != want {
		t.Fatalf("argmax of a 32,000-vocabulary row = %d, want %d", got, want)
	}
}

func BenchmarkArgmax(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	x := make([]float32, 32000)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	var plain, fast time.Duration
	for range b.N {
		t0 := time.Now()
		argmaxPlain(x)
		t1 := time.Now()
		argmax(x)
		plain, fast = plain+t1.Sub(t0), fast+time.Since(t1)
	}
	b.ReportMetric(float64(plain.Nanoseconds())/float64(b.N), "plain-ns/row")
	b.ReportMetric(float64(fast.Nanoseconds())/float64(b.N), "ns/row")
	b.ReportMetric(plain.Seconds()/fast.Seconds(), "speedup")
}

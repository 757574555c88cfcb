package rl

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// handBatch has one token per case of the surrogate; old logprobs are −1 and each logprob is
// −1 + log ρ, so ratios are as written.
func handBatch() TokenBatch {
	ratios := []float64{1.1, 1.5, 0.5, 0.5, 4, 2}
	adv := []float32{1, 1, -1, 1, -2, 7}
	b := TokenBatch{Advantages: adv, Mask: []bool{true, true, true, true, true, false}}
	for _, r := range ratios {
		b.OldLogprobs = append(b.OldLogprobs, -1)
		b.Logprobs = append(b.Logprobs, float32(-1+math.Log(r)))
	}
	return b
}

func TestPolicyLossByHand(t *testing.T) {
	k3 := func(r float64) float64 { return r - 1 - math.Log(r) }
	kl := (k3(1.1) + k3(1.5) + k3(0.5) + k3(0.5) + k3(4)) / 5
	tests := []struct {
		name       string
		cfg        LossConfig
		loss       float64
		weights    []float64
		clip, dual float64
	}{
		{
			// objectives: 1.1 (inside), 1.28 (clipped above, A>0), −0.8 (clipped below, A<0),
			// 0.5 (ratio under 1−ε with A>0: not clipped), −8 (A<0, ratio 4: unclipped); masked out.
			name:    "clip 0.2/0.28",
			cfg:     DefaultLossConfig(),
			loss:    -(1.1 + 1.28 - 0.8 + 0.5 - 8) / 5,
			weights: []float64{1.1 / 5, 0, 0, 0.5 / 5, -8.0 / 5, 0},
			clip:    2.0 / 5,
		},
		{
			// the dual clip holds token 4 at 3·(−2) = −6, with no gradient.
			name:    "dual clip 3",
			cfg:     LossConfig{ClipLow: 0.2, ClipHigh: 0.28, DualClip: 3},
			loss:    -(1.1 + 1.28 - 0.8 + 0.5 - 6) / 5,
			weights: []float64{1.1 / 5, 0, 0, 0.5 / 5, 0, 0},
			clip:    2.0 / 5,
			dual:    1.0 / 5,
		},
		{
			// a wide clip [0.4, 1.6]: tokens 1 (ratio 1.5) and 2 (0.5) now sit inside.
			name:    "clip 0.6/0.6",
			cfg:     LossConfig{ClipLow: 0.6, ClipHigh: 0.6},
			loss:    -(1.1 + 1.5 - 0.5 + 0.5 - 8) / 5,
			weights: []float64{1.1 / 5, 1.5 / 5, -0.5 / 5, 0.5 / 5, -8.0 / 5, 0},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := PolicyLoss(tc.cfg, handBatch())
			if err != nil {
				t.Fatal(err)
			}
			near(t, "loss", res.Loss, tc.loss, 1e-6)
			for i, w := range tc.weights {
				near(t, "weight", float64(res.Weights[i]), w, 1e-6)
			}
			near(t, "clip fraction", res.ClipFraction, tc.clip, 1e-12)
			near(t, "dual-clip fraction", res.DualClipFraction, tc.dual, 1e-12)
			near(t, "approx KL", res.ApproxKL, kl, 1e-6)
			if res.Tokens != 5 {
				t.Errorf("tokens = %d, want 5", res.Tokens)
			}
		})
	}
}

func TestPolicyLossTISAndNormalizer(t *testing.T) {
	b := TokenBatch{
		Logprobs:    []float32{-1, -2},
		OldLogprobs: []float32{-1, -2},
		// old − rollout = ln 3 (capped at 2) and ln ½.
		RolloutLogprobs: []float32{float32(-1 - math.Log(3)), float32(-2 + math.Log(2))},
		Advantages:      []float32{1, -1},
		Mask:            []bool{true, true},
		Normalizer:      8,
	}
	res, err := PolicyLoss(LossConfig{ClipLow: 0.2, ClipHigh: 0.28, TISCap: 2}, b)
	if err != nil {
		t.Fatal(err)
	}
	// ratios are 1: objectives 1 and −1, weighted 2 and ½, averaged over 8 tokens.
	near(t, "loss", res.Loss, -(2*1+0.5*-1)/8, 1e-6)
	near(t, "weight 0", float64(res.Weights[0]), 2.0/8, 1e-6)
	near(t, "weight 1", float64(res.Weights[1]), -0.5/8, 1e-6)
	near(t, "TIS capped fraction", res.TISCappedFraction, 0.5, 0)
	near(t, "approx KL", res.ApproxKL, 0, 0)
}

func TestPolicyLossEmptyMask(t *testing.T) {
	b := handBatch()
	b.Mask = make([]bool, len(b.Mask))
	res, err := PolicyLoss(DefaultLossConfig(), b)
	if err != nil || res.Loss != 0 || res.Tokens != 0 || len(res.Weights) != len(b.Mask) {
		t.Errorf("empty mask: %+v, %v", res, err)
	}
}

func TestPolicyLossRejectsBadInput(t *testing.T) {
	short := handBatch()
	short.Advantages = short.Advantages[:2]
	tests := []struct {
		name string
		cfg  LossConfig
		b    TokenBatch
		want string
	}{
		{"short advantages", DefaultLossConfig(), short, "2 advantages for 6 mask entries"},
		{"TIS without rollout logprobs", LossConfig{ClipLow: 0.2, ClipHigh: 0.2, TISCap: 2}, handBatch(), "rollout logprobs"},
		{"clip_low 1", LossConfig{ClipLow: 1, ClipHigh: 0.2}, handBatch(), "clip_low"},
		{"negative clip_high", LossConfig{ClipLow: 0.2, ClipHigh: -0.1}, handBatch(), "clip_high"},
		{"dual clip 1", LossConfig{ClipLow: 0.2, ClipHigh: 0.2, DualClip: 1}, handBatch(), "dual_clip"},
		{"NaN TIS cap", LossConfig{ClipLow: 0.2, ClipHigh: 0.2, TISCap: math.NaN()}, handBatch(), "tis_cap"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := PolicyLoss(tc.cfg, tc.b)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}

// TestPolicyLossGradientByFiniteDifferences checks Weights = −∂Loss/∂logprob by central
// differences. Logprobs are multiples of 2⁻⁸ and the step is 2⁻¹², so every perturbed value is
// exact in float32; tokens whose ratio lies within a few steps of a clip boundary are skipped,
// since the loss has a kink there.
func TestPolicyLossGradientByFiniteDifferences(t *testing.T) {
	const h = 1.0 / 4096
	cfgs := map[string]LossConfig{
		"plain":        DefaultLossConfig(),
		"dual clip":    {ClipLow: 0.2, ClipHigh: 0.28, DualClip: 1.5},
		"TIS":          {ClipLow: 0.2, ClipHigh: 0.28, TISCap: 1.5},
		"all together": {ClipLow: 0.1, ClipHigh: 0.3, DualClip: 1.2, TISCap: 1.2},
	}
	for name, cfg := range cfgs {
		t.Run(name, func(t *testing.T) {
			b := randomBatch(rand.New(rand.NewPCG(11, 12)), 64)
			res, err := PolicyLoss(cfg, b)
			if err != nil {
				t.Fatal(err)
			}
			checked := 0
			for i := range b.Logprobs {
				if nearKink(cfg, b, i, 4*h) {
					continue
				}
				orig := b.Logprobs[i]
				b.Logprobs[i] = orig + h
				up, _ := PolicyLoss(cfg, b)
				b.Logprobs[i] = orig - h
				down, _ := PolicyLoss(cfg, b)
				b.Logprobs[i] = orig
				fd := -(up.Loss - down.Loss) / (2 * h)
				if math.Abs(fd-float64(res.Weights[i])) > 1e-5*(1+math.Abs(fd)) {
					t.Errorf("token %d: weight %.8f, finite difference %.8f", i, res.Weights[i], fd)
				}
				checked++
			}
			if checked < 40 {
				t.Fatalf("only %d tokens away from a kink", checked)
			}
		})
	}
}

// randomBatch draws logprobs on a 2⁻⁸ grid with ratios in about [0.4, 2.7] (so every clip acts
// somewhere), advantages of both signs, a rollout engine close to the trainer, and a mask.
func randomBatch(rng *rand.Rand, n int) TokenBatch {
	grid := func(x float64) float32 { return float32(math.Round(x*256) / 256) }
	var b TokenBatch
	for i := range n {
		old := -0.1 - 4*rng.Float64()
		b.OldLogprobs = append(b.OldLogprobs, grid(old))
		b.Logprobs = append(b.Logprobs, grid(old-0.9+1.9*rng.Float64()))
		b.RolloutLogprobs = append(b.RolloutLogprobs, grid(old-0.5+rng.Float64()))
		b.Advantages = append(b.Advantages, float32(rng.NormFloat64()))
		b.Mask = append(b.Mask, i%7 != 3)
	}
	return b
}

// nearKink reports whether token i's ratio is within a factor e^margin of a clip boundary.
func nearKink(cfg LossConfig, b TokenBatch, i int, margin float64) bool {
	logRatio := float64(b.Logprobs[i]) - float64(b.OldLogprobs[i])
	for _, edge := range []float64{1 - cfg.ClipLow, 1 + cfg.ClipHigh, cfg.DualClip} {
		if edge > 0 && math.Abs(logRatio-math.Log(edge)) < margin {
			return true
		}
	}
	return false
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.9g, want %.9g", what, got, want)
	}
}

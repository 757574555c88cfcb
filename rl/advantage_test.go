package rl

import (
	"math"
	"testing"
)

func TestGroupAdvantages(t *testing.T) {
	tests := []struct {
		name    string
		rewards []float64
		want    []float64
	}{
		// mean 1/2, sample std √(4·¼/3) = 1/√3 ≈ 0.5773503.
		{"half right", []float64{1, 0, 0, 1}, []float64{0.5 / (0.5773503 + 1e-6), -0.5 / (0.5773503 + 1e-6), -0.5 / (0.5773503 + 1e-6), 0.5 / (0.5773503 + 1e-6)}},
		// mean 1/4, sample std √((9/16 + 3/16)/3) = 1/2.
		{"one of four", []float64{0, 1, 0, 0}, []float64{-0.25 / 0.500001, 0.75 / 0.500001, -0.25 / 0.500001, -0.25 / 0.500001}},
		// mean 1/2, sample std √(2·¼/1) = 1/√2.
		{"pair", []float64{1, 0}, []float64{0.5 / (0.7071068 + 1e-6), -0.5 / (0.7071068 + 1e-6)}},
		{"all right", []float64{1, 1, 1}, []float64{0, 0, 0}},
		{"all wrong", []float64{0, 0, 0, 0}, []float64{0, 0, 0, 0}},
		{"single rollout", []float64{1}, []float64{0}},
		{"empty", nil, []float64{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := GroupAdvantages(tc.rewards)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d advantages, want %d", len(got), len(tc.want))
			}
			for i := range got {
				if math.Abs(got[i]-tc.want[i]) > 1e-6 {
					t.Errorf("advantage %d = %.7f, want %.7f", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestGroupAdvantagesSumToZero(t *testing.T) {
	adv := GroupAdvantages([]float64{1, 0, 1, 1, 0, 0, 0, 1, 1})
	sum := 0.0
	for _, a := range adv {
		sum += a
	}
	if math.Abs(sum) > 1e-12 {
		t.Errorf("advantages sum to %g, want 0", sum)
	}
}

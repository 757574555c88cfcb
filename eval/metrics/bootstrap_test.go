package metrics

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestBootstrapMeanCICoverage(t *testing.T) {
	// 200 benchmarks of 100 problems, each solved with probability 0.6: the 95% interval should
	// hold the true 0.6 about 95% of the time. Seeds are fixed, so the count is too.
	const trials, problems, p = 200, 100, 0.6
	rng := rand.New(rand.NewPCG(1, 2))
	covered := 0
	for trial := range trials {
		values := make([]float64, problems)
		for i := range values {
			if rng.Float64() < p {
				values[i] = 1
			}
		}
		lo, hi := BootstrapMeanCI(values, 0.95, 1000, uint64(trial))
		if lo > mean(values) || hi < mean(values) || lo >= hi {
			t.Fatalf("trial %d: interval [%v, %v] around mean %v", trial, lo, hi, mean(values))
		}
		if lo <= p && p <= hi {
			covered++
		}
	}
	if rate := float64(covered) / trials; rate < 0.9 || rate > 0.99 {
		t.Errorf("95%% interval covered the truth in %.1f%% of trials", 100*rate)
	}
}

func TestBootstrapMeanCIWidthByHand(t *testing.T) {
	// 400 values of mean 0.5: the normal approximation gives ±1.96·√(0.25/400) = ±0.049.
	values := make([]float64, 400)
	for i := range values {
		values[i] = float64(i % 2)
	}
	lo, hi := BootstrapMeanCI(values, 0.95, 4000, 9)
	if math.Abs(lo-0.451) > 0.01 || math.Abs(hi-0.549) > 0.01 {
		t.Errorf("interval [%.4f, %.4f], want about [0.451, 0.549]", lo, hi)
	}
}

func TestBootstrapMeanCIDeterministic(t *testing.T) {
	values := []float64{1, 0, 0.25, 0.5, 1, 0.75, 0, 1}
	lo1, hi1 := BootstrapMeanCI(values, 0.95, 2000, 7)
	lo2, hi2 := BootstrapMeanCI(values, 0.95, 2000, 7)
	if lo1 != lo2 || hi1 != hi2 {
		t.Errorf("same seed gave [%v, %v] and [%v, %v]", lo1, hi1, lo2, hi2)
	}
	lo3, hi3 := BootstrapMeanCI(values, 0.95, 2000, 8)
	if lo1 == lo3 && hi1 == hi3 {
		t.Errorf("seeds 7 and 8 gave the same interval [%v, %v]", lo1, hi1)
	}
}

func TestBootstrapMeanCIDegenerate(t *testing.T) {
	tests := []struct {
		name      string
		values    []float64
		resamples int
		lo, hi    float64
	}{
		{"one problem", []float64{0.4375}, 2000, 0.4375, 0.4375},
		{"all solved", []float64{1, 1, 1, 1}, 2000, 1, 1},
		{"none solved", []float64{0, 0, 0}, 2000, 0, 0},
		{"no resamples", []float64{0, 1}, 0, 0.5, 0.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi := BootstrapMeanCI(tc.values, 0.95, tc.resamples, 1)
			if lo != tc.lo || hi != tc.hi {
				t.Errorf("[%v, %v], want [%v, %v]", lo, hi, tc.lo, tc.hi)
			}
		})
	}
	if lo, hi := BootstrapMeanCI(nil, 0.95, 2000, 1); !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("no values: [%v, %v], want NaN", lo, hi)
	}
}

func TestQuantile(t *testing.T) {
	sorted := []float64{0, 10, 20, 30, 40}
	for q, want := range map[float64]float64{0: 0, 0.25: 10, 0.5: 20, 0.6: 24, 1: 40} {
		if got := quantile(sorted, q); math.Abs(got-want) > 1e-12 {
			t.Errorf("quantile %v = %v, want %v", q, got, want)
		}
	}
}

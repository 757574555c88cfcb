package metrics

import (
	"math"
	"math/bits"
	"testing"
)

// bruteForcePassAtK enumerates every k-subset of n samples (the first c correct) and returns the
// share that holds a correct one.
func bruteForcePassAtK(n, c, k int) float64 {
	correct := uint(1)<<c - 1
	hit, all := 0, 0
	for subset := uint(0); subset < 1<<n; subset++ {
		if bits.OnesCount(subset) != k {
			continue
		}
		all++
		if subset&correct != 0 {
			hit++
		}
	}
	return float64(hit) / float64(all)
}

func TestPassAtKMatchesEnumeration(t *testing.T) {
	for n := 1; n <= 12; n++ {
		for c := 0; c <= n; c++ {
			for k := 1; k <= n; k++ {
				got, want := PassAtK(n, c, k), bruteForcePassAtK(n, c, k)
				if math.Abs(got-want) > 1e-12 {
					t.Errorf("pass@%d with %d of %d correct = %.15f, enumeration %.15f", k, c, n, got, want)
				}
			}
		}
	}
}

func TestPassAtKByHand(t *testing.T) {
	tests := []struct {
		name    string
		n, c, k int
		want    float64
	}{
		{"pass@1 is the accuracy", 16, 5, 1, 5.0 / 16},
		{"none correct", 16, 0, 8, 0},
		{"all correct", 16, 16, 1, 1},
		{"too few wrong to fill k", 10, 8, 3, 1},
		{"1 − C(3,2)/C(4,2)", 4, 1, 2, 0.5},
		{"1 − C(4,3)/C(6,3)", 6, 2, 3, 0.8},
		{"large n stays finite", 5000, 3, 100, 1 - (4898.0/4998)*(4899.0/4999)*(4900.0/5000)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := PassAtK(tc.n, tc.c, tc.k); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("PassAtK(%d, %d, %d) = %v, want %v", tc.n, tc.c, tc.k, got, tc.want)
			}
		})
	}
}

func TestPassAtKOutOfRange(t *testing.T) {
	for _, a := range [][3]int{{4, 1, 0}, {4, 1, 5}, {4, 5, 1}, {4, -1, 1}, {0, 0, 1}} {
		if got := PassAtK(a[0], a[1], a[2]); !math.IsNaN(got) {
			t.Errorf("PassAtK%v = %v, want NaN", a, got)
		}
	}
}

func TestPassAtKCurve(t *testing.T) {
	curve := PassAtKCurve(4, 1)
	want := []float64{0.25, 0.5, 0.75, 1}
	for i := range want {
		if math.Abs(curve[i]-want[i]) > 1e-12 {
			t.Errorf("pass@%d = %v, want %v", i+1, curve[i], want[i])
		}
	}
}

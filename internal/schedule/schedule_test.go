package schedule

import (
	"math"
	"testing"
)

func TestLR(t *testing.T) {
	tests := []struct {
		name                string
		step, total, warmup int
		kind                Kind
		want                float64
	}{
		{"first warm-up step", 0, 100, 20, Constant, 0.05},
		{"mid warm-up", 9, 100, 20, Constant, 0.5},
		{"last warm-up step is the peak", 19, 100, 20, Constant, 1},
		{"constant after warm-up", 20, 100, 20, Constant, 1},
		{"constant past total", 500, 100, 20, Constant, 1},
		{"no warm-up", 0, 100, 0, Constant, 1},
		{"cosine warm-up is linear", 1, 100, 4, Cosine, 0.5},
		{"cosine starts at the peak", 4, 104, 4, Cosine, 1},
		{"cosine half way", 54, 104, 4, Cosine, 0.5},
		{"cosine a quarter in", 29, 104, 4, Cosine, (1 + math.Sqrt2/2) / 2},
		{"cosine last step", 103, 104, 4, Cosine, (1 + math.Cos(math.Pi*99/100)) / 2},
		{"cosine past total is 0", 200, 104, 4, Cosine, 0},
		{"cosine with nothing after warm-up keeps the peak", 5, 4, 4, Cosine, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := LR(tc.step, tc.total, tc.warmup, 2e-6, tc.kind)
			if math.Abs(got-2e-6*tc.want) > 1e-18 {
				t.Errorf("lr = %g, want %g", got, 2e-6*tc.want)
			}
		})
	}
}

func TestCosineDecreases(t *testing.T) {
	prev := math.Inf(1)
	for s := 10; s < 1000; s++ {
		lr := LR(s, 1000, 10, 5e-6, Cosine)
		if lr > prev || lr < 0 {
			t.Fatalf("step %d: lr %g after %g", s, lr, prev)
		}
		prev = lr
	}
}

func TestParseKind(t *testing.T) {
	for _, s := range []string{"constant", "cosine"} {
		if k, err := ParseKind(s); err != nil || string(k) != s {
			t.Errorf("ParseKind(%q) = %q, %v", s, k, err)
		}
	}
	if _, err := ParseKind("linear"); err == nil {
		t.Error("ParseKind accepted linear")
	}
}

package model

import (
	"strings"
	"testing"
)

func TestMemAvailable(t *testing.T) {
	b, ok := memAvailable(strings.NewReader("MemTotal:       16000000 kB\nMemAvailable:    2048 kB\n"))
	if !ok || b != 2048<<10 {
		t.Errorf("%d %v", b, ok)
	}
	if _, ok := memAvailable(strings.NewReader("MemTotal: 1 kB\n")); ok {
		t.Error("no MemAvailable line read as known")
	}
}

func TestPlanStep(t *testing.T) {
	cfg, err := Preset("tiny", 0)
	if err != nil {
		t.Fatal(err)
	}
	plan := cfg.PlanStep(FP32, 2, 64, 0, 0, 1)
	if !plan.Fits || plan.Budget != 1<<30 || !strings.HasPrefix(plan.Fit, "fits the") {
		t.Errorf("tiny in 1 GiB: %+v", plan)
	}
	if plan.RecomputeAll.Activations >= plan.KeepAll.Activations || plan.Memory != plan.KeepAll {
		t.Errorf("recomputing every layer should keep less: %+v", plan)
	}
	tight := cfg.PlanStep(FP32, 2, 64, 0, 0, float64(plan.Memory.Total-1)/(1<<30))
	if tight.Fits || !strings.Contains(tight.Fit, "needs about") {
		t.Errorf("one byte short: %+v", tight)
	}
	if none := cfg.PlanStep(FP32, 2, 64, 0, 0, -1); none.Budget != 0 || none.Fits || !strings.Contains(none.Fit, "no memory budget") {
		t.Errorf("no budget: %+v", none)
	}
}

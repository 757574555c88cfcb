//go:build linux

package pytool

import (
	"context"
	"strings"
	"testing"
	"time"

	"gorstar/internal/testenv"
)

// BenchSuite gives a report a workload, in order, each beside the baseline with the speed-up of
// one over the other, and says what runs when no bar shows.
func TestBenchSuite(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	cfg := testConfig()
	cfg.Workers = 1
	p := newTestPool(t, cfg)
	var logged []string
	reps, err := BenchSuite(context.Background(), SuiteOptions{Runner: p, Name: "pool", Workloads: []string{"print", "comb"},
		Concurrency: 2, Duration: 200 * time.Millisecond, Baseline: &cfg, BaselineWorkers: 1,
		Log: func(s string) { logged = append(logged, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 2 || len(logged) != 4 || !strings.HasPrefix(logged[1], "bench print: fresh interpreter") {
		t.Fatalf("%d reports, logged %q", len(reps), logged)
	}
	for i, r := range reps {
		if r.Workload != []string{"print", "comb"}[i] || r.Runner != "pool" || r.Calls == 0 || r.Baseline == nil ||
			r.Baseline.Calls == 0 || r.SpeedUp != r.CallsPerS/r.Baseline.CallsPerS {
			t.Errorf("report %d: %+v", i, r)
		}
	}
}

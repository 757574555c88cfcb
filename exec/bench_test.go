package exec

import (
	"context"
	"testing"
)

// BenchmarkPoolPrintSequential is one call at a time through one warm worker: the per-call
// overhead of the pool (fork, limits, sandbox hygiene, pipes, JSON).
func BenchmarkPoolPrintSequential(b *testing.B) {
	cfg := testConfig()
	cfg.Workers = 1
	p := newTestPool(b, cfg)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r := p.Run(ctx, Call{Code: "print('hello')"}); r.Status != StatusOK {
			b.Fatalf("%+v", r)
		}
	}
}

// BenchmarkFreshPrintSequential is the same through one fresh interpreter per call (the baseline).
func BenchmarkFreshPrintSequential(b *testing.B) {
	f, err := NewFreshRunner(testConfig(), 1)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r := f.Run(ctx, Call{Code: "print('hello')"}); r.Status != StatusOK {
			b.Fatalf("%+v", r)
		}
	}
}

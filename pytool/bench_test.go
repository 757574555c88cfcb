//go:build linux

package pytool

import (
	"context"
	"runtime"
	"syscall"
	"testing"
	"time"

	"gorstar/internal/testenv"
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

// busyCall spends ~300 ms of CPU in the call's own process.
var busyCall = Call{Code: "import time\nwhile time.process_time() < 0.3:\n    pass\nprint('done')"}

// TestCallCPUIsCounted checks the bench's CPU accounting: a call that burns 300 ms of CPU in its
// own process shows up in the tree's waited-for CPU (through the sandbox, where the template
// waits for the call's child) and in the machine's busy time.
func TestCallCPUIsCounted(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	cfg := testConfig()
	cfg.Workers = 1
	p := newTestPool(t, cfg)
	ctx := context.Background()
	before := sampleCPU()
	if !before.ok {
		t.Skip("no /proc accounting here")
	}
	r := p.Run(ctx, busyCall)
	if r.Status != StatusOK {
		t.Fatalf("%+v", r)
	}
	after := sampleCPU()
	if !after.ok {
		t.Fatal("accounting failed after the call")
	}
	if d := after.waited - before.waited; d < 250*time.Millisecond || d > 2*time.Second {
		t.Errorf("the call's process used ~300 ms; the tree's waited-for CPU grew by %v", d)
	}
	if d := after.machine - before.machine; d < 250*time.Millisecond {
		t.Errorf("the machine's busy time grew by only %v", d)
	}
	res, err := Bench(ctx, p, "print", 2, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if res.CPUMSPerCall <= 0 || res.CallCPUMSPerCall <= 0 || res.CallCPUBoundPerS <= 0 {
		t.Errorf("bench reported no CPU figures: %+v", res)
	}
}

// TestReadCPUSelf: ReadCPU's Self is this process's CPU (a Go loop burning ~200 ms shows in it),
// and its Calls are the sandbox's (a call's CPU shows there, not in Self).
func TestReadCPUSelf(t *testing.T) {
	testenv.Short(t, "starts sandboxed Python")
	runtime.LockOSThread() // threadCPU reads this thread's time
	defer runtime.UnlockOSThread()
	cfg := testConfig()
	cfg.Workers = 1
	p := newTestPool(t, cfg)
	before := ReadCPU()
	if !before.OK {
		t.Skip("no /proc accounting here")
	}
	// The loop runs until its own thread has had 200 ms of CPU (a wall-clock bound gets less on a
	// loaded machine, where the test then failed with nothing wrong).
	busy := threadCPU(t)
	x := 0.0
	for t0 := time.Now(); threadCPU(t)-busy < 200*time.Millisecond; {
		for range 100000 {
			x += 1
		}
		if time.Since(t0) > time.Minute {
			t.Fatal("the busy loop got under 200 ms of CPU in a minute")
		}
	}
	busy = threadCPU(t) - busy
	mid := ReadCPU()
	r := p.Run(context.Background(), busyCall)
	after := ReadCPU()
	if r.Status != StatusOK || x == 0 {
		t.Fatalf("%+v", r)
	}
	if d := mid.Self - before.Self; d < busy*3/4 {
		t.Errorf("a busy loop of %v of its thread's CPU added only %v to Self", busy, d)
	}
	if d := after.Calls - mid.Calls; d < 250*time.Millisecond {
		t.Errorf("a ~300 ms call added only %v to Calls", d)
	}
	if d := after.Self - mid.Self; d > 150*time.Millisecond {
		t.Errorf("the call's CPU showed in Self: +%v", d)
	}
}

// threadCPU is the calling OS thread's user and system time.
func threadCPU(t *testing.T) time.Duration {
	d, ok := rusageCPU(syscall.RUSAGE_THREAD)
	if !ok {
		t.Fatal("getrusage failed")
	}
	return d
}

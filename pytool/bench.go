package pytool

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"gorstar/internal/usererr"
)

// Workloads are the bench's calls: a trivial print, a small combinatorics computation, a small
// symbolic one (the kind of code rStar2's policy writes), and a mix of the three.
var Workloads = map[string][]string{
	"print": {"print('hello')"},
	"comb": {"from itertools import combinations\nfrom math import comb\n" +
		"n = sum(1 for c in combinations(range(18), 4) if sum(c) % 7 == 0)\nprint(n, comb(50, 25) % 1000003)"},
	"sympy": {"import sympy as sp\nx = sp.symbols('x')\n" +
		"print(sp.factor(x**4 - 1), sp.expand((x + 2)**5))"},
}

func init() {
	Workloads["mixed"] = []string{Workloads["print"][0], Workloads["comb"][0], Workloads["sympy"][0]}
}

// BenchResult summarises a closed-loop bench (cli.md's `exec bench --json` fields).
type BenchResult struct {
	Workload    string  `json:"workload"`
	Concurrency int     `json:"concurrency"`
	Calls       int     `json:"calls"`
	CallsPerS   float64 `json:"calls_per_s"`
	P50MS       float64 `json:"p50_ms"`
	P90MS       float64 `json:"p90_ms"`
	P99MS       float64 `json:"p99_ms"`
	Errors      int     `json:"errors"`
	SecondsRun  float64 `json:"seconds"`
	// Local runners only (Linux): the machine's CPU time per call (every process, this one and
	// the sandboxes included), the CPU per call of the processes that ran the calls' code, and the
	// calls/s the machine's cores could give if nothing else cost anything (cpu.go).
	CPUMSPerCall     float64 `json:"cpu_ms_per_call,omitempty"`
	CallCPUMSPerCall float64 `json:"call_cpu_ms_per_call,omitempty"`
	CallCPUBoundPerS float64 `json:"call_cpu_bound_per_s,omitempty"`
}

// Bench keeps concurrency calls of workload in flight on r for duration and reports the
// throughput and the latency percentiles (end to end, queueing included). A result that is not ok
// or does not print what the workload prints counts as an error.
func Bench(ctx context.Context, r Runner, workload string, concurrency int, duration time.Duration) (BenchResult, error) {
	codes, ok := Workloads[workload]
	if !ok {
		return BenchResult{}, usererr.New("exec bench --workload: want print, comb, sympy or mixed, got %q", workload)
	}
	if concurrency < 1 {
		return BenchResult{}, usererr.New("exec bench --concurrency: must be ≥ 1, got %d", concurrency)
	}
	var (
		mu        sync.Mutex
		latencies []float64
		errors    atomic.Int64
		next      atomic.Int64
		wg        sync.WaitGroup
	)
	local := false
	switch r.(type) {
	case *Pool, *FreshRunner:
		local = true
	}
	var cpu0 cpuSample // zero (not ok) unless local
	if local {
		cpu0 = sampleCPU()
	}
	start := time.Now()
	deadline := start.Add(duration)
	for w := 0; w < concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) && ctx.Err() == nil {
				i := next.Add(1)
				t0 := time.Now()
				res := r.Run(ctx, Call{Code: codes[int(i)%len(codes)]})
				lat := float64(time.Since(t0).Microseconds()) / 1000
				if res.Status != StatusOK || res.Stdout == "" {
					errors.Add(1)
				}
				mu.Lock()
				latencies = append(latencies, lat)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	if err := ctx.Err(); err != nil {
		return BenchResult{}, fmt.Errorf("exec bench %s: %w", workload, err)
	}
	sort.Float64s(latencies)
	res := BenchResult{
		Workload: workload, Concurrency: concurrency, Calls: len(latencies),
		CallsPerS: float64(len(latencies)) / elapsed, Errors: int(errors.Load()), SecondsRun: elapsed,
		P50MS: Percentile(latencies, 0.50), P90MS: Percentile(latencies, 0.90), P99MS: Percentile(latencies, 0.99),
	}
	if local && cpu0.ok && len(latencies) > 0 {
		res.addCPU(cpu0, sampleCPU())
	}
	return res, nil
}

// addCPU sets the CPU figures from the readings before and after the run.
func (r *BenchResult) addCPU(before, after cpuSample) {
	if !after.ok {
		return
	}
	n := float64(r.Calls)
	r.CPUMSPerCall = float64((after.machine - before.machine).Microseconds()) / 1000 / n
	r.CallCPUMSPerCall = float64((after.waited - before.waited).Microseconds()) / 1000 / n
	if r.CallCPUMSPerCall > 0 {
		r.CallCPUBoundPerS = float64(runtime.NumCPU()) * 1000 / r.CallCPUMSPerCall
	}
}

// Percentile returns the q-quantile of sorted values (nearest rank), 0 for none.
func Percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// LoadResult summarises a load test: n distinct calls with a fixed number in flight.
type LoadResult struct {
	Calls      int     `json:"calls"`
	InFlight   int     `json:"in_flight"`
	Seconds    float64 `json:"seconds"`
	CallsPerS  float64 `json:"calls_per_s"`
	P50MS      float64 `json:"p50_ms"`
	P99MS      float64 `json:"p99_ms"`
	Lost       int     `json:"lost"`       // calls whose answer never came or was not their own
	Duplicated int     `json:"duplicated"` // answers that arrived for a call more than once
	Errors     int     `json:"errors"`
	// ByStatus counts the answers by status; ErrorSample is one failed answer's stderr.
	ByStatus    map[Status]int `json:"by_status"`
	ErrorSample string         `json:"error_sample,omitempty"`
}

// LoadTest sends n calls, each printing its own index, keeping inFlight of them outstanding, and
// checks that every call got exactly its own answer.
func LoadTest(ctx context.Context, r Runner, n, inFlight int) (LoadResult, error) {
	if n < 1 || inFlight < 1 {
		return LoadResult{}, usererr.New("exec load test: calls and in-flight must be ≥ 1, got %d and %d", n, inFlight)
	}
	seen := make([]atomic.Int32, n)
	lat := make([]float64, n)
	var next, errs, foreign atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	byStatus := map[Status]int{}
	sample := ""
	start := time.Now()
	for w := 0; w < min(inFlight, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				res := r.Run(ctx, Call{Code: fmt.Sprintf("i = %d\nprint('call', i)", i)})
				lat[i] = float64(time.Since(t0).Microseconds()) / 1000
				mu.Lock()
				byStatus[res.Status]++
				if res.Status != StatusOK && sample == "" {
					sample = res.Stderr
				}
				mu.Unlock()
				if res.Status != StatusOK {
					errs.Add(1)
					continue
				}
				var got int
				if _, err := fmt.Sscanf(res.Stdout, "call %d", &got); err != nil || got < 0 || got >= n {
					foreign.Add(1)
					continue
				}
				seen[got].Add(1)
			}
		}()
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	if err := ctx.Err(); err != nil {
		return LoadResult{}, fmt.Errorf("exec load test: %w", err)
	}
	out := LoadResult{Calls: n, InFlight: inFlight, Seconds: secs, CallsPerS: float64(n) / secs, Errors: int(errs.Load()),
		ByStatus: byStatus, ErrorSample: sample}
	for i := range seen {
		switch c := seen[i].Load(); {
		case c == 0:
			out.Lost++
		case c > 1:
			out.Duplicated += int(c) - 1
		}
	}
	out.Lost -= out.Errors // an error is an answer, not a loss
	out.Lost += int(foreign.Load())
	sort.Float64s(lat)
	out.P50MS, out.P99MS = Percentile(lat, 0.5), Percentile(lat, 0.99)
	return out, nil
}

package pytool

import (
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
)

// Stats are a pool's counters, exported by `exec serve` at /metrics in Prometheus text format.
type Stats struct {
	queued   atomic.Int64 // calls waiting for a worker
	busy     atomic.Int64 // calls running
	restarts atomic.Int64 // zygotes replaced after dying
	rejected atomic.Int64 // calls refused with 429 (server)

	mu       sync.Mutex
	byStatus map[Status]int64
	buckets  []int64 // duration histogram, counts per bucket (cumulative at export)
	sumMS    float64
	count    int64
}

// durationBucketsMS are the histogram's upper bounds in milliseconds.
var durationBucketsMS = []float64{1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000}

func newStats() *Stats {
	return &Stats{byStatus: map[Status]int64{}, buckets: make([]int64, len(durationBucketsMS))}
}

func (s *Stats) observe(r Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byStatus[r.Status]++
	s.count++
	s.sumMS += r.DurationMS
	for i, ub := range durationBucketsMS {
		if r.DurationMS <= ub {
			s.buckets[i]++
			break
		}
	}
}

// Restarts is the number of zygotes replaced after they died.
func (s *Stats) Restarts() int64 { return s.restarts.Load() }

// Calls is the number of finished calls by status.
func (s *Stats) Calls() map[Status]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[Status]int64, len(s.byStatus))
	for k, v := range s.byStatus {
		out[k] = v
	}
	return out
}

// WritePrometheus writes the counters in Prometheus text exposition format.
func (s *Stats) WritePrometheus(w io.Writer, workers int, inflight int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintln(w, "# HELP gorstar_exec_calls_total Finished tool calls by status.")
	fmt.Fprintln(w, "# TYPE gorstar_exec_calls_total counter")
	statuses := make([]string, 0, len(s.byStatus))
	for k := range s.byStatus {
		statuses = append(statuses, string(k))
	}
	sort.Strings(statuses)
	for _, k := range statuses {
		fmt.Fprintf(w, "gorstar_exec_calls_total{status=%q} %d\n", k, s.byStatus[Status(k)])
	}
	fmt.Fprintln(w, "# HELP gorstar_exec_call_duration_ms Execution time of a call (queue excluded).")
	fmt.Fprintln(w, "# TYPE gorstar_exec_call_duration_ms histogram")
	var cum int64
	for i, ub := range durationBucketsMS {
		cum += s.buckets[i]
		fmt.Fprintf(w, "gorstar_exec_call_duration_ms_bucket{le=\"%g\"} %d\n", ub, cum)
	}
	fmt.Fprintf(w, "gorstar_exec_call_duration_ms_bucket{le=\"+Inf\"} %d\n", s.count)
	fmt.Fprintf(w, "gorstar_exec_call_duration_ms_sum %g\n", s.sumMS)
	fmt.Fprintf(w, "gorstar_exec_call_duration_ms_count %d\n", s.count)
	gauge := func(name, help string, v int64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s %d\n", name, help, name, name, v)
	}
	gauge("gorstar_exec_workers", "Warm sandboxed workers.", int64(workers))
	gauge("gorstar_exec_busy_workers", "Workers running a call.", s.busy.Load())
	gauge("gorstar_exec_queued_calls", "Calls waiting for a worker.", s.queued.Load())
	gauge("gorstar_exec_inflight_requests", "Calls admitted by the server and not yet answered.", inflight)
	fmt.Fprintf(w, "# HELP gorstar_exec_worker_restarts_total Zygotes replaced after dying.\n# TYPE gorstar_exec_worker_restarts_total counter\ngorstar_exec_worker_restarts_total %d\n", s.restarts.Load())
	fmt.Fprintf(w, "# HELP gorstar_exec_rejected_total Calls refused because the queue was full.\n# TYPE gorstar_exec_rejected_total counter\ngorstar_exec_rejected_total %d\n", s.rejected.Load())
}

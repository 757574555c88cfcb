package dist

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"gorstar/internal/mpitest"
)

// benchEnv marks a test binary started by BenchmarkAllReduceF32 as one of its ranks.
const benchEnv = "GORSTAR_DIST_BENCH_RANK"

// BenchmarkAllReduceF32 times the gradient all-reduce of the `small` preset (57.9 M floats, in the
// 4 M-float buckets the trainers use) between 2 ranks under mpirun, and reports the gradient bytes
// per second each rank gets through (the figure of dist/README.md's cost table, inside one node).
//
//	go test ./dist -run XX -bench AllReduce -benchtime 1x
func BenchmarkAllReduceF32(b *testing.B) {
	cmd := mpitest.Self(b, 2, "TestRankAllReduceTiming", benchEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("mpirun: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`all-reduce of ([0-9]+) floats: ([0-9.]+) s`).FindSubmatch(out)
	if m == nil {
		b.Fatalf("no timing in:\n%s", out)
	}
	floats, _ := strconv.Atoi(string(m[1]))
	s, _ := strconv.ParseFloat(string(m[2]), 64)
	b.ReportMetric(s*1000, "ms/allreduce")
	b.ReportMetric(float64(4*floats)/s/1e9, "GB/s")
}

// TestRankAllReduceTiming is one rank of BenchmarkAllReduceF32; alone it does nothing.
func TestRankAllReduceTiming(t *testing.T) {
	if os.Getenv(benchEnv) == "" {
		return
	}
	w, err := Join()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const floats, bucket, rounds = 57943552, 1 << 22, 5
	buf := make([]float32, floats)
	for i := range buf {
		buf[i] = float32(i % 7)
	}
	best := time.Duration(1 << 62)
	for range rounds {
		if err := w.Comm.Barrier(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for off := 0; off < floats; off += bucket {
			if err := w.Comm.AllReduceF32(buf[off:min(floats, off+bucket)]); err != nil {
				t.Fatal(err)
			}
		}
		best = min(best, time.Since(start))
	}
	if w.Root() {
		fmt.Printf("all-reduce of %d floats: %.4f s (best of %d)\n", floats, best.Seconds(), rounds)
	}
}

package model

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"

	"gorstar/dist"
	"gorstar/internal/mpitest"
)

// overlapRankEnv marks a test binary started by TestOverlappedAllReduceSameBits as one of its ranks.
const overlapRankEnv = "GORSTAR_MODEL_OVERLAP_RANK"

// The overlapped all-reduce (buckets sent while the backward pass runs) gives the bits of the
// all-reduce after the pass, in 3 ranks (so that the order of MPI's sums matters), over two
// accumulated passes, with buckets small enough to cut tensors, and sends some buckets early;
// with each bucket reduced before the backward goes on (so that one sent too early is caught),
// and as it runs in training, concurrently.
func TestOverlappedAllReduceSameBits(t *testing.T) {
	cmd := mpitest.Self(t, 3, "TestRankOverlappedAllReduce", overlapRankEnv+"=1", "GORSTAR_THREADS=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mpirun: %v\n%s", err, out)
	}
	if testing.Verbose() {
		t.Logf("%s", out)
	}
	m := regexp.MustCompile(`(?m)^overlap ok: ([0-9]+) of ([0-9]+) buckets early$`).FindAllSubmatch(out, -1)
	if len(m) != 3 {
		t.Fatalf("want three configurations' lines from rank 0, got:\n%s", out)
	}
	for _, l := range m {
		early, _ := strconv.Atoi(string(l[1]))
		all, _ := strconv.Atoi(string(l[2]))
		if early == 0 || early >= all {
			t.Errorf("%d of %d buckets sent during the backward pass, want some but not all:\n%s", early, all, out)
		}
	}
}

// TestRankOverlappedAllReduce is one rank of TestOverlappedAllReduceSameBits; alone it does nothing.
func TestRankOverlappedAllReduce(t *testing.T) {
	if os.Getenv(overlapRankEnv) == "" {
		return
	}
	w, err := dist.Join()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	defer func(b int) { gradBucket = b }(gradBucket)
	gradBucket = 53 // cuts tensors; several buckets per layer
	defer func() { overlapWaits = false }()
	for _, tc := range []struct {
		typ  string
		tied bool
		wait bool // each bucket reduced before the pass goes on: a premature send always shows
	}{{"qwen3", false, true}, {"qwen2", true, true}, {"qwen3", true, false}} {
		overlapWaits = tc.wait
		c := microConfig(tc.typ, tc.tied)
		c.NumHiddenLayers = 3
		c.AttentionBias = tc.typ == "qwen2"
		m, err := New(c, 7)
		if err != nil {
			t.Fatal(err)
		}
		randomizeVectors(m, 3)
		seed := uint64(10 * (w.Rank + 1)) // every rank its own batches
		grads := func(overlap bool) ([]float32, int) {
			m.ZeroGrads()
			if _, err := m.ForwardBackward(randomBatch(c, 2, 7, seed)); err != nil {
				t.Fatal(err)
			}
			if overlap {
				m.OverlapAllReduceGrads(w.Comm)
			}
			if _, err := m.ForwardBackward(randomBatch(c, 3, 5, seed+1)); err != nil {
				t.Fatal(err)
			}
			early, err := m.FinishAllReduceGrads(w.Comm)
			if err != nil {
				t.Fatal(err)
			}
			g := make([]float32, m.Grads.Size)
			m.Grads.All.CopyTo(g)
			return g, early
		}
		want, _ := grads(false)
		got, early := grads(true)
		for i := range want {
			if got[i] != want[i] { // bits: == also fails on a NaN, which neither should hold
				t.Fatalf("%s tied=%v wait=%v rank %d: gradient %d is %g overlapped, %g after the pass", tc.typ, tc.tied, tc.wait, w.Rank, i, got[i], want[i])
			}
		}
		if w.Root() {
			fmt.Printf("overlap ok: %d of %d buckets early\n", early, gradBuckets(m.Grads.Size))
		}
		m.Close()
	}
}

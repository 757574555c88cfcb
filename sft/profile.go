package sft

import (
	"runtime"
	"runtime/metrics"
	"time"
)

// Profile is where a run's step time went, from rank 0's clock (the JSON of `gorstar sft --json`
// carries it as "profile"). Compute and tokens are per rank, so a data-parallel step's load
// balance shows; the other phases are rank 0's. The phases of a step add up to its wall time.
type Profile struct {
	Steps int     `json:"steps"`
	StepS float64 `json:"step_s"` // wall time of the optimizer steps (what tokens_per_s divides by)
	// ComputeS is each rank's forward and backward time, summed over the steps, rank 0 first.
	ComputeS []float64 `json:"compute_s"`
	// Tokens is each rank's real tokens, summed over the steps; PaddedTokens the tokens its passes
	// computed (rows × row length), what its compute time follows.
	Tokens       []int64 `json:"tokens"`
	PaddedTokens []int64 `json:"padded_tokens"`
	// ImbalanceS is Σ over steps of (slowest rank's compute − the mean rank's): the time the
	// average rank waits for the slowest one at the gradient all-reduce.
	ImbalanceS float64 `json:"imbalance_s"`
	// WaitS is rank 0's wait for the slowest rank at the end of the step's passes (a barrier
	// before the gradient all-reduce); with the overlapped all-reduce (dist.World.Overlap) there is
	// no barrier and the wait counts in AllReduceS.
	WaitS float64 `json:"wait_s"`
	// AllReduceS is rank 0's time in the gradient all-reduce; AllReduceBytes is the gradient
	// bytes it reduced.
	AllReduceS     float64 `json:"allreduce_s"`
	AllReduceBytes int64   `json:"allreduce_bytes"`
	// StatsS is the all-reduce of the step's loss, token counts and these timings.
	StatsS     float64 `json:"stats_s"`
	OptimizerS float64 `json:"optimizer_s"`
	// OtherS is the rest of the steps' time: zeroing the gradients, packing and building batches.
	OtherS float64 `json:"other_s"`
	// The Go runtime over the steps: garbage collections, their CPU time (all threads, so it
	// competes with the kernels for the rank's cores) and GOMAXPROCS.
	GCCycles   uint64  `json:"gc_cycles"`
	GCCPUS     float64 `json:"gc_cpu_s"`
	GOMAXPROCS int     `json:"gomaxprocs"`
}

// profiler accumulates a run's Profile.
type profiler struct {
	p          Profile
	gcBefore   runtimeSample
	began      time.Time // the step's start
	mark       time.Time
	phase      *float64
	computeNow float64 // this step's forward/backward seconds
	paddedNow  int     // this step's padded tokens
}

type runtimeSample struct {
	cycles uint64
	gcCPU  float64
}

func sampleRuntime() runtimeSample {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	var r runtimeSample
	if s[0].Value.Kind() == metrics.KindUint64 {
		r.cycles = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindFloat64 {
		r.gcCPU = s[1].Value.Float64()
	}
	return r
}

func newProfiler(ranks int) *profiler {
	return &profiler{p: Profile{ComputeS: make([]float64, ranks), Tokens: make([]int64, ranks), PaddedTokens: make([]int64, ranks)}}
}

// begin starts a step; its time goes to OtherS until the next switch.
func (f *profiler) begin() {
	if f.p.Steps == 0 {
		f.gcBefore = sampleRuntime()
	}
	f.began = time.Now()
	f.mark, f.phase, f.computeNow, f.paddedNow = f.began, &f.p.OtherS, 0, 0
}

// to ends the current phase and starts counting into next.
func (f *profiler) to(next *float64) {
	now := time.Now()
	*f.phase += now.Sub(f.mark).Seconds()
	f.mark, f.phase = now, next
}

// compute starts the forward/backward phase of this rank.
func (f *profiler) compute() { f.to(&f.computeNow) }

// end closes the step, given every rank's compute time, tokens and padded tokens of it, and
// returns its wall time in seconds.
func (f *profiler) end(compute, tokens, padded []float64) (seconds float64) {
	f.to(&f.p.OtherS)
	seconds = f.mark.Sub(f.began).Seconds()
	f.p.Steps++
	f.p.StepS += seconds
	slowest, mean := 0.0, 0.0
	for r, c := range compute {
		f.p.ComputeS[r] += c
		f.p.Tokens[r] += int64(tokens[r])
		f.p.PaddedTokens[r] += int64(padded[r])
		slowest = max(slowest, c)
		mean += c / float64(len(compute))
	}
	f.p.ImbalanceS += slowest - mean
	now := sampleRuntime()
	f.p.GCCycles, f.p.GCCPUS = now.cycles-f.gcBefore.cycles, now.gcCPU-f.gcBefore.gcCPU
	f.p.GOMAXPROCS = runtime.GOMAXPROCS(0)
	return seconds
}

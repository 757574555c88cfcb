package eval

import (
	"encoding/json"
	"fmt"

	"gorstar/dist"
	"gorstar/eval/metrics"
)

// Data-parallel evaluation: under a launcher every rank loads the same problems and rolls out
// the problems whose index is its rank modulo the world size (every sample of a problem on one
// rank, so its seeds and its maj@k are as in one process). Rank 0 keeps the resumable checkpoint
// and shares the samples it holds, so no rank redoes them; at the end every rank's new samples
// are gathered, sorted by problem and sample as always, and rank 0 alone writes the results.
// Each sample's seed depends on its problem and sample only, so the file is the one a single
// process writes.

// ours reports whether problem i is this rank's to roll out.
func ours(w *dist.World, i int) bool { return !w.Distributed() || i%w.Size == w.Rank }

// shareResumed gives every rank rank 0's resumed samples.
func shareResumed(w *dist.World, done []Record) ([]Record, error) {
	if !w.Distributed() {
		return done, nil
	}
	var js []byte
	if w.Root() {
		var err error
		if js, err = json.Marshal(done); err != nil {
			return nil, err
		}
	}
	js, err := dist.BroadcastBytes(w.Comm, js, 0)
	if err != nil {
		return nil, fmt.Errorf("eval: share resumed samples: %w", err)
	}
	var out []Record
	if err := json.Unmarshal(js, &out); err != nil {
		return nil, fmt.Errorf("eval: share resumed samples: %w", err)
	}
	return out, nil
}

// gatherNew adds every other rank's new samples (those past the first resumed ones) to the run's
// records, and returns the new samples' generated tokens over all ranks.
func (s *runState) gatherNew(w *dist.World, resumed int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !w.Distributed() {
		return s.generated, nil
	}
	js, err := json.Marshal(s.records[resumed:])
	if err != nil {
		return 0, err
	}
	parts, err := dist.GatherBytes(w.Comm, js)
	if err != nil {
		return 0, fmt.Errorf("eval: gather samples: %w", err)
	}
	s.records = s.records[:resumed]
	generated := 0
	for r, part := range parts {
		var recs []Record
		if err := json.Unmarshal(part, &recs); err != nil {
			return 0, fmt.Errorf("eval: samples of rank %d: %w", r, err)
		}
		for _, rec := range recs {
			generated += rec.Generated
		}
		s.records = append(s.records, recs...)
	}
	return generated, nil
}

// shareOf counts this rank's problems among n.
func shareOf(w *dist.World, n int) int {
	k := 0
	for i := range n {
		if ours(w, i) {
			k++
		}
	}
	return k
}

// sumCorrect adds every rank's correct counts (each problem was sampled on one rank) and
// recomputes the pass rates.
func sumCorrect(w *dist.World, rates []metrics.PassRate) error {
	if !w.Distributed() {
		return nil
	}
	counts := make([]float64, len(rates))
	for i, r := range rates {
		counts[i] = float64(r.Correct)
	}
	if err := w.Comm.AllReduceF64(counts); err != nil {
		return fmt.Errorf("eval: pass rate: sum over ranks: %w", err)
	}
	for i := range rates {
		rates[i].Correct = int(counts[i])
		rates[i].PassRate = counts[i] / float64(rates[i].Samples)
	}
	return nil
}

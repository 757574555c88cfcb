package rollout

import (
	"sort"
	"time"

	"gorstar/pytool"
)

// Summary is a run's totals (the `gorstar rollout --json` fields).
type Summary struct {
	Trajectories    int `json:"trajectories"`
	Correct         int `json:"correct"`
	ToolCalls       int `json:"tool_calls"`
	FailedToolCalls int `json:"failed_tool_calls"`
	// InternalToolErrors are sandbox failures (not the model's); Errors are trajectories the backend
	// failed on.
	InternalToolErrors int `json:"internal_tool_errors"`
	Errors             int `json:"errors"`
	Truncated          int `json:"truncated"`
	// WellFormed counts trajectories in the format the model is taught (Trajectory.WellFormed).
	WellFormed      int `json:"well_formed"`
	GeneratedTokens int `json:"generated_tokens"`
	// DecodeTokensPerS is generated tokens over the run's wall time.
	DecodeTokensPerS float64 `json:"decode_tokens_per_s"`
	// ToolWaitFraction is the share of the trajectories' time spent paused on tools.
	ToolWaitFraction float64 `json:"tool_wait_fraction"`
	ToolP50MS        float64 `json:"tool_p50_ms"`
	ToolP99MS        float64 `json:"tool_p99_ms"`
	Seconds          float64 `json:"seconds"`
	// Resumed counts the trajectories an interrupted run had finished (`gorstar rollout` on the same
	// --out): the rates and the seconds are this run's.
	Resumed int `json:"resumed,omitempty"`
}

// Summarize totals trajectories that took wall time to roll out.
func Summarize(ts []Trajectory, wall time.Duration) Summary {
	s := Summary{Trajectories: len(ts), Seconds: wall.Seconds()}
	var waited, lived float64
	var durations []float64
	for i := range ts {
		t := &ts[i]
		if t.Correct {
			s.Correct++
		}
		if t.WellFormed() {
			s.WellFormed++
		}
		s.ToolCalls += t.ToolCalls
		s.FailedToolCalls += t.FailedToolCalls
		s.InternalToolErrors += t.InternalToolErrors
		s.GeneratedTokens += t.GeneratedTokens
		switch t.Finish {
		case FinishTruncated:
			s.Truncated++
		case FinishError:
			s.Errors++
		}
		waited += t.ToolWaitMS
		lived += t.DurationMS
		for _, rec := range t.Turns {
			if rec.Status != "" && rec.Status != StatusParseError && rec.Status != StatusNotRun {
				durations = append(durations, rec.DurationMS)
			}
		}
	}
	if s.Seconds > 0 {
		s.DecodeTokensPerS = float64(s.GeneratedTokens) / s.Seconds
	}
	if lived > 0 {
		s.ToolWaitFraction = waited / lived
	}
	sort.Float64s(durations)
	s.ToolP50MS = pytool.Percentile(durations, 0.5)
	s.ToolP99MS = pytool.Percentile(durations, 0.99)
	return s
}

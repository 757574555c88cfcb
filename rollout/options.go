package rollout

import (
	"fmt"

	"gorstar/chat"
	"gorstar/reward"
)

// Options configure a Loop. DefaultOptions gives rStar2's settings; every limit is the caller's
// to set (from config.Rollout and the RL stage).
type Options struct {
	// Chat is the template, the tool schemas shown to the model and the primer of each assistant
	// turn (chat.DefaultOptions: rstar2, the Python tool, "<reason>").
	Chat chat.Options
	// MaxTurns bounds the assistant turns of a trajectory; a call in the last turn is not run.
	MaxTurns int
	// MaxResponseTokens is the response budget: generated plus appended tokens.
	MaxResponseTokens int
	// ToolTextChars cuts the tool text the model sees (head + marker + tail; rStar2: 256).
	ToolTextChars int
	// Temperature and TopP are the sampling settings (TopP 0 or 1: off).
	Temperature, TopP float64
	// Samples is the number of rollouts per problem (a GRPO group).
	Samples int
	// Seed is the base of every trajectory's sampling seed (see SampleSeed).
	Seed uint64
	// Overlap lets each trajectory resume as soon as its tool call answers while the others
	// decode; false is the naive schedule (each wave's turn waits for all its tool calls).
	Overlap bool
	// Concurrency bounds the trajectories decoding at once (a naive wave's size); it should not
	// pass the backend's batch (engine.Options.MaxSeqs). In the overlapped schedule a trajectory
	// waiting on its tool call does not count (the engine's paused sequences free their slot too),
	// so more may be in flight, as the backend's KV cache allows; it starts one group more ahead,
	// queued in the backend, so a freed slot is refilled at once.
	Concurrency int
	// Reward is how trajectories are graded (Truncated is set per trajectory).
	Reward reward.Options
	// ToolTimeoutS bounds one tool call (0: the runner's default).
	ToolTimeoutS float64
	// ToolSessions runs a trajectory's calls in one live interpreter, like notebook cells: the
	// globals, imports and files of a call are there for the next; the session ends with the
	// trajectory. false (rStar2) runs every call in a fresh process. The runner must keep as
	// many sessions as trajectories are in flight (exec.sessions_per_worker × workers), or the
	// least recently used one ends early and its trajectory's next call starts afresh.
	ToolSessions bool
	// Pending, when set, chooses the samples to roll out: sample j of problem i runs only when
	// Pending(i, j); the others are left out of Run's result. Seeds do not change, so a resumed
	// evaluation redoes exactly the samples it lacks.
	Pending func(problem, sample int) bool
	// OnFinish, when set, receives each trajectory as soon as it ends (graded), from the loop's
	// goroutines, possibly at once: a caller can keep finished work before Run returns. A
	// trajectory cut off by the context's end is not finished and not passed.
	OnFinish func(Trajectory)
}

// DefaultOptions are rStar2's rollout settings (stage 1: 10 turns, 8K tokens, temperature 1).
func DefaultOptions() Options {
	return Options{
		Chat:              chat.DefaultOptions(),
		MaxTurns:          10,
		MaxResponseTokens: 8192,
		ToolTextChars:     256,
		Temperature:       1,
		TopP:              1,
		Samples:           1,
		Overlap:           true,
		Concurrency:       64,
	}
}

// validate checks the ranges the loop relies on.
func (o Options) validate() error {
	switch {
	case o.MaxTurns < 1:
		return fmt.Errorf("rollout: max turns must be ≥ 1, got %d", o.MaxTurns)
	case o.MaxResponseTokens < 1:
		return fmt.Errorf("rollout: max response tokens must be ≥ 1, got %d", o.MaxResponseTokens)
	case o.Samples < 1:
		return fmt.Errorf("rollout: samples must be ≥ 1, got %d", o.Samples)
	case o.Concurrency < 1:
		return fmt.Errorf("rollout: concurrency must be ≥ 1, got %d", o.Concurrency)
	case o.Temperature < 0:
		return fmt.Errorf("rollout: temperature must be ≥ 0, got %g", o.Temperature)
	case o.TopP < 0 || o.TopP > 1:
		return fmt.Errorf("rollout: top_p must be in [0, 1], got %g", o.TopP)
	}
	return nil
}

// SampleSeed is the sampling seed of sample j of problem i: a mix of the three numbers, so every
// trajectory of a run has its own stream and the same base seed gives the same trajectories.
func SampleSeed(base uint64, problem, sample int) uint64 {
	return mix(mix(base^0x9e3779b97f4a7c15) ^ mix(uint64(problem)<<32|uint64(uint32(sample))))
}

// mix is SplitMix64's finalizer: a bijection that spreads every input bit over the output.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"time"

	"gorstar/chat"
	"gorstar/data"
	"gorstar/engine"
	"gorstar/internal/stats"
	"gorstar/model"
	"gorstar/pytool"
	"gorstar/tokenizer"
)

// BenchOptions describe the rollout benchmark: Rollouts trajectories (Groups samples per problem),
// at most Concurrency in flight, each of 2 to MaxTurns turns of MinTurnTokens to MaxTurnTokens
// generated tokens; every turn but the last calls a tool that sleeps ToolSleep and prints 1.
// Repeats (0 or 1: once) runs the three measurements that many times in turn and reports medians.
// ToolSessions runs each trajectory's calls in one live interpreter (Options.ToolSessions).
type BenchOptions struct {
	Rollouts, Groups, Concurrency int
	MaxTurns                      int
	MinTurnTokens, MaxTurnTokens  int
	ToolSleep                     time.Duration
	Seed                          uint64
	Repeats                       int
	ToolSessions                  bool
}

// DefaultBenchOptions is `gorstar rollout bench`'s setup: 256 rollouts of 2–4 turns, 64 at once,
// 200 ms tools.
func DefaultBenchOptions() BenchOptions {
	return BenchOptions{Rollouts: 256, Groups: 8, Concurrency: 64, MaxTurns: 4,
		MinTurnTokens: 16, MaxTurnTokens: 96, ToolSleep: 200 * time.Millisecond, Seed: 1}
}

// BenchResult compares the two schedules (the `gorstar rollout bench --json` fields). With
// repeats, each field is the median over the repeats, and Runs holds each repeat's.
type BenchResult struct {
	OverlappedS float64 `json:"overlapped_s"`
	NaiveS      float64 `json:"naive_s"`
	// Speedup is NaiveS / OverlappedS (with repeats: the median of each repeat's ratio, its two
	// runs measured minutes apart at most, while the machine's speed drifts over longer spans).
	Speedup float64 `json:"speedup"`
	// DecodeTokensPerS is generated tokens over the overlapped run's wall time;
	// EngineOnlyTokensPerS the same number of tokens generated without tools or pauses, and
	// DecodeShare the first over the second (with repeats: the median of each repeat's ratio).
	DecodeTokensPerS     float64 `json:"decode_tokens_per_s"`
	EngineOnlyTokensPerS float64 `json:"engine_only_tokens_per_s"`
	DecodeShare          float64 `json:"decode_share"`
	// EngineOnlyRuns are the engine alone's two measurements, before the overlapped run and after
	// the naive one (EngineOnlyTokensPerS is their mean; in a median of repeats, absent).
	EngineOnlyRuns []float64 `json:"engine_only_runs_tokens_per_s,omitempty"`
	// AppendedTokens are the tool turns' tokens the overlapped run appended (each runs through
	// every layer, as a generated token does, but is not counted as decoded); RowShare is the
	// generated plus appended tokens per second of the overlapped run over the engine alone's
	// tokens per second: how fast the engine worked during the rollouts, whatever the format adds.
	AppendedTokens  int     `json:"appended_tokens"`
	RowShare        float64 `json:"row_share"`
	GeneratedTokens int     `json:"generated_tokens"`
	ToolCalls       int     `json:"tool_calls"`
	FailedToolCalls int     `json:"failed_tool_calls"`
	ToolP50MS       float64 `json:"tool_p50_ms"`
	// ToolSessions: each trajectory's calls ran in one live interpreter, not a fresh process each.
	ToolSessions bool `json:"tool_sessions"`
	// ToolPriority is the CPU priority the sandbox ran at beside the engine (idle or normal:
	// pytool.Pool.Priority), set by the caller that started the sandbox.
	ToolPriority string `json:"tool_priority,omitempty"`
	// RoleWords: the tokenizer gave the chat roles one token each, as Qwen3's does (16 tokens of
	// scaffolding around a one-character tool result, against 27 spelled byte by byte; Qwen3: 18),
	// set by the caller that made the tokenizer.
	RoleWords bool `json:"role_words"`
	// Where the overlapped run's CPU went (absent where it cannot be read): the calls' own processes
	// per call, and everything outside this process — the sandboxes' supervisors, templates and
	// calls, and whatever else ran on the machine — as a share of all cores over the run. On a
	// machine whose cores the engine uses, that share is taken from decoding.
	ToolCallCPUMS   float64 `json:"tool_call_cpu_ms,omitempty"`
	OutsideCPUShare float64 `json:"outside_cpu_share,omitempty"`
	// EngineCores and EngineOnlyCores are the CPU this process used (every thread: the kernels,
	// the loop, the sampling, and the pool's side of the tool calls) per second of the overlapped
	// run and of the engine alone (the mean of its two runs). Where the sandbox shares the
	// engine's cores, the first falls below the second by what the calls took from decoding; with
	// the appended tokens (RowShare) and the run's last trajectories waiting on tools, that is
	// where the decode share goes.
	EngineCores     float64 `json:"engine_cores,omitempty"`
	EngineOnlyCores float64 `json:"engine_only_cores,omitempty"`
	// CPUBoundShare is the decode share no schedule could pass on this machine's cores: the
	// engine alone's time over the time its CPU (EngineOnlyCores over that time) and the CPU
	// outside this process during the overlapped run (OutsideCPUShare) take on all the cores
	// together, or 1. The appended tokens and the tail are not counted, so the share found is
	// below it; well below, where the schedule or the engine is what loses it, and close, where
	// the sandbox's CPU is (a machine that charges much for a fork and its faults).
	CPUBoundShare float64 `json:"cpu_bound_share,omitempty"`
	// Runs are the repeats, in order (only when there were several).
	Runs []BenchResult `json:"runs,omitempty"`
}

// benchScript plays a tool-calling policy with a random model: it decides how long each
// trajectory's turns are (engine PauseAfter) and which turns call the tool. The decoding, the
// pausing, the appends and the sandbox calls are real.
type benchScript struct {
	o    BenchOptions
	call chat.ParsedToolCall
}

func newBenchScript(o BenchOptions) *benchScript {
	code := fmt.Sprintf("import time; time.sleep(%g); print(1)", o.ToolSleep.Seconds())
	args, _ := json.Marshal(map[string]string{"code": code})
	return &benchScript{o: o, call: chat.ParsedToolCall{Call: chat.ToolCall{Name: pythonTool, Arguments: args}}}
}

// plan draws a trajectory's turn length and number of turns from its own stream.
func (b *benchScript) plan(problem, sample int) (turnTokens, turns int) {
	rng := rand.New(rand.NewPCG(SampleSeed(b.o.Seed, problem, sample), 7))
	turnTokens = b.o.MinTurnTokens + rng.IntN(b.o.MaxTurnTokens-b.o.MinTurnTokens+1)
	turns = 2 + rng.IntN(max(1, b.o.MaxTurns-1))
	return turnTokens, turns
}

func (b *benchScript) turnTokens(problem, sample int) int {
	n, _ := b.plan(problem, sample)
	return n
}

// toolCall reports the scripted call of a turn: every turn but the last calls the tool.
func (b *benchScript) toolCall(problem, sample, turn int) (chat.ParsedToolCall, bool) {
	_, turns := b.plan(problem, sample)
	return b.call, turn < turns-1
}

func (o BenchOptions) validate() error {
	if o.Rollouts < 1 || o.Groups < 1 || o.Concurrency < 1 || o.MaxTurns < 2 ||
		o.MinTurnTokens < 1 || o.MaxTurnTokens < o.MinTurnTokens || o.ToolSleep < 0 || o.Repeats < 0 {
		return fmt.Errorf("rollout bench: want rollouts, groups, concurrency, turn tokens ≥ 1, max turns ≥ 2, max turn tokens ≥ min and repeats ≥ 0, got %+v", o)
	}
	return nil
}

// Bench runs the same rollouts with the overlapped and with the naive schedule on an engine over m
// (at most Concurrency sequences at once), then generates the same number of tokens without tools.
// tools should have at least Concurrency workers, or the tools' queue is what gets measured.
func Bench(ctx context.Context, m *model.Model, tok *tokenizer.Tokenizer, tools pytool.Runner, o BenchOptions) (BenchResult, error) {
	if err := o.validate(); err != nil {
		return BenchResult{}, err
	}
	opts := DefaultOptions()
	opts.MaxTurns = o.MaxTurns + 1
	opts.MaxResponseTokens = o.MaxTurns * (o.MaxTurnTokens + 256)
	opts.Samples, opts.Concurrency, opts.Seed = o.Groups, o.Concurrency, o.Seed
	opts.ToolSessions = o.ToolSessions
	problems := benchProblems((o.Rollouts + o.Groups - 1) / o.Groups)
	probe, err := New(nil, tools, tok, opts)
	if err != nil {
		return BenchResult{}, err
	}
	// Each trajectory's prompt, seed and planned tokens: the engine-alone measurement's requests.
	longest := 0
	script := newBenchScript(o)
	var jobs []engineJob
	for i, p := range problems {
		ids, err := Prompt(probe.render, p)
		if err != nil {
			return BenchResult{}, err
		}
		longest = max(longest, len(ids))
		for j := 0; j < o.Groups; j++ {
			n, turns := script.plan(i, j)
			jobs = append(jobs, engineJob{prompt: ids, tokens: n * turns, seed: SampleSeed(o.Seed, i, j)})
		}
	}
	perSeq := longest + 16 + opts.MaxResponseTokens
	eng, err := engine.New(m, engine.Options{MaxSeqs: o.Concurrency, KVTokens: 2 * o.Concurrency * perSeq,
		MaxContext: perSeq, Seed: o.Seed, Tokenizer: tok})
	if err != nil {
		return BenchResult{}, err
	}
	defer eng.Close()
	// The caches the runs hold at once (up to the budget: decoding ones and those waiting on tools),
	// allocated before anything is timed: a fresh cache is first touched on the engine's thread
	// while the kernels wait, so otherwise whichever schedule runs first pays for them (0.9–1.8 s of
	// an 8–9 s overlapped run on a 2-core VM) and the second finds them pooled.
	if _, err := eng.Reserve(2*o.Concurrency, longest+opts.MaxResponseTokens); err != nil {
		return BenchResult{}, err
	}
	run := func(overlap bool, problems []data.Problem) (Summary, []Trajectory, error) {
		opts.Overlap = overlap
		l, err := New(&EngineBackend{Engine: eng}, tools, tok, opts)
		if err != nil {
			return Summary{}, nil, err
		}
		l.script = script // stateless: each plan draws from the trajectory's own stream
		ts, s, err := l.Run(ctx, problems)
		return s, ts, err
	}
	if _, _, err := run(true, problems[:1]); err != nil { // warm-up: sandbox, caches, threads
		return BenchResult{}, err
	}
	var runs []BenchResult
	for r := 0; r < max(1, o.Repeats); r++ {
		res, err := benchOnce(ctx, eng, run, problems, jobs, opts)
		if err != nil {
			return BenchResult{}, err
		}
		runs = append(runs, res)
	}
	if len(runs) == 1 {
		return runs[0], nil
	}
	return medianResult(runs), nil
}

// benchOnce is one repeat: the engine alone, the overlapped run, the naive run, the engine alone
// again. The two schedules run back to back, and the engine alone brackets them: its rate is the
// mean of the two, so a machine whose speed drifts over the repeat's half minute (a VM's does, by
// a third) weighs on both sides of the decode share alike.
func benchOnce(ctx context.Context, eng *engine.Engine, run func(bool, []data.Problem) (Summary, []Trajectory, error),
	problems []data.Problem, jobs []engineJob, opts Options) (BenchResult, error) {
	before, beforeCores, err := engineOnly(ctx, eng, jobs, opts)
	if err != nil {
		return BenchResult{}, err
	}
	cpu0 := pytool.ReadCPU()
	over, ts, err := run(true, problems)
	if err != nil {
		return BenchResult{}, err
	}
	cpu1 := pytool.ReadCPU()
	naive, _, err := run(false, problems)
	if err != nil {
		return BenchResult{}, err
	}
	after, afterCores, err := engineOnly(ctx, eng, jobs, opts)
	if err != nil {
		return BenchResult{}, err
	}
	only := (before + after) / 2
	res := BenchResult{OverlappedS: over.Seconds, NaiveS: naive.Seconds, DecodeTokensPerS: over.DecodeTokensPerS,
		EngineOnlyTokensPerS: only, EngineOnlyRuns: []float64{before, after},
		GeneratedTokens: over.GeneratedTokens, ToolCalls: over.ToolCalls,
		FailedToolCalls: over.FailedToolCalls + over.InternalToolErrors, ToolP50MS: over.ToolP50MS,
		ToolSessions: opts.ToolSessions}
	if res.OverlappedS > 0 {
		res.Speedup = res.NaiveS / res.OverlappedS
	}
	for _, t := range ts {
		res.AppendedTokens += len(t.ResponseIDs) - t.GeneratedTokens
	}
	if only > 0 && res.OverlappedS > 0 {
		res.DecodeShare = res.DecodeTokensPerS / only
		res.RowShare = float64(res.GeneratedTokens+res.AppendedTokens) / res.OverlappedS / only
	}
	if !cpu0.OK || !cpu1.OK || res.OverlappedS <= 0 {
		return res, nil
	}
	self := (cpu1.Self - cpu0.Self).Seconds()
	outside := max(0, (cpu1.Machine-cpu0.Machine).Seconds()-self) // core-seconds
	if res.ToolCalls > 0 {
		res.ToolCallCPUMS = float64(cpu1.Calls-cpu0.Calls) / 1e6 / float64(res.ToolCalls)
		res.OutsideCPUShare = outside / (res.OverlappedS * float64(runtime.NumCPU()))
	}
	if beforeCores > 0 && afterCores > 0 {
		res.EngineCores = self / res.OverlappedS
		res.EngineOnlyCores = (beforeCores + afterCores) / 2
		res.CPUBoundShare = cpuBoundShare(float64(res.GeneratedTokens)/only, res.EngineOnlyCores, outside, runtime.NumCPU())
	}
	return res, nil
}

// cpuBoundShare is the most of the engine alone's rate a run can decode at when the engine alone
// takes alone seconds on engineCores and the tools take toolCPU core-seconds of the same cores:
// alone over the longer of alone and all that CPU spread over the cores.
func cpuBoundShare(alone, engineCores, toolCPU float64, cores int) float64 {
	if alone <= 0 {
		return 0
	}
	return alone / max(alone, (engineCores*alone+toolCPU)/float64(cores))
}

// medianResult is the field-by-field median of several repeats (counts: the last repeat's, and
// failed calls summed), with the repeats in Runs.
func medianResult(runs []BenchResult) BenchResult {
	med := func(f func(BenchResult) float64) float64 { return stats.MedianOf(runs, f) }
	last := runs[len(runs)-1]
	res := BenchResult{
		OverlappedS:          med(func(r BenchResult) float64 { return r.OverlappedS }),
		NaiveS:               med(func(r BenchResult) float64 { return r.NaiveS }),
		Speedup:              med(func(r BenchResult) float64 { return r.Speedup }),
		DecodeTokensPerS:     med(func(r BenchResult) float64 { return r.DecodeTokensPerS }),
		EngineOnlyTokensPerS: med(func(r BenchResult) float64 { return r.EngineOnlyTokensPerS }),
		DecodeShare:          med(func(r BenchResult) float64 { return r.DecodeShare }),
		RowShare:             med(func(r BenchResult) float64 { return r.RowShare }),
		GeneratedTokens:      last.GeneratedTokens, ToolCalls: last.ToolCalls, AppendedTokens: last.AppendedTokens,
		ToolSessions:    last.ToolSessions,
		ToolP50MS:       med(func(r BenchResult) float64 { return r.ToolP50MS }),
		ToolCallCPUMS:   med(func(r BenchResult) float64 { return r.ToolCallCPUMS }),
		OutsideCPUShare: med(func(r BenchResult) float64 { return r.OutsideCPUShare }),
		EngineCores:     med(func(r BenchResult) float64 { return r.EngineCores }),
		EngineOnlyCores: med(func(r BenchResult) float64 { return r.EngineOnlyCores }),
		CPUBoundShare:   med(func(r BenchResult) float64 { return r.CPUBoundShare }),
		Runs:            runs,
	}
	for _, r := range runs {
		res.FailedToolCalls += r.FailedToolCalls
	}
	return res
}

// engineJob is one sequence of the engine-alone measurement: a trajectory's prompt and seed, and
// the tokens the bench's script has it generate over its turns.
type engineJob struct {
	prompt []int32
	tokens int
	seed   uint64
}

// engineOnly generates, for every trajectory, as many tokens as it generates in its rollout, from
// the same prompt and seed, without pauses: the ceiling of decoding speed. It returns the tokens
// per second and the cores this process used meanwhile (0 where that cannot be read).
func engineOnly(ctx context.Context, eng *engine.Engine, jobs []engineJob, o Options) (rate, cores float64, err error) {
	var reqs []engine.Request
	total := 0
	for _, j := range jobs {
		seed := j.seed
		reqs = append(reqs, engine.Request{Prompt: j.prompt, MaxTokens: j.tokens,
			Capacity: len(j.prompt) + o.MaxResponseTokens,
			Sampling: engine.Sampling{Temperature: o.Temperature, TopP: o.TopP, Seed: &seed}})
		total += j.tokens
	}
	cpu0, start := pytool.ReadCPU(), time.Now()
	seqs, err := eng.SubmitAll(ctx, reqs)
	if err != nil {
		return 0, 0, err
	}
	for _, s := range seqs {
		if _, err := s.Wait(ctx); err != nil {
			return 0, 0, err
		}
	}
	wall, cpu1 := time.Since(start).Seconds(), pytool.ReadCPU()
	if cpu0.OK && cpu1.OK {
		cores = (cpu1.Self - cpu0.Self).Seconds() / wall
	}
	return float64(total) / wall, cores, nil
}

// benchProblems are n distinct short problems.
func benchProblems(n int) []data.Problem {
	ps := make([]data.Problem, n)
	for i := range ps {
		ps[i] = data.Problem{ID: fmt.Sprint("bench-", i), Problem: fmt.Sprintf("Compute %d + %d.", i, 2*i+1),
			Answer: fmt.Sprint(3*i + 1)}
	}
	return ps
}

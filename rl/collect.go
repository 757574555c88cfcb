package rl

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorstar/chat"
	"gorstar/data"
	"gorstar/internal/usererr"
	"gorstar/openai"
	"gorstar/pytool"
	"gorstar/reward"
	"gorstar/rollout"
)

// loopOptions are the rollout settings of a stage (or of an evaluation): the configured template,
// tool text and top-p, with the given turns, budget, temperature, samples per problem and seed.
func (t *trainer) loopOptions(turns, budget int, temperature float64, samples int, seed uint64) rollout.Options {
	tmpl, _ := chat.LoadTemplate(t.o.Rollout.Template) // checked by loadPolicy
	mode, _ := reward.ParseMode(t.o.Reward.Mode)
	o := rollout.DefaultOptions()
	o.Chat.Template = tmpl
	o.MaxTurns, o.MaxResponseTokens = turns, budget
	o.ToolTextChars = t.o.Rollout.ToolTextChars
	o.ToolSessions = t.o.Rollout.ToolSessions
	o.Temperature, o.TopP = temperature, t.o.Rollout.TopP
	o.Samples, o.Seed = samples, seed
	o.Concurrency = t.concurrency()
	o.Reward = reward.Options{Mode: mode}
	o.ToolTimeoutS = t.o.Exec.Timeout.Seconds()
	return o
}

// infraFailed reports a trajectory that the infrastructure, not the model, spoiled: a tool call
// the sandbox could not run (status internal, a lost worker) or a backend failure. Learning from
// it would teach the model a "fake zero".
func infraFailed(tr rollout.Trajectory) bool {
	return tr.InternalToolErrors > 0 || tr.Finish == rollout.FinishError
}

// rollouts runs o.Samples trajectories per problem on the policy and rolls again, with fresh
// seeds, every trajectory the infrastructure spoiled, up to rl.infra_retries times each, so every
// group keeps its size. Past the retries the step fails: the sandbox is down.
func (t *trainer) rollouts(ctx context.Context, problems []data.Problem, o rollout.Options) ([]rollout.Trajectory, error) {
	trajs, _, err := t.runLoop(ctx, problems, o)
	if err != nil {
		return nil, err
	}
	// A sandbox that fails every call with an ordinary status (a fork refused under load, an
	// interpreter that cannot start) looks like a policy that writes broken code. When most of
	// the step's calls failed, a canary call tells them apart: if the sandbox cannot run
	// print(6 * 7) either, the step is rolled again (same seeds) after a pause, and past
	// rl.infra_retries the run stops with a resumable checkpoint.
	for attempt := 1; mostCallsFailed(trajs); attempt++ {
		res, ok := canary(ctx, t.tools)
		if ok, err = everyRank(t.o.World, ok); err != nil {
			return nil, err
		}
		if ok {
			break
		}
		if attempt > t.o.RL.InfraRetries {
			s := rollout.Summarize(trajs, 0)
			return nil, fmt.Errorf("rl: %d of %d tool calls failed and the sandbox cannot run print(6 * 7) either (%s: %s): is the sandbox down? the last checkpoint is resumable",
				s.FailedToolCalls, s.ToolCalls, res.Status, firstLine(res.Stderr))
		}
		t.stepRerolls += len(trajs)
		select {
		case <-time.After(time.Duration(attempt) * time.Second):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if trajs, _, err = t.runLoop(ctx, problems, o); err != nil {
			return nil, err
		}
	}
	for i := range trajs {
		if strings.Contains(trajs[i].Error, openai.ErrNoTokenIDs.Error()) {
			// Not a passing failure: the servers cannot serve training. Say so at once.
			return nil, usererr.New("rl: rollout.endpoints: %s", trajs[i].Error)
		}
		for attempt := 1; infraFailed(trajs[i]); attempt++ {
			if attempt > t.o.RL.InfraRetries {
				return nil, fmt.Errorf("rl: rollout %d of problem %s failed %d times for the infrastructure (%s): is the sandbox down? the last checkpoint is resumable",
					trajs[i].Sample, trajs[i].ProblemID, attempt, failureText(trajs[i]))
			}
			t.stepRerolls++
			again := o
			again.Samples, again.Seed = 1, rollout.SampleSeed(o.Seed^uint64(attempt)<<40, trajs[i].ProblemIndex, trajs[i].Sample)
			one, _, err := t.runLoop(ctx, problems[trajs[i].ProblemIndex:trajs[i].ProblemIndex+1], again)
			if err != nil {
				return nil, err
			}
			one[0].ProblemIndex, one[0].Sample = trajs[i].ProblemIndex, trajs[i].Sample
			trajs[i] = one[0]
		}
	}
	return trajs, nil
}

func failureText(tr rollout.Trajectory) string {
	if tr.Error != "" {
		return tr.Error
	}
	return fmt.Sprintf("%d tool calls with status internal", tr.InternalToolErrors)
}

// runLoop rolls out on the engine, or on the servers, whose rollouts must come from the weights
// of the current step.
func (t *trainer) runLoop(ctx context.Context, problems []data.Problem, o rollout.Options) ([]rollout.Trajectory, rollout.Summary, error) {
	var b rollout.Backend = &rollout.EngineBackend{Engine: t.eng, WeightVersion: int64(t.st.Step)}
	if t.remote != nil {
		b = t.remote.backend
	}
	shareLoop(t.o.World, &o) // under a launcher: this rank's problems, then every rank's (parallel.go)
	loop, err := rollout.New(b, t.tools, t.tok, o)
	if err != nil {
		return nil, rollout.Summary{}, err
	}
	trajs, sum, err := loop.Run(ctx, problems)
	if err == nil && t.remote != nil {
		err = t.checkVersions(trajs)
	}
	if err == nil {
		trajs, err = gatherLoop(t.o.World, trajs)
	}
	return trajs, sum, err
}

// sampleOf is what RoC and the statistics need to know about a trajectory. Only the model's own
// failures count as failed calls (rollout keeps the sandbox's apart).
func sampleOf(tr rollout.Trajectory) Sample {
	return Sample{Reward: tr.Reward, ToolCalls: tr.ToolCalls, FailedCalls: tr.FailedToolCalls,
		AnswerTags: tr.AnswerTags, Turns: tr.NumTurns, Truncated: tr.Finish == rollout.FinishTruncated,
		ResponseTokens: len(tr.ResponseIDs)}
}

// keptGroup is what RoC kept of one prompt's group, with the advantages of the kept rollouts.
type keptGroup struct {
	trajs      []rollout.Trajectory
	advantages []float64
}

// downsample applies RoC to each prompt's group of `per` rollouts and computes the advantages of
// what it keeps. Rejected groups are left out; groups whose kept rewards are all equal (zero
// advantages, no gradient) are counted.
func (t *trainer) downsample(trajs []rollout.Trajectory, per int) (kept []keptGroup, rejected, uniform int) {
	g := t.o.RL.GroupSize
	for start := 0; start < len(trajs); start += per {
		group := trajs[start : start+per]
		samples := make([]Sample, len(group))
		for i, tr := range group {
			samples[i] = sampleOf(tr)
		}
		idx, rej := Downsample(t.mode, samples, g, t.rng)
		if rej {
			rejected++
			continue
		}
		var kg keptGroup
		rewards := make([]float64, len(idx))
		for i, k := range idx {
			kg.trajs = append(kg.trajs, group[k])
			rewards[i] = group[k].Reward
		}
		kg.advantages = GroupAdvantages(rewards)
		if allZero(kg.advantages) {
			uniform++ // kept for the statistics; its rollouts carry no gradient and are not trained on
		}
		kept = append(kept, kg)
	}
	return kept, rejected, uniform
}

func allZero(xs []float64) bool {
	for _, x := range xs {
		if x != 0 {
			return false
		}
	}
	return true
}

// mostCallsFailed reports a step in which at least 8 tool calls ran and 90% of them failed.
func mostCallsFailed(trajs []rollout.Trajectory) bool {
	s := rollout.Summarize(trajs, 0)
	return s.ToolCalls >= 8 && s.FailedToolCalls*10 >= s.ToolCalls*9
}

// canary runs a call any working sandbox answers with "42".
func canary(ctx context.Context, tools pytool.Runner) (pytool.Result, bool) {
	res := tools.Run(ctx, pytool.Call{Code: "print(6 * 7)"})
	return res, res.Status == pytool.StatusOK && strings.TrimSpace(res.Stdout) == "42"
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

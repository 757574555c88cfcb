package eval

import (
	"context"
	"fmt"

	"gorstar/chat"
	"gorstar/data"
	"gorstar/internal/usererr"
	"gorstar/pytool"
	"gorstar/rollout"
)

// PassRate is how often a policy solved one problem: Correct of Samples samples.
type PassRate struct {
	ID       string  `json:"id"`
	Samples  int     `json:"samples"`
	Correct  int     `json:"correct"`
	PassRate float64 `json:"pass_rate"`
}

// AtMost reports whether the problem's share of correct samples is at most maxRate — the rule
// that keeps a problem in a pass-rate filter. The comparison is Correct ≤ maxRate·Samples with a
// hair of tolerance, so a threshold written to a few digits (0.875 for 7/8, 0.6667 for 2/3)
// keeps the count it names.
func (p PassRate) AtMost(maxRate float64) bool {
	return float64(p.Correct) <= maxRate*float64(p.Samples)+1e-9
}

// NotAlwaysSolved is the largest pass rate short of solving every one of k samples, (k−1)/k:
// rStar2's stage 3 keeps the problems its policy did not solve 8 times out of 8, i.e. pass rate
// at most 0.875.
func NotAlwaysSolved(k int) float64 {
	return float64(k-1) / float64(k)
}

// PassRates counts each problem's correct samples among trajectories (in any order; their
// ProblemIndex points into problems), k samples per problem, with correct deciding what counts
// (strict grading for a filter, the reward for RL).
func PassRates(problems []data.Problem, k int, trajs []rollout.Trajectory, correct func(rollout.Trajectory) bool) []PassRate {
	out := make([]PassRate, len(problems))
	for i, p := range problems {
		out[i] = PassRate{ID: p.ID, Samples: k}
	}
	for _, t := range trajs {
		if correct(t) {
			out[t.ProblemIndex].Correct++
		}
	}
	for i := range out {
		out[i].PassRate = float64(out[i].Correct) / float64(k)
	}
	return out
}

// Rater measures pass rates of one policy, batch after batch, with the sampling of an
// evaluation (Options.Eval's samples, temperature, turn and token limits; strict grading).
type Rater struct {
	o     Options
	pol   *rollout.Policy
	tools pytool.Runner
	pool  *lazyPool
	ro    rollout.Options
	rated int
}

// NewRater opens the policy of o (a model directory or endpoints) for Rate. o.Data, o.Out and
// o.Eval.Limit are not used.
func NewRater(ctx context.Context, o Options) (*Rater, error) {
	if err := checkSampling(&o); err != nil {
		return nil, err
	}
	tmpl, err := chat.LoadTemplate(o.Template)
	if err != nil {
		return nil, usererr.New("eval: template %q: %v", o.Template, err)
	}
	co := chatOptions(tmpl, o.NoTool)
	var man Manifest
	pol, err := openPolicy(ctx, o, tmpl, co.Primer, &man)
	if err != nil {
		return nil, err
	}
	r := &Rater{o: o, pol: pol, tools: o.Tools, ro: rolloutOptions(o, co)}
	if r.tools == nil {
		if r.pool, err = newLazyPool(ctx, o); err != nil {
			pol.Close()
			return nil, err
		}
		r.tools = r.pool
	}
	return r, nil
}

// Rate samples every problem Eval.Samples times and counts the strictly correct samples. Each
// call continues the seed stream of the last (the seeds of a batch are drawn from the number of
// problems rated before it), so the same batches give the same rates. A sample the backend
// or the sandbox fails on fails the call: a filter must not take a lost sample for a wrong one.
func (r *Rater) Rate(ctx context.Context, problems []data.Problem) ([]PassRate, error) {
	ro := r.ro
	ro.Seed = rollout.SampleSeed(r.o.Seed, -4, r.rated)
	if w := r.o.World; w.Distributed() { // this rank's problems; the counts are summed below
		ro.Pending = func(i, _ int) bool { return ours(w, i) }
	}
	loop, err := rollout.New(r.pol.Backend, r.tools, r.pol.Tokenizer, ro)
	if err != nil {
		return nil, err
	}
	trajs, _, err := loop.Run(ctx, problems)
	if err != nil {
		return nil, fmt.Errorf("eval: pass rate: %w", err)
	}
	failed, first := 0, ""
	for _, t := range trajs {
		if why := infraFailure(t); why != "" {
			if failed++; first == "" {
				first = why
			}
		}
	}
	if failed > 0 {
		return nil, usererr.New("eval: pass rate: %d of %d samples failed, e.g. %s", failed, len(trajs), first)
	}
	r.rated += len(problems)
	rates := PassRates(problems, ro.Samples, trajs, func(t rollout.Trajectory) bool { return t.Correct })
	return rates, sumCorrect(r.o.World, rates)
}

// Close releases the policy and the sandbox pool.
func (r *Rater) Close() {
	r.pol.Close()
	if r.pool != nil {
		r.pool.Close()
	}
}

package eval

import (
	"context"
	"fmt"

	"gorstar/chat"
	"gorstar/data"
	"gorstar/eval/metrics"
	"gorstar/internal/usererr"
	"gorstar/pytool"
	"gorstar/rollout"
)

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
func (r *Rater) Rate(ctx context.Context, problems []data.Problem) ([]metrics.PassRate, error) {
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
	rates := metrics.PassRates(problemIDs(problems), ro.Samples, trajs, func(t rollout.Trajectory) (int, bool) { return t.ProblemIndex, t.Correct })
	return rates, sumCorrect(r.o.World, rates)
}

// Close releases the policy and the sandbox pool.
func (r *Rater) Close() {
	r.pol.Close()
	if r.pool != nil {
		r.pool.Close()
	}
}

// problemIDs lists the problems' ids, in order.
func problemIDs(problems []data.Problem) []string {
	ids := make([]string, len(problems))
	for i, p := range problems {
		ids[i] = p.ID
	}
	return ids
}

package rollout

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"gorstar/chat"
	"gorstar/data"
	"gorstar/pytool"
	"gorstar/tokenizer"
)

// Loop runs rollouts of problems on a Backend with tools in an pytool.Runner. It is safe for
// concurrent use; each Run is independent.
type Loop struct {
	backend   Backend
	tools     pytool.Runner
	tok       *tokenizer.Tokenizer
	render    *chat.Renderer
	opts      Options
	endOfTurn []int32
	// script, for Bench only, decides where turns end and what they call (a random model calls
	// nothing by itself).
	script *benchScript
	// id and sessions name tool sessions (Options.ToolSessions) so that loops sharing a runner,
	// even across processes and exec servers, never share one.
	id       string
	sessions atomic.Uint64
}

// New checks the options and the template against the tokenizer.
func New(b Backend, tools pytool.Runner, tok *tokenizer.Tokenizer, o Options) (*Loop, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	r, err := chat.NewRenderer(tok, o.Chat)
	if err != nil {
		return nil, err
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	return &Loop{backend: b, tools: tools, tok: tok, render: r, opts: o, endOfTurn: r.EndOfTurn(),
		id: hex.EncodeToString(id[:])}, nil
}

// newSession names a new tool session.
func (l *Loop) newSession() string {
	return fmt.Sprintf("rollout-%s-%d", l.id, l.sessions.Add(1))
}

// Prompt renders a problem as every trajectory starts: one user turn holding the problem text,
// under the renderer's template, tool schemas and primer. Counting its ids is counting what a
// rollout's prompt costs (data filter --max-prompt-tokens).
func Prompt(r *chat.Renderer, p data.Problem) ([]int32, error) {
	return r.RenderPrompt([]chat.Message{{Role: chat.RoleUser, Content: p.Problem}})
}

// Run rolls out Options.Samples trajectories per problem, grades them against the problems'
// answers and returns them in order (problem by problem, sample by sample) with their summary.
// A trajectory the backend fails on ends with FinishError; Run itself fails only when ctx ends or
// a prompt cannot be rendered.
func (l *Loop) Run(ctx context.Context, problems []data.Problem) ([]Trajectory, Summary, error) {
	start := time.Now()
	prompts := make([][]int32, len(problems))
	for i, p := range problems {
		ids, err := Prompt(l.render, p)
		if err != nil {
			return nil, Summary{}, fmt.Errorf("rollout: render problem %d (%s): %w", i, p.ID, err)
		}
		prompts[i] = ids
	}
	runs := make([]*run, 0, len(problems)*l.opts.Samples)
	for i, p := range problems {
		for j := 0; j < l.opts.Samples; j++ {
			if l.opts.Pending == nil || l.opts.Pending(i, j) {
				runs = append(runs, l.newRun(i, j, p, prompts[i]))
			}
		}
	}
	var err error
	if l.opts.Overlap {
		err = l.overlapped(ctx, batches(runs, l.opts.Concurrency))
	} else {
		err = l.naive(ctx, batches(runs, l.opts.Concurrency))
	}
	for _, r := range runs {
		r.closeSession() // the trajectories the context cut off
	}
	if err != nil {
		return nil, Summary{}, err
	}
	out := make([]Trajectory, len(runs))
	for i, r := range runs {
		out[i] = *r.t
	}
	return out, Summarize(out, time.Since(start)), nil
}

// batches cuts runs (in problem order) into the groups of one problem, each cut to at most limit
// runs: the units started together.
func batches(runs []*run, limit int) [][]*run {
	var out [][]*run
	for g := 0; g < len(runs); {
		end := g + 1
		for end < len(runs) && runs[end].t.ProblemIndex == runs[g].t.ProblemIndex {
			end++
		}
		group := runs[g:end]
		for k := 0; k < len(group); k += limit {
			out = append(out, group[k:min(k+limit, len(group))])
		}
		g = end
	}
	return out
}

// start begins a batch's sequences; a backend refusal ends its trajectories with an error.
func (l *Loop) start(ctx context.Context, batch []*run) error {
	reqs := make([]Request, len(batch))
	for i, r := range batch {
		reqs[i] = r.request()
		r.started = time.Now()
	}
	streams, err := l.backend.Start(ctx, reqs)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		for _, r := range batch {
			r.fail(fmt.Errorf("start: %w", err))
		}
		return nil
	}
	for i, r := range batch {
		r.stream = streams[i]
	}
	return nil
}

// overlapped keeps up to Concurrency trajectories decoding, each on its own: it resumes as soon
// as its tool answers, and a trajectory waiting on its tool or finished leaves its place to the
// next batch, so the backend decodes a full batch while tools run. One batch more is started ahead
// and waits in the backend's queue, so the backend fills a freed slot in the step it frees it:
// without it, a slot would wait for the trajectory's goroutine to finish (grading, OnFinish), for
// a whole batch's slots, and for the submission, a few engine steps each time — what kept short
// evaluations at a fraction of the engine's rate.
func (l *Loop) overlapped(ctx context.Context, work [][]*run) error {
	ahead := 0
	for _, b := range work {
		ahead = max(ahead, len(b))
	}
	g := newGate(l.opts.Concurrency + ahead)
	var wg sync.WaitGroup
	var firstErr error
	var mu sync.Mutex
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	for _, batch := range work {
		if err := g.enter(ctx, len(batch)); err != nil {
			wg.Wait()
			return err
		}
		if err := l.start(ctx, batch); err != nil {
			wg.Wait()
			return err
		}
		for _, r := range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer g.add(-1)
				if err := r.runAll(ctx, g); err != nil {
					fail(err)
				}
			}()
		}
	}
	wg.Wait()
	return firstErr
}

// gate counts the trajectories that are decoding (started, not waiting on a tool, not finished):
// new batches enter while the count stays within the limit; one waiting on its tool steps out and
// comes back without waiting, so a resumed trajectory never queues behind new ones.
type gate struct {
	mu       sync.Mutex
	n, limit int
	changed  chan struct{} // closed and replaced when the count falls
}

func newGate(limit int) *gate { return &gate{limit: limit, changed: make(chan struct{})} }

// enter waits until k more fit (or none are decoding) and counts them.
func (g *gate) enter(ctx context.Context, k int) error {
	for {
		g.mu.Lock()
		if g.n+k <= g.limit || g.n == 0 {
			g.n += k
			g.mu.Unlock()
			return nil
		}
		ch := g.changed
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// add changes the count by k (−1: a trajectory waits on its tool or ended; +1: it resumed).
func (g *gate) add(k int) {
	g.mu.Lock()
	g.n += k
	if k < 0 {
		close(g.changed)
		g.changed = make(chan struct{})
	}
	g.mu.Unlock()
}

// naive runs waves of at most Concurrency trajectories; in a wave every turn is generated for all,
// then every tool call of the turn is run, then all resume: the schedule without overlap.
func (l *Loop) naive(ctx context.Context, work [][]*run) error {
	for len(work) > 0 {
		var wave []*run
		for len(work) > 0 && len(wave)+len(work[0]) <= l.opts.Concurrency {
			if err := l.start(ctx, work[0]); err != nil {
				return err
			}
			wave = append(wave, work[0]...)
			work = work[1:]
		}
		if err := l.runWave(ctx, wave); err != nil {
			return err
		}
	}
	return nil
}

func (l *Loop) runWave(ctx context.Context, wave []*run) error {
	for {
		var active []*run
		for _, r := range wave {
			if !r.done {
				active = append(active, r)
			}
		}
		if len(active) == 0 {
			return nil
		}
		if err := forAll(active, func(r *run) error { return r.turn(ctx) }); err != nil {
			return err
		}
		var calling []*run
		for _, r := range active {
			if !r.done {
				calling = append(calling, r)
			}
		}
		_ = forAll(calling, func(r *run) error { r.runTool(ctx); return nil })
		for _, r := range calling {
			if err := r.resume(ctx); err != nil {
				return err
			}
		}
	}
}

// forAll calls f on every run concurrently and returns the first error.
func forAll(runs []*run, f func(*run) error) error {
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	for i, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(r)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

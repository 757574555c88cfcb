package eval

import (
	"context"
	"sync"

	"gorstar/chat"
	"gorstar/config"
	"gorstar/engine"
	"gorstar/exec"
	"gorstar/internal/usererr"
	"gorstar/openai"
	"gorstar/rollout"
	"gorstar/tokenizer"
)

// policy is what samples are drawn from: a backend for the rollout loop, the tokenizer prompts
// are rendered with, and what the manifest records about the model.
type policy struct {
	backend rollout.Backend
	tok     *tokenizer.Tokenizer
	close   func()
}

// openPolicy loads the model natively (engine.LoadPolicy) or connects to the endpoints and
// checks that they serve the model.
func openPolicy(ctx context.Context, o Options, tmpl *chat.Template, primer string, m *Manifest) (*policy, error) {
	if o.Model != "" {
		eo := o.Engine
		if eo.MaxSeqs == 0 {
			eo.MaxSeqs = o.Concurrency
		}
		p, err := engine.LoadPolicy(o.Model, engine.PolicyOptions{Template: tmpl, Primer: primer, Engine: eo})
		if err != nil {
			return nil, err
		}
		hash, err := modelSHA256(o.Model)
		if err != nil {
			p.Close()
			return nil, err
		}
		m.Model, m.ModelSHA256 = o.Model, hash
		return &policy{backend: &rollout.EngineBackend{Engine: p.Engine}, tok: p.Tokenizer, close: p.Close}, nil
	}
	tok, err := tokenizer.Load(o.Tokenizer)
	if err != nil {
		return nil, err
	}
	c, err := openai.New(openai.Options{Endpoints: o.Endpoints, Model: o.ServedModel, Tokenizer: tok, Warn: o.Warn})
	if err != nil {
		return nil, usererr.New("eval: %v", err)
	}
	if err := c.CheckModel(ctx); err != nil {
		c.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, usererr.New("eval: %v", err)
	}
	m.Endpoints, m.ServedModel = c.Endpoints(), o.ServedModel
	return &policy{backend: &rollout.RemoteBackend{Client: c, Concurrency: o.Concurrency}, tok: tok, close: c.Close}, nil
}

// chatOptions are the template, the tool schema (none without the tool) and the primer.
func chatOptions(tmpl *chat.Template, noTool bool) chat.Options {
	co := chat.DefaultOptions()
	co.Template = tmpl
	if noTool {
		co.Tools = nil
	}
	return co
}

// templateFingerprint hashes the prompt the renderer makes for a fixed probe question: it changes
// with the template's text, the tool schema and the primer, which the name alone would not show.
func templateFingerprint(tok *tokenizer.Tokenizer, co chat.Options) (string, error) {
	r, err := chat.NewRenderer(tok, co)
	if err != nil {
		return "", err
	}
	ids, err := r.RenderPrompt([]chat.Message{{Role: chat.RoleUser, Content: "What is 6 times 7?"}})
	if err != nil {
		return "", err
	}
	return textSHA256(ids), nil
}

// lazyPool starts the sandbox pool on the first call, so a model that never calls the tool (or a
// run that needs none) does not wait for Python workers.
type lazyPool struct {
	cfg  config.Exec
	once sync.Once
	pool *exec.Pool
	err  error
}

func (l *lazyPool) get(ctx context.Context) (*exec.Pool, error) {
	l.once.Do(func() { l.pool, l.err = exec.NewPool(context.WithoutCancel(ctx), l.cfg) })
	return l.pool, l.err
}

func (l *lazyPool) Run(ctx context.Context, c exec.Call) exec.Result {
	p, err := l.get(ctx)
	if err != nil {
		return exec.Result{Status: exec.StatusInternal, Stderr: err.Error()}
	}
	return p.Run(ctx, c)
}

func (l *lazyPool) RunBatch(ctx context.Context, calls []exec.Call) []exec.Result {
	out := make([]exec.Result, len(calls))
	for i, c := range calls {
		out[i] = l.Run(ctx, c)
	}
	return out
}

func (l *lazyPool) Close() {
	if l.pool != nil {
		l.pool.Close()
	}
}

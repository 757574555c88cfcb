package eval

import (
	"context"
	"sync"

	"gorstar/chat"
	"gorstar/config"
	"gorstar/data"
	"gorstar/internal/tooloptions"
	"gorstar/internal/usererr"
	"gorstar/pytool"
	"gorstar/rollout"
)

// sampler is where an evaluation's samples come from: a token-mode policy (native, or endpoints
// with the served model's tokenizer) or, on endpoints without a tokenizer, text mode.
type sampler struct {
	run   func(ctx context.Context, tools pytool.Runner, ro rollout.Options, problems []data.Problem) error
	close func()
}

// TextModeWarning is the line a text-mode evaluation warns with.
const TextModeWarning = "text mode (no --tokenizer): prompts are rendered and tool calls parsed by the server; " +
	"token counts come from the server's usage; training (rollout, rl) needs token mode"

// openSampler opens the policy and fills the manifest's model part and template fingerprint.
func openSampler(ctx context.Context, o Options, tmpl *chat.Template, co chat.Options, m *Manifest) (*sampler, error) {
	if len(o.Endpoints) > 0 && o.Tokenizer == "" {
		c, err := rollout.OpenText(ctx, rollout.PolicyOptions{Endpoints: o.Endpoints, ServedModel: o.ServedModel, Warn: o.Warn})
		if err != nil {
			if usererr.Is(err) {
				return nil, usererr.New("eval: %w", err)
			}
			return nil, err
		}
		m.Mode, m.Endpoints, m.ServedModel = rollout.ModeText, c.Endpoints(), o.ServedModel
		return &sampler{close: c.Close, run: func(ctx context.Context, tools pytool.Runner, ro rollout.Options, problems []data.Problem) error {
			loop, err := rollout.NewText(c, tools, ro)
			if err != nil {
				return err
			}
			_, _, err = loop.Run(ctx, problems)
			return err
		}}, nil
	}
	pol, err := openPolicy(ctx, o, tmpl, co.Primer, m)
	if err != nil {
		return nil, err
	}
	if m.TemplateSHA256, err = rollout.TemplateFingerprint(pol.Tokenizer, co); err != nil {
		pol.Close()
		return nil, err
	}
	return &sampler{close: pol.Close, run: func(ctx context.Context, tools pytool.Runner, ro rollout.Options, problems []data.Problem) error {
		loop, err := rollout.New(pol.Backend, tools, pol.Tokenizer, ro)
		if err != nil {
			return err
		}
		_, _, err = loop.Run(ctx, problems)
		return err
	}}, nil
}

// openPolicy opens the policy (rollout.OpenPolicy: natively or on the endpoints, checked to
// serve the model) and records in the manifest where the samples come from.
func openPolicy(ctx context.Context, o Options, tmpl *chat.Template, primer string, m *Manifest) (*rollout.Policy, error) {
	p, err := rollout.OpenPolicy(ctx, rollout.PolicyOptions{
		Model: o.Model, Engine: o.Engine,
		Endpoints: o.Endpoints, ServedModel: o.ServedModel, Tokenizer: o.Tokenizer,
		Template: tmpl, Primer: primer, Concurrency: o.Concurrency, Warn: o.Warn,
	})
	if err != nil {
		if usererr.Is(err) && len(o.Endpoints) > 0 {
			return nil, usererr.New("eval: %w", err)
		}
		return nil, err
	}
	if err := m.SetPolicy(p); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
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

// lazyPool starts the sandbox pool on the first call, so a model that never calls the tool (or a
// run that needs none) does not wait for Python workers; with exec.endpoints it connects to the
// nodes at once instead (cheap, and a dead list fails the run before any sampling).
type lazyPool struct {
	cfg    config.Exec
	native bool // the policy decodes on this machine (pytool.BesideEngine)
	warn   func(string)
	once   sync.Once
	pool   pytool.Tools
	err    error
}

// newLazyPool is the pool of o's calls, at the priority beside a native engine where o has one.
func newLazyPool(ctx context.Context, o Options) (*lazyPool, error) {
	l := &lazyPool{cfg: o.Exec, native: len(o.Endpoints) == 0, warn: o.Warn}
	if len(l.cfg.Endpoints) > 0 {
		if _, err := l.get(ctx); err != nil {
			return nil, err
		}
	}
	return l, nil
}

func (l *lazyPool) get(ctx context.Context) (pytool.Tools, error) {
	l.once.Do(func() {
		l.pool, l.err = pytool.Open(context.WithoutCancel(ctx), tooloptions.From(l.cfg), l.warn, pytool.BesideEngine(l.native))
	})
	return l.pool, l.err
}

func (l *lazyPool) Run(ctx context.Context, c pytool.Call) pytool.Result {
	p, err := l.get(ctx)
	if err != nil {
		return pytool.Result{Status: pytool.StatusInternal, Stderr: err.Error()}
	}
	return p.Run(ctx, c)
}

func (l *lazyPool) RunBatch(ctx context.Context, calls []pytool.Call) []pytool.Result {
	out := make([]pytool.Result, len(calls))
	for i, c := range calls {
		out[i] = l.Run(ctx, c)
	}
	return out
}

// CloseSession ends a session's interpreter (rollout.Options.ToolSessions) once its trajectory ends.
func (l *lazyPool) CloseSession(name string) {
	if p, err := l.get(context.Background()); err == nil {
		p.CloseSession(name)
	}
}

func (l *lazyPool) Close() {
	if l.pool != nil {
		l.pool.Close()
	}
}

package rollout

import (
	"context"
	"encoding/json"

	"gorstar/chat"
	"gorstar/engine"
	"gorstar/internal/usererr"
	"gorstar/openai"
	"gorstar/tokenizer"
)

// PolicyOptions say where a Loop's samples come from: a model directory run on the in-process
// engine (Model), or OpenAI-compatible servers (Endpoints with ServedModel and Tokenizer).
type PolicyOptions struct {
	// Model is a Hugging Face directory to load natively (engine.LoadPolicy; the kernels must be
	// set up first).
	Model string
	// Engine sizes the native engine; MaxSeqs 0 takes Concurrency.
	Engine engine.Options

	// Endpoints are the servers' base URLs, ServedModel the model id they list, and Tokenizer a
	// directory with the served model's tokenizer.json (prompts go out as token ids).
	Endpoints   []string
	ServedModel string
	Tokenizer   string

	// Template renders the prompts (nil: chat.DefaultTemplate); Primer starts every generated
	// assistant turn (rStar2: "<reason>").
	Template *chat.Template
	Primer   string
	// Concurrency bounds the trajectories in flight: natively at most the engine's MaxSeqs (and
	// MaxSeqs when 0; it sizes the engine when Engine.MaxSeqs is 0), on endpoints the completions
	// in flight over all servers (0: 64).
	Concurrency int
	// WeightVersion is recorded on every trajectory of a native policy.
	WeightVersion int64
	// Warn receives the endpoint client's warnings (retries, an endpoint taken out); nil drops them.
	Warn func(string)
}

// Policy is an opened policy: the Backend a Loop samples from, the tokenizer its prompts are
// rendered with, the template and primer, and what a manifest records about where samples came
// from. Close frees the engine and model, or the client's connections.
type Policy struct {
	Backend   Backend
	Tokenizer *tokenizer.Tokenizer
	Template  *chat.Template
	Primer    string
	// Concurrency is the trajectories the backend takes at once (Options.Concurrency).
	Concurrency int
	// Engine is the native engine (nil on endpoints): its Stats, or WithModel for a trainer.
	Engine *engine.Engine

	// Model is the native model directory; Endpoints (as the client normalized them) and
	// ServedModel describe a remote policy.
	Model       string
	Endpoints   []string
	ServedModel string

	close func()
}

// Close frees what the policy holds; safe to call more than once.
func (p *Policy) Close() {
	if p.close != nil {
		p.close()
		p.close = nil
	}
}

// ChatOptions are the renderer's options for this policy's prompts with the given tool schemas
// (chat.PythonTool for rStar2's tool; nil for none).
func (p *Policy) ChatOptions(tools []json.RawMessage) chat.Options {
	return chat.Options{Template: p.Template, Tools: tools, Primer: p.Primer}
}

// OpenPolicy loads the model natively, or connects to the endpoints and checks that they serve
// ServedModel. Giving both or neither is an error. An endpoint that is down or a model it does not
// list is a user error of one line naming the address (list models: URL (connection refused);
// served model "x" is not listed by URL; the server lists: …).
func OpenPolicy(ctx context.Context, o PolicyOptions) (*Policy, error) {
	switch {
	case o.Model == "" && len(o.Endpoints) == 0:
		return nil, usererr.New("give a model directory or an endpoint")
	case o.Model != "" && len(o.Endpoints) > 0:
		return nil, usererr.New("give a model directory or endpoints, not both")
	}
	tmpl := o.Template
	if tmpl == nil {
		var err error
		if tmpl, err = chat.LoadTemplate(chat.DefaultTemplate); err != nil {
			return nil, err
		}
	}
	if o.Model != "" {
		return openNative(o, tmpl)
	}
	return openRemote(ctx, o, tmpl)
}

func openNative(o PolicyOptions, tmpl *chat.Template) (*Policy, error) {
	eo := o.Engine
	if eo.MaxSeqs == 0 {
		eo.MaxSeqs = o.Concurrency // the engine's default when 0 too
	}
	p, err := engine.LoadPolicy(o.Model, engine.PolicyOptions{Template: tmpl, Primer: o.Primer, Engine: eo})
	if err != nil {
		return nil, err
	}
	return &Policy{
		Backend:   &EngineBackend{Engine: p.Engine, WeightVersion: o.WeightVersion},
		Tokenizer: p.Tokenizer, Template: tmpl, Primer: o.Primer,
		Concurrency: batch(o.Concurrency, p.Engine.Options().MaxSeqs), Engine: p.Engine, Model: o.Model, close: p.Close,
	}, nil
}

// batch is the trajectories a native policy takes at once: the concurrency asked for, at most the
// engine's MaxSeqs (its decode batch: more would only queue).
func batch(concurrency, maxSeqs int) int {
	if concurrency <= 0 {
		return maxSeqs
	}
	return min(concurrency, maxSeqs)
}

// OpenText connects to the endpoints for text mode (TextLoop: no tokenizer) and checks that they
// serve ServedModel; errors are as OpenPolicy's.
func OpenText(ctx context.Context, o PolicyOptions) (*openai.Client, error) {
	if o.ServedModel == "" {
		return nil, usererr.New("an endpoint needs the served model's name (the name the server lists)")
	}
	return connect(ctx, openai.Options{Endpoints: o.Endpoints, Model: o.ServedModel, Warn: o.Warn})
}

// connect opens a client on the endpoints and checks that they serve the model: an unreachable
// server or a missing model is the user's error of one line.
func connect(ctx context.Context, o openai.Options) (*openai.Client, error) {
	c, err := openai.New(o)
	if err != nil {
		return nil, usererr.Wrap(err)
	}
	if err := c.CheckModel(ctx); err != nil {
		c.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, usererr.Wrap(err)
	}
	return c, nil
}

func openRemote(ctx context.Context, o PolicyOptions, tmpl *chat.Template) (*Policy, error) {
	if o.Concurrency <= 0 {
		o.Concurrency = 64
	}
	switch {
	case o.ServedModel == "":
		return nil, usererr.New("an endpoint needs the served model's name (the name the server lists)")
	case o.Tokenizer == "":
		return nil, usererr.New("an endpoint needs a tokenizer directory (the served model's tokenizer.json): token mode sends prompts and reads samples as token ids, which training needs; only eval has a text mode")
	}
	tok, err := tokenizer.Load(o.Tokenizer)
	if err != nil {
		return nil, err
	}
	c, err := connect(ctx, openai.Options{Endpoints: o.Endpoints, Model: o.ServedModel, Tokenizer: tok, Warn: o.Warn})
	if err != nil {
		return nil, err
	}
	return &Policy{
		Backend:   &RemoteBackend{Client: c, Tokenizer: tok, Concurrency: o.Concurrency},
		Tokenizer: tok, Template: tmpl, Primer: o.Primer, Concurrency: o.Concurrency,
		Endpoints: c.Endpoints(), ServedModel: o.ServedModel, close: c.Close,
	}, nil
}

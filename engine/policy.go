package engine

import (
	"encoding/json"

	"gorstar/chat"
	"gorstar/internal/usererr"
	"gorstar/model"
	"gorstar/tokenizer"
)

// Policy is a model directory ready to generate: the model, its tokenizer, the chat template and
// primer its prompts are rendered with, and a running engine that owns the model. `gorstar serve`
// and `gorstar chat` start from one, and so do RL rollouts and evaluation; a trainer updates its
// weights through Engine.WithModel. The kernels must be set up first (kernels.Setup).
type Policy struct {
	Model     *model.Model
	Tokenizer *tokenizer.Tokenizer
	Template  *chat.Template
	Primer    string
	Engine    *Engine
}

// PolicyOptions configure LoadPolicy.
type PolicyOptions struct {
	Template *chat.Template // nil: chat.DefaultTemplate
	Primer   string         // the text each generated assistant turn starts with, e.g. "<reason>"
	Engine   Options        // Tokenizer is set to the directory's
}

// LoadPolicy loads the model and tokenizer of a Hugging Face directory and starts an engine on
// them. A tokenizer with more tokens than the model's vocabulary is a user error.
func LoadPolicy(dir string, opts PolicyOptions) (*Policy, error) {
	tmpl := opts.Template
	if tmpl == nil {
		var err error
		if tmpl, err = chat.LoadTemplate(chat.DefaultTemplate); err != nil {
			return nil, err
		}
	}
	m, err := model.LoadWith(dir, model.LoadOptions{Precision: opts.Engine.Precision, Inference: true})
	if err != nil {
		return nil, err
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		m.Close()
		return nil, err
	}
	if tok.VocabSize() > m.Config.VocabSize {
		m.Close()
		return nil, usererr.New("%s: the tokenizer has %d tokens, more than the model's vocab_size %d", dir, tok.VocabSize(), m.Config.VocabSize)
	}
	opts.Engine.Tokenizer = tok
	eng, err := New(m, opts.Engine)
	if err != nil {
		m.Close()
		return nil, err
	}
	return &Policy{Model: m, Tokenizer: tok, Template: tmpl, Primer: opts.Primer, Engine: eng}, nil
}

// Renderer renders conversations for this policy with the given tool schemas (chat.PythonTool for
// rStar2's tool; nil for none): the one code path for its prompts' system turn.
func (p *Policy) Renderer(tools []json.RawMessage) (*chat.Renderer, error) {
	return chat.NewRenderer(p.Tokenizer, chat.Options{Template: p.Template, Tools: tools, Primer: p.Primer})
}

// Close stops the engine and frees the model.
func (p *Policy) Close() {
	p.Engine.Close()
	p.Model.Close()
}

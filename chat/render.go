package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"gorstar/tokenizer"
)

// Options configure a Renderer.
type Options struct {
	// Template is the chat template; nil means the built-in DefaultTemplate.
	Template *Template
	// Tools are the function schemas shown to the model (templates that show tools).
	Tools []json.RawMessage
	// Primer is the text an assistant turn opened for generation starts with.
	Primer string
}

// DefaultOptions is the rStar2 setup: the rstar2 template, the Python tool, and <reason> as primer.
func DefaultOptions() Options {
	return Options{Tools: []json.RawMessage{PythonTool}, Primer: "<reason>"}
}

// Renderer turns conversations into token ids with a tokenizer and a template. It is safe for
// concurrent use.
type Renderer struct {
	tok       *tokenizer.Tokenizer
	tmpl      *Template
	tools     []json.RawMessage
	primer    string
	endOfTurn []int32
}

// NewRenderer checks the template against the tokenizer (by rendering a sample conversation).
func NewRenderer(tok *tokenizer.Tokenizer, opts Options) (*Renderer, error) {
	r := &Renderer{tok: tok, tmpl: opts.Template, tools: opts.Tools, primer: opts.Primer}
	if r.tmpl == nil {
		var err error
		if r.tmpl, err = LoadTemplate(DefaultTemplate); err != nil {
			return nil, err
		}
	}
	// The end of a turn is whatever the template writes after an assistant's empty text inside
	// gen_begin … gen_end (<|im_end|> for ChatML).
	pieces, err := r.pieces([]Message{{Role: RoleAssistant}}, false)
	if err != nil {
		return nil, err
	}
	var gen []tokenizer.Segment
	for _, p := range pieces {
		if p.generated {
			gen = append(gen, tokenizer.Segment{Text: p.text, Special: !p.plain})
		}
	}
	r.endOfTurn = tok.EncodeSegments(gen)
	if len(r.endOfTurn) == 0 {
		return nil, fmt.Errorf("chat template %s: an assistant turn has no gen_begin … gen_end with an end-of-turn marker", r.tmpl.Name)
	}
	return r, nil
}

// Template returns the renderer's template.
func (r *Renderer) Template() *Template { return r.tmpl }

// EndOfTurn is the ids that close an assistant turn (the stop tokens of generation). They count
// as the model's output.
func (r *Renderer) EndOfTurn() []int32 { return append([]int32(nil), r.endOfTurn...) }

func (r *Renderer) pieces(msgs []Message, addGenerationPrompt bool) ([]piece, error) {
	return r.tmpl.execute(TemplateData{Messages: msgs, Tools: r.tools, AddGenerationPrompt: addGenerationPrompt, Primer: r.primer})
}

// Text renders msgs as text (without markers), with an assistant header and primer at the end
// when addGenerationPrompt is set. It is the prompt for text-completion endpoints.
func (r *Renderer) Text(msgs []Message, addGenerationPrompt bool) (string, error) {
	pieces, err := r.pieces(msgs, addGenerationPrompt)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range pieces {
		b.WriteString(p.text)
	}
	return b.String(), nil
}

// Render returns the ids of a whole conversation and its loss mask: true on the tokens the
// assistant produced (its text, tool calls and closing <|im_end|>), false on the scaffolding,
// the headers and every other role's text. An assistant message of weight 0 is drawn the same
// (the ids do not depend on weights) with mask false.
//
// Each stretch of the model's own output is encoded on its own, as generation produced it; the
// text between such stretches is encoded as one piece, so it has the ids that encoding the whole
// rendered text would give.
func (r *Renderer) Render(msgs []Message) (ids []int32, mask []bool, err error) {
	pieces, err := r.pieces(msgs, false)
	if err != nil {
		return nil, nil, err
	}
	if err := r.weighTurns(pieces, msgs); err != nil {
		return nil, nil, err
	}
	ids, mask = r.encode(pieces)
	return ids, mask, nil
}

// weighTurns takes the model's output out of the loss where its assistant message has weight 0:
// the template draws one gen_begin … gen_end per assistant message, in order.
func (r *Renderer) weighTurns(pieces []piece, msgs []Message) error {
	var inLoss []bool // by assistant message
	for _, m := range msgs {
		if m.Role == RoleAssistant {
			inLoss = append(inLoss, m.InLoss())
		}
	}
	if !slices.Contains(inLoss, false) {
		return nil
	}
	turns := 0 // every piece carries the number of the last gen_begin before it
	if len(pieces) > 0 {
		turns = pieces[len(pieces)-1].turn + 1
	}
	if turns != len(inLoss) {
		return fmt.Errorf("chat template %s: %d gen_begin … gen_end for %d assistant messages; weights need one per assistant message", r.tmpl.Name, turns, len(inLoss))
	}
	for i := range pieces {
		pieces[i].noLoss = pieces[i].generated && !inLoss[pieces[i].turn]
	}
	return nil
}

// RenderPrompt returns the ids of msgs followed by an assistant header and the primer: the prompt
// to generate the next assistant turn from.
func (r *Renderer) RenderPrompt(msgs []Message) ([]int32, error) {
	pieces, err := r.pieces(msgs, true)
	if err != nil {
		return nil, err
	}
	ids, _ := r.encode(pieces)
	return ids, nil
}

// Continuation returns the ids to append after an assistant turn that the model closed (with
// EndOfTurn) in order to add msgs (typically one tool message with the tool's output) and open the
// next assistant turn with the primer. None of them is the model's output.
func (r *Renderer) Continuation(msgs []Message) ([]int32, error) {
	for _, m := range msgs {
		if m.Role == RoleAssistant {
			return nil, errors.New("continuation: assistant messages are generated, not appended")
		}
	}
	all := append([]Message{{Role: RoleAssistant}}, msgs...)
	pieces, err := r.pieces(all, true)
	if err != nil {
		return nil, err
	}
	// Keep what follows the (only) generated stretch, the placeholder assistant turn.
	last := -1
	for i, p := range pieces {
		if p.generated {
			last = i
		}
	}
	if last < 0 {
		return nil, fmt.Errorf("chat template %s: the assistant turn has no gen_begin … gen_end", r.tmpl.Name)
	}
	ids, _ := r.encode(pieces[last+1:])
	return ids, nil
}

// encode turns pieces into ids: each gen_begin … gen_end, and each run of other pieces, is
// encoded on its own. The mask is set on the generated pieces that are in the loss.
func (r *Renderer) encode(pieces []piece) (ids []int32, mask []bool) {
	for start := 0; start < len(pieces); {
		end := start
		var segs []tokenizer.Segment
		for end < len(pieces) && sameRun(pieces[start], pieces[end]) {
			segs = append(segs, tokenizer.Segment{Text: pieces[end].text, Special: !pieces[end].plain})
			end++
		}
		run := r.tok.EncodeSegments(segs)
		ids = append(ids, run...)
		for range run {
			mask = append(mask, pieces[start].generated && !pieces[start].noLoss)
		}
		start = end
	}
	return ids, mask
}

func sameRun(a, b piece) bool {
	return a.generated == b.generated && (!a.generated || a.turn == b.turn)
}

// Weights turns a loss mask into per-token weights (1 where the mask is set, else 0).
func Weights(mask []bool) []float32 {
	w := make([]float32, len(mask))
	for i, m := range mask {
		if m {
			w[i] = 1
		}
	}
	return w
}

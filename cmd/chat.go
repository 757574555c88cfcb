package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"gorstar/chat"
	"gorstar/engine"
	"gorstar/internal/tooloptions"
	"gorstar/internal/usererr"
	"gorstar/pytool"
	"gorstar/rollout"
)

func chatCommand() *cli.Command {
	return &cli.Command{
		Name: "chat",
		Usage: "talk to a model on stdin/stdout; its Python tool calls run in the sandbox " +
			"(/reset starts over, /exit or end of input quits)",
		Flags: withRenamed(append([]cli.Flag{
			&cli.StringFlag{Name: "model", Usage: "Hugging Face model `DIR` to load"},
			&cli.StringFlag{Name: "endpoint", Usage: "OpenAI-compatible server `URL` (e.g. http://127.0.0.1:8000) instead of --model"},
			&cli.StringFlag{Name: "served-model", Usage: "model id to ask the endpoint for (default: its first model)"},
			&cli.StringFlag{Name: "system", Usage: "system message (default: the template's instructions)"},
			&cli.IntFlag{Name: "max-turn-tokens", Value: 1024, Usage: "tokens per assistant turn at most (1..1048576)"},
			&cli.Float64Flag{Name: "temperature", Value: 0.6, Usage: "sampling temperature (0 = greedy, at most 10)"},
			&cli.IntFlag{Name: "max-turns", Value: 10, Usage: "assistant turns (tool calls) per question at most (1..1000)"},
			&cli.BoolFlag{Name: "no-tool", Usage: "do not offer the Python tool"},
			&cli.StringFlag{Name: "sandbox", Usage: "auto | bwrap | namespaces | seatbelt | none (overrides exec.sandbox)"},
		}, engineFlags()...), map[string][]string{
			"served-model": {"served-model-name"}, "max-turn-tokens": {"max-tokens"}, "no-tool": {"no-tools"}}),
		Action: chatAction,
	}
}

// chatBackend produces one assistant turn for a conversation, writing its text as it comes, and
// the call it makes (nil for none).
type chatBackend interface {
	turn(ctx context.Context, msgs []chat.Message, out io.Writer) (chat.Message, *chat.ParsedToolCall, error)
}

func chatAction(c *cli.Context) error {
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
	if err := checkChatFlags(c); err != nil {
		return err
	}
	var tools []json.RawMessage
	if !c.Bool("no-tool") {
		tools = []json.RawMessage{chat.PythonTool}
	}
	backend, closeBackend, err := openChatBackend(c, o, tools)
	if err != nil {
		return err
	}
	defer closeBackend()
	conv := &rollout.Conversation{System: c.String("system"), MaxTurns: c.Int("max-turns"), ToolTextChars: o.Config.Rollout.ToolTextChars}
	if tools != nil {
		cfg := o.Config.Exec
		if c.IsSet("sandbox") {
			cfg.Sandbox = c.String("sandbox")
		}
		if pool, err := startTools(c.Context, c, o, tooloptions.From(cfg), pytool.BesideEngine(c.String("model") != "")); err != nil {
			fmt.Fprintf(c.App.ErrWriter, "chat: the Python tool is unavailable (%v); tool calls are shown, not run\n", err)
		} else {
			defer pool.Close()
			conv.Tools = pool
		}
	}
	display := c.App.Writer
	if o.JSON {
		display = io.Discard // the conversations are printed as one JSON object at the end
	}
	if err := chatLoop(c.Context, backend, conv, c.App.Reader, display, !o.Quiet); err != nil {
		return err
	}
	if o.JSON {
		return printJSON(c, map[string]any{"conversations": conv.Conversations()})
	}
	return nil
}

func checkChatFlags(c *cli.Context) error {
	if c.IsSet("model") == c.IsSet("endpoint") {
		return usererr.New("chat: give exactly one of --model and --endpoint")
	}
	if err := firstErr(
		inRange("--max-turn-tokens", c.Int("max-turn-tokens"), 1, 1<<20),
		inRange("--max-turns", c.Int("max-turns"), 1, 1000),
	); err != nil {
		return err
	}
	if t := c.Float64("temperature"); t < 0 || t > 10 || t != t {
		return usererr.New("--temperature: must be in 0..10, got %g", t)
	}
	return nil
}

// openChatBackend loads --model or connects to --endpoint; close frees it.
func openChatBackend(c *cli.Context, o Options, tools []json.RawMessage) (chatBackend, func(), error) {
	if dir := c.String("model"); dir != "" {
		p, err := loadPolicy(c, o, dir, 0)
		if err != nil {
			return nil, nil, err
		}
		r, err := p.Renderer(tools)
		if err != nil {
			p.Close()
			return nil, nil, err
		}
		return &localChat{p: p, r: r, maxTokens: c.Int("max-turn-tokens"), temperature: c.Float64("temperature")}, p.Close, nil
	}
	ep, err := newEndpointChat(c.Context, c.String("endpoint"), c.String("served-model"))
	if err != nil {
		return nil, nil, err
	}
	ep.tools, ep.maxTokens, ep.temperature = tools, c.Int("max-turn-tokens"), c.Float64("temperature")
	return ep, ep.close, nil
}

// turnRefused is a turn the backend could not produce for this conversation (it fills the
// context, or the server refused the request): chat says so and goes on with the next question.
type turnRefused struct{ msg string }

func (t *turnRefused) Error() string { return t.msg }

// chatLoop reads user lines and asks them in conv, printing the turns (backend) and tool
// responses as they come; /reset starts a new conversation.
func chatLoop(ctx context.Context, b chatBackend, conv *rollout.Conversation, in io.Reader, out io.Writer, prompt bool) error {
	reply := func(ctx context.Context, msgs []chat.Message) (chat.Message, *chat.ParsedToolCall, error) {
		msg, call, err := b.turn(ctx, msgs, out)
		if err == nil {
			fmt.Fprintln(out)
		}
		return msg, call, err
	}
	lines := bufio.NewScanner(in)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	for {
		if prompt {
			fmt.Fprint(out, "> ")
		}
		if !lines.Scan() {
			return lines.Err()
		}
		switch line := strings.TrimSpace(lines.Text()); line {
		case "":
		case "/exit", "/quit":
			return nil
		case "/reset":
			conv.Reset()
			fmt.Fprintln(out, "(new conversation)")
		default:
			err := conv.Ask(ctx, line, reply, func(text string) { fmt.Fprintf(out, "[tool] %s\n", text) })
			var refused *turnRefused
			if errors.As(err, &refused) && ctx.Err() == nil {
				// The conversation no longer fits, or the endpoint refused it: say so and go on.
				fmt.Fprintf(out, "(%v)\n", err)
			} else if err != nil {
				return err
			}
		}
	}
}

// localChat generates with the in-process engine, printing tokens as they come.
type localChat struct {
	p           *engine.Policy
	r           *chat.Renderer
	maxTokens   int
	temperature float64
}

func (l *localChat) turn(ctx context.Context, msgs []chat.Message, out io.Writer) (chat.Message, *chat.ParsedToolCall, error) {
	prompt, err := l.r.RenderPrompt(msgs)
	if err != nil {
		return chat.Message{}, nil, &turnRefused{fmt.Sprintf("chat: %v", err)}
	}
	o := l.p.Engine.Options()
	maxTokens := min(l.maxTokens, min(o.MaxContext, o.KVTokens)-len(prompt))
	if maxTokens < 1 {
		return chat.Message{}, nil, &turnRefused{fmt.Sprintf("chat: the conversation (%d tokens) fills the context; /reset to start over", len(prompt))}
	}
	seq, err := l.p.Engine.Submit(ctx, engine.Request{Prompt: prompt, MaxTokens: maxTokens,
		Sampling: engine.Sampling{Temperature: l.temperature}, StopTokens: l.r.EndOfTurn()[:1]})
	if err != nil {
		return chat.Message{}, nil, err
	}
	fmt.Fprint(out, l.p.Primer)
	dec := l.p.Tokenizer.NewStreamDecoder(true)
	var text strings.Builder
	text.WriteString(l.p.Primer)
	for {
		ev, err := seq.Next(ctx)
		if err != nil {
			return chat.Message{}, nil, err
		}
		if ev.Kind == engine.EventToken {
			piece := dec.Add(ev.Token)
			text.WriteString(piece)
			fmt.Fprint(out, piece)
			continue
		}
		if ev.Kind == engine.EventDone {
			if ev.Err != nil {
				return chat.Message{}, nil, ev.Err
			}
			rest := dec.Flush()
			text.WriteString(rest)
			fmt.Fprint(out, rest)
			msg, call := rollout.AssistantText(text.String())
			return msg, call, nil
		}
	}
}

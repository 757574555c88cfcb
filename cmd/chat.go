package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"gorstar/chat"
	"gorstar/engine"
	"gorstar/internal/tooloptions"
	"gorstar/internal/usererr"
	"gorstar/pytool"
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

// chatBackend produces one assistant turn for a conversation, writing its text as it comes.
type chatBackend interface {
	turn(ctx context.Context, msgs []chat.Message, out io.Writer) (chat.Message, error)
}

func chatAction(c *cli.Context) error {
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
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
	var tools []json.RawMessage
	if !c.Bool("no-tool") {
		tools = []json.RawMessage{chat.PythonTool}
	}
	var backend chatBackend
	if dir := c.String("model"); dir != "" {
		p, err := loadPolicy(c, o, dir, 0)
		if err != nil {
			return err
		}
		defer p.Close()
		r, err := p.Renderer(tools)
		if err != nil {
			return err
		}
		backend = &localChat{p: p, r: r, maxTokens: c.Int("max-turn-tokens"), temperature: c.Float64("temperature")}
	} else {
		ep, err := newEndpointChat(c.Context, c.String("endpoint"), c.String("served-model"))
		if err != nil {
			return err
		}
		defer ep.close()
		ep.tools, ep.maxTokens, ep.temperature = tools, c.Int("max-turn-tokens"), c.Float64("temperature")
		backend = ep
	}
	var pool pytool.Tools
	if tools != nil {
		cfg := o.Config.Exec
		if c.IsSet("sandbox") {
			cfg.Sandbox = c.String("sandbox")
		}
		if pool, err = startTools(c.Context, c, o, tooloptions.From(cfg), pytool.BesideEngine(c.String("model") != "")); err != nil {
			fmt.Fprintf(c.App.ErrWriter, "chat: the Python tool is unavailable (%v); tool calls are shown, not run\n", err)
			pool = nil
		} else {
			defer pool.Close()
		}
	}
	display := c.App.Writer
	if o.JSON {
		display = io.Discard // the conversations are printed as one JSON object at the end
	}
	convs, err := chatLoop(c.Context, backend, pool, c.App.Reader, display, chatSettings{
		system: c.String("system"), maxTurns: c.Int("max-turns"), toolChars: o.Config.Rollout.ToolTextChars,
		prompt: !o.Quiet,
	})
	if err != nil {
		return err
	}
	if o.JSON {
		return printJSON(c, map[string]any{"conversations": convs})
	}
	return nil
}

// turnRefused is a turn the backend could not produce for this conversation (it fills the
// context, or the server refused the request): chat says so and goes on with the next question.
type turnRefused struct{ msg string }

func (t *turnRefused) Error() string { return t.msg }

type chatSettings struct {
	system    string
	maxTurns  int
	toolChars int
	prompt    bool // print "> " before reading
}

// chatLoop reads user lines, runs assistant turns and their tool calls, prints everything and
// returns the conversations held (one per /reset).
func chatLoop(ctx context.Context, b chatBackend, pool pytool.Runner, in io.Reader, out io.Writer, s chatSettings) ([][]chat.Message, error) {
	var msgs []chat.Message
	var done [][]chat.Message
	finish := func() [][]chat.Message {
		if len(msgs) > 0 && msgs[len(msgs)-1].Role != chat.RoleSystem {
			done = append(done, slices.Clone(msgs))
		}
		return done
	}
	reset := func() {
		finish()
		msgs = nil
		if s.system != "" {
			msgs = append(msgs, chat.Message{Role: chat.RoleSystem, Content: s.system})
		}
	}
	reset()
	lines := bufio.NewScanner(in)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	for {
		if s.prompt {
			fmt.Fprint(out, "> ")
		}
		if !lines.Scan() {
			return finish(), lines.Err()
		}
		line := strings.TrimSpace(lines.Text())
		switch line {
		case "":
			continue
		case "/exit", "/quit":
			return finish(), nil
		case "/reset":
			reset()
			fmt.Fprintln(out, "(new conversation)")
			continue
		}
		mark := len(msgs)
		msgs = append(msgs, chat.Message{Role: chat.RoleUser, Content: line})
		for turn := 0; turn < s.maxTurns; turn++ {
			msg, err := b.turn(ctx, msgs, out)
			var refused *turnRefused
			if errors.As(err, &refused) && ctx.Err() == nil {
				// The conversation no longer fits, or the endpoint refused it: say so and go on.
				fmt.Fprintf(out, "(%v)\n", err)
				msgs = msgs[:mark] // forget the failed exchange
				break
			}
			if err != nil {
				return finish(), err
			}
			fmt.Fprintln(out)
			msgs = append(msgs, msg)
			if len(msg.ToolCalls) == 0 || pool == nil || turn == s.maxTurns-1 {
				break
			}
			text := runToolCall(ctx, pool, msg.ToolCalls[0], s.toolChars)
			fmt.Fprintf(out, "[tool] %s\n", text)
			msgs = append(msgs, chat.Message{Role: chat.RoleTool, Content: text, Name: msg.ToolCalls[0].Name})
		}
	}
}

// runToolCall runs the Python tool's {"code", "input"} arguments and returns the text the model sees.
func runToolCall(ctx context.Context, pool pytool.Runner, call chat.ToolCall, maxChars int) string {
	var args struct {
		Code  string `json:"code"`
		Input string `json:"input"`
	}
	if err := json.Unmarshal(call.Arguments, &args); err != nil || args.Code == "" {
		return fmt.Sprintf("Error: the call to %s needs a \"code\" string argument", call.Name)
	}
	return pool.Run(ctx, pytool.Call{Code: args.Code, Stdin: args.Input}).ToolText(maxChars)
}

// toAssistant splits generated text into content and the first well-formed tool call.
func toAssistant(text string) chat.Message {
	msg := chat.Message{Role: chat.RoleAssistant, Content: text}
	if call, found := chat.ParseToolCall(text); found && call.Error == "" {
		msg.Content = strings.TrimRight(text[:call.Start], " \n")
		msg.ToolCalls = []chat.ToolCall{call.Call}
	}
	return msg
}

// localChat generates with the in-process engine, printing tokens as they come.
type localChat struct {
	p           *engine.Policy
	r           *chat.Renderer
	maxTokens   int
	temperature float64
}

func (l *localChat) turn(ctx context.Context, msgs []chat.Message, out io.Writer) (chat.Message, error) {
	prompt, err := l.r.RenderPrompt(msgs)
	if err != nil {
		return chat.Message{}, &turnRefused{fmt.Sprintf("chat: %v", err)}
	}
	o := l.p.Engine.Options()
	maxTokens := min(l.maxTokens, min(o.MaxContext, o.KVTokens)-len(prompt))
	if maxTokens < 1 {
		return chat.Message{}, &turnRefused{fmt.Sprintf("chat: the conversation (%d tokens) fills the context; /reset to start over", len(prompt))}
	}
	seq, err := l.p.Engine.Submit(ctx, engine.Request{Prompt: prompt, MaxTokens: maxTokens,
		Sampling: engine.Sampling{Temperature: l.temperature}, StopTokens: l.r.EndOfTurn()[:1]})
	if err != nil {
		return chat.Message{}, err
	}
	fmt.Fprint(out, l.p.Primer)
	dec := l.p.Tokenizer.NewStreamDecoder(true)
	var text strings.Builder
	text.WriteString(l.p.Primer)
	for {
		ev, err := seq.Next(ctx)
		if err != nil {
			return chat.Message{}, err
		}
		if ev.Kind == engine.EventToken {
			piece := dec.Add(ev.Token)
			text.WriteString(piece)
			fmt.Fprint(out, piece)
			continue
		}
		if ev.Kind == engine.EventDone {
			if ev.Err != nil {
				return chat.Message{}, ev.Err
			}
			rest := dec.Flush()
			text.WriteString(rest)
			fmt.Fprint(out, rest)
			return toAssistant(text.String()), nil
		}
	}
}

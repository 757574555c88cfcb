package rollout

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorstar/chat"
	"gorstar/data"
	"gorstar/openai"
	"gorstar/pytool"
	"gorstar/reward"
)

// TextLoop runs rollouts in text mode, for servers whose tokenizer is not at hand: each turn is a
// chat completion of the conversation so far with the tool's schema, rendered by the server's
// own chat template, its tool calls read by the server's own parser. Trajectories have no token
// ids or logprobs (their token counts are the server's usage), so they can be graded and
// evaluated but not trained on: rollout and RL need token mode (Loop).
type TextLoop struct {
	client   *openai.Client
	tools    pytool.Runner
	opts     Options
	id       string
	sessions atomic.Uint64
}

// NewText checks the options; o.Chat.Tools are the schemas sent with every request.
func NewText(c *openai.Client, tools pytool.Runner, o Options) (*TextLoop, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	return &TextLoop{client: c, tools: tools, opts: o, id: hex.EncodeToString(id[:])}, nil
}

// Run rolls out Options.Samples trajectories per problem, Options.Concurrency at once, and
// returns them in order with their summary, as Loop.Run does.
func (l *TextLoop) Run(ctx context.Context, problems []data.Problem) ([]Trajectory, Summary, error) {
	start := time.Now()
	type job struct{ problem, sample int }
	var jobs []job
	for i := range problems {
		for j := 0; j < l.opts.Samples; j++ {
			if l.opts.Pending == nil || l.opts.Pending(i, j) {
				jobs = append(jobs, job{i, j})
			}
		}
	}
	out := make([]Trajectory, len(jobs))
	slots := make(chan struct{}, l.opts.Concurrency)
	var wg sync.WaitGroup
	for k, jb := range jobs {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return nil, Summary{}, ctx.Err()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			out[k] = l.trajectory(ctx, problems[jb.problem], jb.problem, jb.sample)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, Summary{}, err
	}
	return out, Summarize(out, time.Since(start)), nil
}

// textRun is one text-mode trajectory in progress.
type textRun struct {
	l       *TextLoop
	t       *Trajectory
	msgs    []openai.ChatMessage
	text    strings.Builder
	prompt  int // the first request's prompt tokens (usage): the growth past it is the response's
	used    int // response tokens so far, by the server's usage
	session string
}

func (l *TextLoop) trajectory(ctx context.Context, p data.Problem, problem, sample int) Trajectory {
	start := time.Now()
	r := &textRun{l: l, t: &Trajectory{ProblemID: p.ID, ProblemIndex: problem, Sample: sample,
		Seed: SampleSeed(l.opts.Seed, problem, sample)},
		msgs: []openai.ChatMessage{{Role: chat.RoleUser, Content: p.Problem}}, prompt: -1}
	reason, err := r.loop(ctx)
	if r.session != "" {
		if c, ok := l.tools.(pytool.SessionCloser); ok {
			c.CloseSession(r.session)
		}
	}
	t := r.t
	t.Text, t.NumTurns, t.Finish = r.text.String(), len(t.Turns), reason
	t.UsageTokens = r.used
	t.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		t.Error, t.Finish = err.Error(), FinishError
	} else {
		opts := l.opts.Reward
		opts.Truncated = reason == FinishTruncated
		g := reward.Grade(t.Text, p.Answer, opts)
		t.Correct, t.Extracted = g.Correct, g.Extracted
		if g.Correct {
			t.Reward = 1
		}
	}
	if l.opts.OnFinish != nil {
		l.opts.OnFinish(*t)
	}
	return *t
}

// loop runs turns until the trajectory ends and says why.
func (r *textRun) loop(ctx context.Context) (FinishReason, error) {
	o := r.l.opts
	for turn := 0; ; turn++ {
		left := o.MaxResponseTokens - r.used
		if left < 1 {
			return FinishTruncated, nil
		}
		seed := r.t.Seed
		if turn > 0 {
			seed = mix(seed ^ mix(uint64(turn)))
		}
		req := openai.ChatRequest{Session: fmt.Sprintf("text-%s-%d-%d", r.l.id, r.t.ProblemIndex, r.t.Sample),
			Messages: r.msgs, Tools: o.Chat.Tools, MaxTokens: left, Temperature: o.Temperature, TopP: o.TopP,
			Seed: &seed, Continue: &openai.Continuation{Seed: r.t.Seed, Skip: r.t.GeneratedTokens},
			// A turn ends at its call, as in token mode: the model does not go on to imagine the
			// tool's answer.
			Stop: []string{chat.ToolCallClose}}
		if o.Temperature == 0 {
			req.Continue = nil
		}
		c, err := r.l.client.Chat(ctx, req)
		if err != nil {
			return FinishError, err
		}
		if r.prompt < 0 {
			r.prompt = c.Usage.PromptTokens
		}
		r.used = c.Usage.PromptTokens - r.prompt + c.Usage.CompletionTokens
		r.t.GeneratedTokens += c.Usage.CompletionTokens
		msg := c.Message
		if c.FinishReason != "length" && strings.LastIndex(msg.Content, chat.ToolCallOpen) > strings.LastIndex(msg.Content, chat.ToolCallClose) {
			msg.Content += chat.ToolCallClose // the server cut the stop string from a call it did not parse
		}
		turnText := msg.Content
		parsed, found := chat.ParseToolCall(msg.Content)
		if len(msg.ToolCalls) > 0 {
			parsed, found = ServerToolCall(msg.ToolCalls[0]), true
			turnText += callText(msg.ToolCalls[0])
		}
		r.text.WriteString(turnText)
		r.t.AnswerTags += strings.Count(turnText, "<answer>")
		r.t.Turns = append(r.t.Turns, TurnRecord{Tokens: c.Usage.CompletionTokens})
		rec := &r.t.Turns[len(r.t.Turns)-1]
		switch {
		case c.FinishReason == "length" || r.used >= o.MaxResponseTokens:
			return FinishTruncated, nil
		case !found && strings.Contains(turnText, "<answer>"):
			return FinishAnswer, nil
		case !found:
			return FinishNoCall, nil
		case len(r.t.Turns) == o.MaxTurns:
			rec.Status = StatusNotRun
			rec.Code, rec.Input = callArgs(parsed)
			return FinishMaxTurns, nil
		}
		r.runTool(ctx, parsed, rec)
		reply := openai.ChatMessage{Role: chat.RoleTool, Name: pythonTool, Content: rec.ToolText}
		assistant := openai.ChatMessage{Role: "assistant", Content: msg.Content}
		if len(msg.ToolCalls) > 0 {
			assistant.ToolCalls = msg.ToolCalls[:1]
			reply.ToolCallID = msg.ToolCalls[0].ID
		}
		r.msgs = append(r.msgs, assistant, reply)
		r.text.WriteString("\n<tool_response>\n" + rec.ToolText + "\n</tool_response>\n")
	}
}

// callText writes a server-parsed call back in the ChatML layout, so the trajectory's text
// reads as a token-mode one does (and the grader skips the call as it does there).
func callText(tc openai.ToolCall) string {
	body, _ := json.Marshal(map[string]any{"name": tc.Function.Name, "arguments": json.RawMessage(tc.Function.Arguments)})
	if !json.Valid([]byte(tc.Function.Arguments)) {
		body, _ = json.Marshal(map[string]any{"name": tc.Function.Name, "arguments": tc.Function.Arguments})
	}
	return "\n" + chat.ToolCallOpen + "\n" + string(body) + "\n" + chat.ToolCallClose
}

// runTool runs a turn's call (or takes its refusal) and records the outcome, as Loop does.
func (r *textRun) runTool(ctx context.Context, parsed chat.ParsedToolCall, rec *TurnRecord) {
	call, refusal := toolCall(parsed)
	rec.Code, rec.Input = call.Code, call.Stdin
	r.t.ToolCalls++
	if refusal != "" {
		rec.Status, rec.ParseError, rec.ToolText = StatusParseError, refusal, refusal
		r.t.FailedToolCalls++
		return
	}
	o := r.l.opts
	if o.ToolTimeoutS > 0 {
		call.TimeoutS = o.ToolTimeoutS
	}
	if o.ToolSessions {
		if r.session == "" {
			r.session = fmt.Sprintf("rollout-%s-%d", r.l.id, r.l.sessions.Add(1))
		}
		call.Session = r.session
	}
	t0 := time.Now()
	res := r.l.tools.Run(ctx, call)
	rec.DurationMS = float64(time.Since(t0).Microseconds()) / 1000
	rec.Status = string(res.Status)
	rec.ToolText = res.ToolText(o.ToolTextChars)
	switch {
	case res.Status == pytool.StatusInternal:
		r.t.InternalToolErrors++
	case failedByModel(res.Status):
		r.t.FailedToolCalls++
	}
}

package rollout

import (
	"context"
	"strings"
	"time"

	"gorstar/chat"
	"gorstar/data"
	"gorstar/pytool"
	"gorstar/reward"
)

// run is one trajectory in progress: a small state machine the schedules drive turn by turn
// (turn, then runTool and resume while a call is pending, until done).
type run struct {
	l         *Loop
	t         *Trajectory
	reference string
	stream    Stream
	used      int // response tokens so far: generated and appended
	done      bool
	started   time.Time
	pausedAt  time.Time
	pending   *pendingCall
	session   string // the trajectory's tool session while it is open (Options.ToolSessions)
}

// pendingCall is the call of the turn that just ended, waiting for the sandbox and the append.
type pendingCall struct {
	call    pytool.Call
	refusal string  // set: send this text back instead of running anything
	end     TurnEnd // EndPaused: the model left its turn open, so the end of turn is appended
	record  *TurnRecord
}

func (l *Loop) newRun(problem, sample int, p data.Problem, prompt []int32) *run {
	return &run{l: l, reference: p.Answer, t: &Trajectory{
		ProblemID: p.ID, ProblemIndex: problem, Sample: sample,
		Seed: SampleSeed(l.opts.Seed, problem, sample), PromptIDs: prompt,
	}}
}

// request is the backend request of the trajectory.
func (r *run) request() Request {
	o := r.l.opts
	req := Request{
		Prompt: r.t.PromptIDs, MaxResponseTokens: o.MaxResponseTokens,
		Sampling:     Sampling{Temperature: o.Temperature, TopP: o.TopP, Seed: r.t.Seed},
		EndTokens:    r.l.endOfTurn[:1],
		PauseStrings: []string{chat.ToolCallClose},
	}
	if s := r.l.script; s != nil {
		req.EndTokens, req.PauseStrings = nil, nil
		req.PauseAfter = s.turnTokens(r.t.ProblemIndex, r.t.Sample)
	}
	return req
}

// runAll drives the trajectory to its end on its own (the overlapped schedule); g counts it as
// decoding except while its tool call runs and its result is appended.
func (r *run) runAll(ctx context.Context, g *gate) error {
	for !r.done {
		if err := r.turn(ctx); err != nil || r.done {
			return err
		}
		g.add(-1)
		r.runTool(ctx)
		err := r.resume(ctx)
		g.add(1)
		if err != nil {
			return err
		}
	}
	return nil
}

// turn generates one assistant turn and decides: a pending call, or the end of the trajectory.
// Only the context ending is an error; a backend failure ends the trajectory (FinishError).
func (r *run) turn(ctx context.Context) error {
	turn, err := r.stream.Next(ctx)
	r.pausedAt = time.Now()
	if len(r.t.Turns) == 0 {
		r.t.WeightVersion = turn.WeightVersion
	}
	r.addGenerated(turn)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.fail(err)
		return nil
	}
	text := r.l.tok.Decode(turn.Tokens)
	r.t.AnswerTags += strings.Count(text, "<answer>")
	r.t.Turns = append(r.t.Turns, TurnRecord{Tokens: len(turn.Tokens)})
	rec := &r.t.Turns[len(r.t.Turns)-1]
	if turn.End == EndLength {
		r.finish(FinishTruncated)
		return nil
	}
	parsed, found := r.parse(text)
	switch {
	case !found && strings.Contains(text, "<answer>"):
		r.finish(FinishAnswer)
	case !found:
		r.finish(FinishNoCall)
	case len(r.t.Turns) == r.l.opts.MaxTurns:
		rec.Status = StatusNotRun
		rec.Code, rec.Input = callArgs(parsed)
		r.finish(FinishMaxTurns)
	default:
		call, refusal := toolCall(parsed)
		if r.l.opts.ToolTimeoutS > 0 {
			call.TimeoutS = r.l.opts.ToolTimeoutS
		}
		r.pending = &pendingCall{call: call, refusal: refusal, end: turn.End, record: rec}
	}
	return nil
}

// parse finds the turn's tool call (Bench scripts it).
func (r *run) parse(text string) (chat.ParsedToolCall, bool) {
	if s := r.l.script; s != nil {
		return s.toolCall(r.t.ProblemIndex, r.t.Sample, len(r.t.Turns)-1)
	}
	return chat.ParseToolCall(text)
}

// callArgs are a call's code and input for the record, as far as they can be read.
func callArgs(p chat.ParsedToolCall) (code, input string) {
	call, _ := toolCall(p)
	return call.Code, call.Stdin
}

func (r *run) addGenerated(turn Turn) {
	t := r.t
	t.ResponseIDs = append(t.ResponseIDs, turn.Tokens...)
	t.LogProbs = append(t.LogProbs, turn.LogProbs...)
	for range turn.Tokens {
		t.LossMask = append(t.LossMask, true)
	}
	// A backend without log-probabilities leaves zeros, so the slices stay aligned.
	for len(t.LogProbs) < len(t.ResponseIDs) {
		t.LogProbs = append(t.LogProbs, 0)
	}
	t.GeneratedTokens += len(turn.Tokens)
	r.used += len(turn.Tokens)
}

// runTool runs the pending call in the sandbox (or takes its refusal) and records the outcome.
func (r *run) runTool(ctx context.Context) {
	p := r.pending
	rec := p.record
	rec.Code, rec.Input = p.call.Code, p.call.Stdin
	r.t.ToolCalls++
	if p.refusal != "" {
		rec.Status, rec.ParseError, rec.ToolText = StatusParseError, p.refusal, p.refusal
		r.t.FailedToolCalls++
		return
	}
	if r.l.opts.ToolSessions {
		if r.session == "" {
			r.session = r.l.newSession()
		}
		p.call.Session = r.session
	}
	t0 := time.Now()
	res := r.l.tools.Run(ctx, p.call)
	rec.DurationMS = float64(time.Since(t0).Microseconds()) / 1000
	rec.Status = string(res.Status)
	rec.ToolText = res.ToolText(r.l.opts.ToolTextChars)
	switch {
	case res.Status == pytool.StatusInternal:
		r.t.InternalToolErrors++
	case failedByModel(res.Status):
		r.t.FailedToolCalls++
	}
}

// resume appends the tool turn and the next generation prompt and lets the sequence go on, unless
// they would spend the response budget (truncated).
func (r *run) resume(ctx context.Context) error {
	p := r.pending
	r.pending = nil
	var ids []int32
	if p.end == EndPaused {
		ids = append(ids, r.l.endOfTurn...)
	}
	more, err := r.l.render.Continuation([]chat.Message{{Role: chat.RoleTool, Name: pythonTool, Content: p.record.ToolText}})
	if err != nil {
		r.fail(err)
		return nil
	}
	ids = append(ids, more...)
	// At least one token must be left to generate after the append.
	if r.used+len(ids) >= r.l.opts.MaxResponseTokens {
		r.finish(FinishTruncated)
		return nil
	}
	if err := r.stream.Append(ctx, ids); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.fail(err)
		return nil
	}
	r.t.ResponseIDs = append(r.t.ResponseIDs, ids...)
	for range ids {
		r.t.LossMask = append(r.t.LossMask, false)
		r.t.LogProbs = append(r.t.LogProbs, 0)
	}
	r.used += len(ids)
	r.t.ToolWaitMS += float64(time.Since(r.pausedAt).Microseconds()) / 1000
	return nil
}

// closeSession ends the trajectory's tool session, if it opened one.
func (r *run) closeSession() {
	if r.session == "" {
		return
	}
	if c, ok := r.l.tools.(pytool.SessionCloser); ok {
		c.CloseSession(r.session)
	}
	r.session = ""
}

func (r *run) fail(err error) {
	r.t.Error = err.Error()
	r.finish(FinishError)
}

// finish ends the trajectory: frees the sequence, decodes the response and grades it.
func (r *run) finish(reason FinishReason) {
	if r.stream != nil {
		r.stream.Close()
	}
	r.closeSession()
	r.done = true
	t := r.t
	t.Finish = reason
	t.NumTurns = len(t.Turns)
	t.Text = r.l.tok.Decode(t.ResponseIDs)
	if !r.started.IsZero() {
		t.DurationMS = float64(time.Since(r.started).Microseconds()) / 1000
	}
	if reason != FinishError {
		opts := r.l.opts.Reward
		opts.Truncated = reason == FinishTruncated
		g := reward.Grade(t.Text, r.reference, opts)
		t.Correct, t.Extracted = g.Correct, g.Extracted
		if g.Correct {
			t.Reward = 1
		}
	}
	if r.l.opts.OnFinish != nil {
		r.l.opts.OnFinish(*t)
	}
}

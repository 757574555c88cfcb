package serve

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"gorstar/engine"
)

// sseWriter writes server-sent events ("data: JSON\n\n") from several goroutines.
type sseWriter struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	flusher http.Flusher
}

func newSSE(w http.ResponseWriter) *sseWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sseWriter{w: w, flusher: f}
}

func (s *sseWriter) send(v any) {
	data, _ := json.Marshal(v)
	s.raw(data)
}

func (s *sseWriter) raw(data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = s.w.Write([]byte("data: "))
	_, _ = s.w.Write(data)
	_, _ = s.w.Write([]byte("\n\n"))
	if s.flusher != nil {
		s.flusher.Flush()
	}
}

// textStream turns one sequence's events into text deltas. It holds back what could still turn
// out to be the start of a stop string (cut from the answer) and everything from holdFrom on
// (a tool call, sent whole at the end), so streamed text is always a prefix of the final answer.
type textStream struct {
	full     strings.Builder
	sent     int
	holdBack int
	holdFrom string
	tokens   []int32
	logprobs []float32
	top      [][]engine.TokenLogProb
}

// delta adds a token's text and returns what can be sent now.
func (t *textStream) delta(piece string) string {
	t.full.WriteString(piece)
	all := t.full.String()
	limit := len(all) - t.holdBack
	if t.holdFrom != "" {
		if i := strings.Index(all, t.holdFrom); i >= 0 {
			limit = min(limit, i)
		}
	}
	for limit > t.sent && limit < len(all) && !utf8.RuneStart(all[limit]) {
		limit--
	}
	if limit <= t.sent {
		return ""
	}
	out := all[t.sent:limit]
	t.sent = limit
	return out
}

// rest returns the part of the final text not yet sent.
func (t *textStream) rest(final string) string {
	if t.sent <= len(final) && final[:t.sent] == t.full.String()[:t.sent] {
		return final[t.sent:]
	}
	return ""
}

// streamSequences runs n sequences and calls onToken/onDone from one goroutine per sequence.
func (s *Server) streamSequences(r *http.Request, req engine.Request, n int, holdFrom string, sse *sseWriter,
	onDelta func(i int, delta string, ts *textStream), onDone func(i int, c choice, ts *textStream)) {
	holdBack := 0
	for _, st := range req.StopStrings {
		holdBack = max(holdBack, len(st)-1)
	}
	ctx := r.Context()
	var wg sync.WaitGroup
	seqs, err := s.eng.SubmitAll(ctx, samples(req, n))
	if err != nil {
		sseError(sse, err)
		return
	}
	for i, seq := range seqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ts := &textStream{holdBack: holdBack, holdFrom: holdFrom}
			dec := s.tok.NewStreamDecoder(true)
			for {
				ev, err := seq.Next(ctx)
				if err != nil {
					return // the client left: the context cancelled the sequence
				}
				switch ev.Kind {
				case engine.EventToken:
					ts.tokens = append(ts.tokens, ev.Token)
					ts.logprobs = append(ts.logprobs, ev.LogProb)
					if ev.Top != nil {
						ts.top = append(ts.top, ev.Top)
					}
					if d := ts.delta(dec.Add(ev.Token)); d != "" {
						onDelta(i, d, ts)
					}
				case engine.EventDone:
					if ev.Err != nil {
						sseError(sse, ev.Err)
						return
					}
					if ev.Finish == engine.FinishCancelled {
						return
					}
					ts.delta(dec.Flush())
					onDone(i, choice{tokens: ts.tokens, logprobs: ts.logprobs, top: ts.top, finish: ev.Finish, stop: ev.Stop}, ts)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func sseError(sse *sseWriter, err error) {
	sse.send(map[string]any{"error": map[string]any{"message": err.Error(), "type": "server_error"}})
}

// usageChunk ends a stream whose request set stream_options.include_usage: no choices, the usage.
func (s *Server) usageChunk(sse *sseWriter, id, object string, created int64, prompt int, completion *atomic.Int64) {
	sse.send(map[string]any{"id": id, "object": object, "created": created, "model": s.opts.ModelName,
		"choices": []any{}, "usage": usage(prompt, int(completion.Load()))})
}

func (s *Server) streamCompletion(w http.ResponseWriter, r *http.Request, req engine.Request, n int, cr *completionRequest) error {
	id, created := newID("cmpl-"), time.Now().Unix()
	sse := newSSE(w)
	withUsage := cr.includeUsage()
	chunk := func(i int, text string, lp any, finish any, extra map[string]any) {
		ch := map[string]any{"index": i, "text": text, "logprobs": lp, "finish_reason": finish}
		for k, v := range extra {
			ch[k] = v
		}
		c := map[string]any{"id": id, "object": "text_completion", "created": created, "model": s.opts.ModelName,
			"choices": []any{ch}}
		if withUsage {
			c["usage"] = nil
		}
		sse.send(c)
	}
	var generated atomic.Int64
	s.streamSequences(r, req, n, "", sse,
		func(i int, d string, ts *textStream) { chunk(i, d, nil, nil, nil) },
		func(i int, c choice, ts *textStream) {
			generated.Add(int64(len(c.tokens)))
			var lp any
			if cr.Logprobs != nil {
				lp = s.completionLogprobs(c, cr.ReturnTokensAsTokenIDs)
			}
			extra := map[string]any{"stop_reason": stopReason(c, cr.StopTokenIDs)}
			if cr.ReturnTokenIDs {
				// The whole sequence's ids come with its last chunk: the text chunks before it
				// hold back partial characters and stop strings, so they are not cut at tokens.
				extra["token_ids"], extra["prompt_token_ids"] = c.tokens, req.Prompt
			}
			chunk(i, ts.rest(s.text(c, req.StopTokens, cr.keepStop())), lp, finishReason(c.finish), extra)
		})
	if withUsage {
		s.usageChunk(sse, id, "text_completion", created, len(req.Prompt), &generated)
	}
	sse.raw([]byte("[DONE]"))
	return nil
}

func (s *Server) streamChat(w http.ResponseWriter, r *http.Request, req engine.Request, n int, cr *chatRequest) error {
	id, created := newID("chatcmpl-"), time.Now().Unix()
	sse := newSSE(w)
	withUsage := cr.includeUsage()
	chunk := func(i int, delta map[string]any, lp any, finish any, stop any) {
		ch := map[string]any{"index": i, "delta": delta, "logprobs": lp, "finish_reason": finish}
		if finish != nil {
			ch["stop_reason"] = stop
		}
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": s.opts.ModelName,
			"choices": []any{ch}}
		if withUsage {
			c["usage"] = nil
		}
		sse.send(c)
	}
	for i := range n {
		chunk(i, map[string]any{"role": "assistant", "content": s.opts.Primer}, nil, nil, nil)
	}
	var generated atomic.Int64
	s.streamSequences(r, req, n, "<tool_call>", sse,
		func(i int, d string, ts *textStream) { chunk(i, map[string]any{"content": d}, nil, nil, nil) },
		func(i int, c choice, ts *textStream) {
			generated.Add(int64(len(c.tokens)))
			text := s.text(c, req.StopTokens, cr.keepStop())
			msg, finish := s.assistantMessage(s.opts.Primer+text, finishReason(c.finish))
			delta := map[string]any{}
			if calls, ok := msg["tool_calls"]; ok {
				delta["tool_calls"] = withIndex(calls.([]any))
				if content, _ := msg["content"].(string); len(content) > len(s.opts.Primer)+ts.sent {
					delta["content"] = content[len(s.opts.Primer)+ts.sent:]
				}
			} else if rest := ts.rest(text); rest != "" {
				delta["content"] = rest
			}
			var lp any
			if cr.Logprobs {
				lp = s.chatLogprobs(c)
			}
			chunk(i, delta, lp, finish, stopReason(c, cr.StopTokenIDs))
		})
	if withUsage {
		s.usageChunk(sse, id, "chat.completion.chunk", created, len(req.Prompt), &generated)
	}
	sse.raw([]byte("[DONE]"))
	return nil
}

// withIndex adds the "index" field stream deltas of tool calls carry.
func withIndex(calls []any) []any {
	for i, c := range calls {
		c.(map[string]any)["index"] = i
	}
	return calls
}

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
	"gorstar/openai"
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
	sse.send(openai.ErrorResponse{Error: openai.ErrorBody{Message: err.Error(), Type: "server_error"}})
}

// usageChunk ends a stream whose request set stream_options.include_usage: no choices, the usage.
func usageChunk(prompt int, completion *atomic.Int64) *openai.Usage {
	return usage(prompt, int(completion.Load()))
}

func (s *Server) streamCompletion(w http.ResponseWriter, r *http.Request, req engine.Request, n int, cr *openai.CompletionRequest) error {
	id, created := newID("cmpl-"), time.Now().Unix()
	sse := newSSE(w)
	chunk := func(ch openai.CompletionChoice) {
		sse.send(openai.CompletionResponse{ID: id, Object: "text_completion", Created: created, Model: s.opts.ModelName,
			Choices: []openai.CompletionChoice{ch}})
	}
	var generated atomic.Int64
	s.streamSequences(r, req, n, "", sse,
		func(i int, d string, ts *textStream) { chunk(openai.CompletionChoice{Index: i, Text: d}) },
		func(i int, c choice, ts *textStream) {
			generated.Add(int64(len(c.tokens)))
			ch := openai.CompletionChoice{Index: i, Text: ts.rest(s.text(c, req.StopTokens, keepStop(&cr.SamplingParams))),
				FinishReason: ptr(finishReason(c.finish)), StopReason: stopReason(c, cr.StopTokenIDs)}
			if cr.Logprobs != nil {
				ch.Logprobs = s.completionLogprobs(c, cr.ReturnTokensAsTokenIDs)
			}
			if cr.ReturnTokenIDs {
				// The whole sequence's ids come with its last chunk: the text chunks before it
				// hold back partial characters and stop strings, so they are not cut at tokens.
				ch.TokenIDs, ch.PromptTokenIDs = nonNil(c.tokens), req.Prompt
			}
			chunk(ch)
		})
	if includeUsage(&cr.SamplingParams) {
		sse.send(openai.CompletionResponse{ID: id, Object: "text_completion", Created: created, Model: s.opts.ModelName,
			Choices: []openai.CompletionChoice{}, Usage: usageChunk(len(req.Prompt), &generated)})
	}
	sse.raw([]byte("[DONE]"))
	return nil
}

func (s *Server) streamChat(w http.ResponseWriter, r *http.Request, req engine.Request, n int, cr *chatRequest) error {
	id, created := newID("chatcmpl-"), time.Now().Unix()
	sse := newSSE(w)
	chunk := func(ch openai.ChatChoice) {
		sse.send(openai.ChatCompletionResponse{ID: id, Object: "chat.completion.chunk", Created: created, Model: s.opts.ModelName,
			Choices: []openai.ChatChoice{ch}})
	}
	for i := range n {
		chunk(openai.ChatChoice{Index: i, Delta: &openai.ChatDelta{Role: "assistant", Content: ptr(s.opts.Primer)}})
	}
	var generated atomic.Int64
	s.streamSequences(r, req, n, "<tool_call>", sse,
		func(i int, d string, ts *textStream) {
			chunk(openai.ChatChoice{Index: i, Delta: &openai.ChatDelta{Content: ptr(d)}})
		},
		func(i int, c choice, ts *textStream) {
			generated.Add(int64(len(c.tokens)))
			text := s.text(c, req.StopTokens, keepStop(&cr.SamplingParams))
			msg, finish := s.assistantMessage(s.opts.Primer+text, finishReason(c.finish))
			delta := &openai.ChatDelta{}
			if len(msg.ToolCalls) > 0 {
				delta.ToolCalls = withIndex(msg.ToolCalls)
				if len(msg.Content) > len(s.opts.Primer)+ts.sent {
					delta.Content = ptr(msg.Content[len(s.opts.Primer)+ts.sent:])
				}
			} else if rest := ts.rest(text); rest != "" {
				delta.Content = ptr(rest)
			}
			ch := openai.ChatChoice{Index: i, Delta: delta, FinishReason: &finish, StopReason: stopReason(c, cr.StopTokenIDs)}
			if cr.Logprobs {
				ch.Logprobs = s.chatLogprobs(c)
			}
			chunk(ch)
		})
	if includeUsage(&cr.SamplingParams) {
		sse.send(openai.ChatCompletionResponse{ID: id, Object: "chat.completion.chunk", Created: created, Model: s.opts.ModelName,
			Choices: []openai.ChatChoice{}, Usage: usageChunk(len(req.Prompt), &generated)})
	}
	sse.raw([]byte("[DONE]"))
	return nil
}

// withIndex numbers the tool calls of a stream delta.
func withIndex(calls []openai.ToolCall) []openai.ToolCall {
	for i := range calls {
		calls[i].Index = ptr(i)
	}
	return calls
}

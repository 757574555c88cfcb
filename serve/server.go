package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"gorstar/chat"
	"gorstar/engine"
	"gorstar/internal/plainjson"
	"gorstar/openai"
	"gorstar/tokenizer"
)

// Options configure a Server.
type Options struct {
	// ModelName is the id /v1/models lists and requests must name (an empty "model" is accepted).
	ModelName string
	// Template renders chat messages (nil: chat's default, rstar2); Primer opens the assistant turn.
	Template *chat.Template
	Primer   string
	// MaxBodyBytes bounds a request body (default 16 MiB).
	MaxBodyBytes int64
}

// Server answers the OpenAI-compatible endpoints from an engine.
type Server struct {
	eng     *engine.Engine
	tok     *tokenizer.Tokenizer
	opts    Options
	created int64
	eos     []int32 // tokens that end a completion (<|endoftext|>, <|im_end|> when present)
	weights weightState
}

// New returns a server for eng, whose model uses tok.
func New(eng *engine.Engine, tok *tokenizer.Tokenizer, opts Options) (*Server, error) {
	if opts.ModelName == "" {
		return nil, errors.New("serve: the model needs a name")
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 16 << 20
	}
	if opts.Template == nil {
		t, err := chat.LoadTemplate(chat.DefaultTemplate)
		if err != nil {
			return nil, err
		}
		opts.Template = t
	}
	s := &Server{eng: eng, tok: tok, opts: opts, created: time.Now().Unix()}
	for _, name := range []string{"<|endoftext|>", "<|im_end|>"} {
		if id, ok := tok.TokenToID(name); ok {
			s.eos = append(s.eos, id)
		}
	}
	return s, nil
}

// Handler routes the API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/models", s.onlyMethod(http.MethodGet, s.models))
	mux.HandleFunc("/v1/completions", s.onlyMethod(http.MethodPost, s.completions))
	mux.HandleFunc("/v1/chat/completions", s.onlyMethod(http.MethodPost, s.chatCompletions))
	health := func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }
	mux.HandleFunc("/health", health)
	mux.HandleFunc("/healthz", health)
	mux.HandleFunc("/metrics", s.onlyMethod(http.MethodGet, s.metrics))
	mux.HandleFunc("/update_weights_from_disk", s.onlyMethod(http.MethodPost, s.updateWeightsFromDisk))
	mux.HandleFunc("/get_weight_version", s.onlyMethod(http.MethodGet, func(w http.ResponseWriter, r *http.Request) error {
		plainjson.WriteHTTP(w, http.StatusOK, openai.WeightVersionResponse{WeightVersion: s.weightVersion()})
		return nil
	}))
	mux.HandleFunc("/stats", s.onlyMethod(http.MethodGet, func(w http.ResponseWriter, r *http.Request) error {
		plainjson.WriteHTTP(w, http.StatusOK, s.eng.Stats())
		return nil
	}))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{status: http.StatusNotFound, typ: "invalid_request_error",
			message: fmt.Sprintf("no route %s %s (try /v1/completions, /v1/chat/completions, /v1/models)", r.Method, r.URL.Path)})
	})
	return mux
}

func (s *Server) onlyMethod(method string, h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method {
			w.Header().Set("Allow", method)
			writeError(w, &apiError{status: http.StatusMethodNotAllowed, typ: "invalid_request_error",
				message: fmt.Sprintf("%s takes %s, not %s", r.URL.Path, method, r.Method)})
			return
		}
		if err := h(w, r); err != nil {
			if r.Context().Err() != nil {
				return // the client left; nobody reads an answer
			}
			writeError(w, err)
		}
	}
}

// readBody reads a JSON body within the size limit.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, &apiError{status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error",
				message: fmt.Sprintf("request body over %d bytes", s.opts.MaxBodyBytes)}
		}
		return nil, badRequest("", "read request body: %v", err)
	}
	return body, nil
}

func (s *Server) checkModel(name string) error {
	if name != "" && name != s.opts.ModelName {
		return &apiError{status: http.StatusNotFound, typ: "invalid_request_error", param: "model", code: "model_not_found",
			message: fmt.Sprintf("the model %q does not exist; this server serves %q", name, s.opts.ModelName)}
	}
	return nil
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) error {
	o := s.eng.Options()
	plainjson.WriteHTTP(w, http.StatusOK, openai.ModelList{Object: "list", Data: []openai.Model{{
		ID: s.opts.ModelName, Object: "model", Created: s.created, OwnedBy: "gorstar", MaxModelLen: o.MaxContext,
	}}})
	return nil
}

// choice is one finished generation.
type choice struct {
	tokens   []int32
	logprobs []float32
	top      [][]engine.TokenLogProb // with top logprobs asked for
	finish   engine.FinishReason
	stop     string // the stop string that ended it, if any
}

// samples is n copies of req, the i-th seeded seed+i when req has a seed (OpenAI's n with seed).
func samples(req engine.Request, n int) []engine.Request {
	reqs := make([]engine.Request, n)
	for i := range reqs {
		reqs[i] = req
		if req.Sampling.Seed != nil {
			seed := *req.Sampling.Seed + uint64(i)
			reqs[i].Sampling.Seed = &seed
		}
	}
	return reqs
}

// generate runs n sequences of req (seeds seed, seed+1, … when a seed is given) and waits for all.
func (s *Server) generate(ctx context.Context, req engine.Request, n int) ([]choice, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // frees every sequence if one fails
	seqs, err := s.eng.SubmitAll(ctx, samples(req, n))
	if err != nil {
		return nil, err
	}
	out := make([]choice, n)
	for i, seq := range seqs {
		o, err := seq.Wait(ctx)
		if err != nil {
			return nil, err
		}
		if o.Finish == engine.FinishCancelled {
			return nil, ctx.Err()
		}
		out[i] = choice{tokens: o.Tokens, logprobs: o.LogProbs, top: o.Top, finish: o.Finish, stop: o.Stop}
	}
	return out, nil
}

// text decodes a choice's tokens as the answer shows them: without control tokens, without the
// stop token that ended it, and cut before the stop string that ended it unless keepStop
// (include_stop_str_in_output), which cuts after it.
func (s *Server) text(c choice, stopTokens []int32, keepStop bool) string {
	ids := c.tokens
	if c.finish == engine.FinishStop && c.stop == "" && len(ids) > 0 && containsID(stopTokens, ids[len(ids)-1]) {
		ids = ids[:len(ids)-1]
	}
	text := s.tok.DecodeSkipSpecial(ids)
	if c.stop != "" {
		if i := strings.Index(text, c.stop); i >= 0 {
			if keepStop {
				i += len(c.stop)
			}
			text = text[:i]
		}
	}
	return text
}

// stopReason is vLLM's stop_reason of a choice: the stop string or the stop_token_ids id that
// ended it; nil when it ended otherwise (the end-of-sequence token, the length).
func stopReason(c choice, stopTokenIDs []int32) *openai.StopReason {
	if c.finish != engine.FinishStop {
		return nil
	}
	if c.stop != "" {
		return &openai.StopReason{Text: c.stop}
	}
	if n := len(c.tokens); n > 0 && containsID(stopTokenIDs, c.tokens[n-1]) {
		return &openai.StopReason{Token: c.tokens[n-1], IsToken: true}
	}
	return nil
}

func containsID(list []int32, id int32) bool {
	for _, x := range list {
		if x == id {
			return true
		}
	}
	return false
}

func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func finishReason(f engine.FinishReason) string {
	if f == engine.FinishLength {
		return "length"
	}
	return "stop"
}

func usage(prompt, completion int) *openai.Usage {
	return &openai.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
}

func ptr[T any](v T) *T { return &v }

// nonNil keeps an empty list a list on the wire (omitempty would drop it).
func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}

// weightVersion is the weight_version every answer carries, as a JSON string.
func (s *Server) weightVersion() json.RawMessage {
	_, v := s.weights.current()
	return versionJSON(v)
}

// versionJSON is a weight version as the wire types carry it.
func versionJSON(v string) json.RawMessage {
	raw, _ := json.Marshal(v)
	return raw
}

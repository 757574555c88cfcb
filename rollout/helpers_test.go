package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"gorstar/internal/testenv"
	"gorstar/internal/testmodel"
	"gorstar/model"
	"gorstar/pytool"
	"gorstar/tokenizer"
)

func TestMain(m *testing.M) { testmodel.Main(m) }

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func byteTokenizer(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	tok, err := tokenizer.ByteLevelChat()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// tinyModel is a small random Qwen3 over the byte-level chat vocabulary.
func tinyModel(t testing.TB, tok *tokenizer.Tokenizer) *model.Model {
	t.Helper()
	c := model.Config{
		ModelType: "qwen3", VocabSize: tok.VocabSize(), HiddenSize: 32, IntermediateSize: 64, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 8, RopeTheta: 1e4, RMSNormEps: 1e-6,
		InitializerRange: 0.5, MaxPositionEmbeddings: 4096,
	}
	m, err := model.New(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// testPool starts the real sandboxed Python pool, or skips where none works here.
func testPool(t testing.TB, workers int) *pytool.Pool {
	t.Helper()
	testenv.Short(t, "starts sandboxed Python")
	testenv.Python3(t)
	cfg := pytool.DefaultOptions()
	cfg.Workers = workers
	cfg.Modules = []string{"math"}
	cfg.Timeout = 5 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := pytool.NewPool(ctx, cfg)
	if errors.Is(err, pytool.ErrNoSandbox) {
		testenv.Sandbox(t, err)
	}
	if err != nil {
		t.Fatalf("NewPool: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// scriptedBackend is a test double for the policy: every stream replays the same turn texts
// (byte-level ids), honouring the budget, end tokens and pause strings as a backend must.
type scriptedBackend struct {
	tok   *tokenizer.Tokenizer
	turns []string
	// appended records every Append, per stream, for the tests to compare.
	streams []*scriptedStream
}

func (b *scriptedBackend) Start(ctx context.Context, reqs []Request) ([]Stream, error) {
	out := make([]Stream, len(reqs))
	for i, r := range reqs {
		s := &scriptedStream{b: b, req: r}
		b.streams = append(b.streams, s)
		out[i] = s
	}
	return out, nil
}

type scriptedStream struct {
	b        *scriptedBackend
	req      Request
	next     int
	used     int
	appended [][]int32
	closed   bool
}

// scriptedLogProb is the log-probability the double reports for every token.
const scriptedLogProb = -0.5

func (s *scriptedStream) Next(ctx context.Context) (Turn, error) {
	if s.next >= len(s.b.turns) {
		return Turn{}, errors.New("script: no more turns")
	}
	ids := s.b.tok.Encode(s.b.turns[s.next])
	s.next++
	t := Turn{End: EndPaused, WeightVersion: 7}
	if left := s.req.MaxResponseTokens - s.used; len(ids) >= left {
		ids, t.End = ids[:left], EndLength
	} else if slices.Contains(s.req.EndTokens, ids[len(ids)-1]) {
		t.End = EndClosed
	}
	s.used += len(ids)
	t.Tokens = ids
	for range ids {
		t.LogProbs = append(t.LogProbs, scriptedLogProb)
	}
	return t, nil
}

func (s *scriptedStream) Append(ctx context.Context, ids []int32) error {
	if s.used+len(ids) > s.req.MaxResponseTokens {
		return errors.New("script: append past the budget")
	}
	s.used += len(ids)
	s.appended = append(s.appended, ids)
	return nil
}

func (s *scriptedStream) Close() { s.closed = true }

func call(code string) string {
	return "<tool_call>\n{\"name\": \"python\", \"arguments\": {\"code\": " + quote(code) + "}}\n</tool_call>"
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

package rollout

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"gorstar/model"
)

// TestBenchRuns checks the bench's plumbing at a small size (no timing is asserted).
func TestBenchRuns(t *testing.T) {
	tok := byteTokenizer(t)
	pool := testPool(t, 4)
	o := BenchOptions{Rollouts: 8, Groups: 4, Concurrency: 4, MaxTurns: 3, MinTurnTokens: 4, MaxTurnTokens: 8}
	res, err := Bench(ctxT(t), tinyModel(t, tok), tok, pool, o)
	if err != nil {
		t.Fatal(err)
	}
	script := newBenchScript(o)
	tokens, calls := 0, 0
	for p := 0; p < 2; p++ {
		for s := 0; s < 4; s++ {
			n, turns := script.plan(p, s)
			tokens += n * turns
			calls += turns - 1
		}
	}
	if res.GeneratedTokens != tokens || res.ToolCalls != calls || res.FailedToolCalls != 0 ||
		res.OverlappedS <= 0 || res.NaiveS <= 0 || res.EngineOnlyTokensPerS <= 0 ||
		res.ToolCallCPUMS < 0 || res.OutsideCPUShare < 0 || res.OutsideCPUShare > 1 {
		t.Errorf("%+v; want %d tokens and %d calls, none failed", res, tokens, calls)
	}
}

// BenchmarkRollout is `gorstar rollout bench --preset tiny`: 256 rollouts, 64 at once, 200 ms tools
// (GORSTAR_TOOL_SLEEP_MS and GORSTAR_ROLLOUTS to change), overlapped against naive, and decoding
// against the engine alone. Run with -benchtime 1x -timeout 30m.
func BenchmarkRollout(b *testing.B) {
	tok := byteTokenizer(b)
	o := DefaultBenchOptions()
	if ms, err := strconv.Atoi(os.Getenv("GORSTAR_TOOL_SLEEP_MS")); err == nil {
		o.ToolSleep = time.Duration(ms) * time.Millisecond
	}
	if n, err := strconv.Atoi(os.Getenv("GORSTAR_ROLLOUTS")); err == nil {
		o.Rollouts = n
	}
	pool := testPool(b, o.Concurrency)
	cfg, err := model.Preset("tiny", tok.VocabSize())
	if err != nil {
		b.Fatal(err)
	}
	m, err := model.New(cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	for i := 0; i < b.N; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		res, err := Bench(ctx, m, tok, pool, o)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(res.OverlappedS, "overlapped_s")
		b.ReportMetric(res.NaiveS, "naive_s")
		b.ReportMetric(res.Speedup, "speedup")
		b.ReportMetric(res.DecodeTokensPerS, "decode_tok/s")
		b.ReportMetric(res.EngineOnlyTokensPerS, "engine_only_tok/s")
		b.ReportMetric(res.ToolP50MS, "tool_p50_ms")
	}
}

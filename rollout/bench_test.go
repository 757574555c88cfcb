package rollout

import (
	"context"
	"math"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"gorstar/internal/testenv"
	"gorstar/model"
	"gorstar/pytool"
)

// TestBenchRuns checks the bench's plumbing at a small size (no timing is asserted).
func TestBenchRuns(t *testing.T) {
	testenv.Short(t, "a bench run as a test")
	tok := byteTokenizer(t)
	pool := testPool(t, 4)
	o := BenchOptions{Rollouts: 8, Groups: 4, Concurrency: 4, MaxTurns: 3, MinTurnTokens: 4, MaxTurnTokens: 8, Repeats: 2}
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
	cpuOK := pytool.ReadCPU().OK
	if cpuOK && (res.EngineCores <= 0 || res.EngineOnlyCores <= 0 ||
		res.EngineOnlyCores > 1.25*float64(runtime.NumCPU())) {
		t.Errorf("engine cores %v, alone %v; want both above 0 and at most the machine's %d",
			res.EngineCores, res.EngineOnlyCores, runtime.NumCPU())
	}
	if cpuOK && (res.CPUBoundShare <= 0 || res.CPUBoundShare > 1) {
		t.Errorf("cpu_bound_share %v, want in (0, 1]", res.CPUBoundShare)
	}
	if len(res.Runs) != 2 {
		t.Fatalf("%d runs, want 2", len(res.Runs))
	}
	for _, r := range res.Runs {
		if len(r.EngineOnlyRuns) != 2 || r.EngineOnlyRuns[0] <= 0 || r.EngineOnlyRuns[1] <= 0 ||
			r.EngineOnlyTokensPerS != (r.EngineOnlyRuns[0]+r.EngineOnlyRuns[1])/2 {
			t.Errorf("engine alone %v, mean %v; want two runs and their mean", r.EngineOnlyRuns, r.EngineOnlyTokensPerS)
		}
		if r.GeneratedTokens != tokens || r.ToolCalls != calls || r.Speedup != r.NaiveS/r.OverlappedS ||
			r.DecodeShare != r.DecodeTokensPerS/r.EngineOnlyTokensPerS || r.Runs != nil ||
			r.AppendedTokens < calls || r.RowShare <= r.DecodeShare {
			t.Errorf("repeat %+v", r)
		}
	}
}

// TestMedianResult pins how repeats combine: each rate and ratio is the median of the repeats'
// (so a ratio is a median of paired ratios, not a ratio of medians), failed calls add up.
func TestMedianResult(t *testing.T) {
	runs := []BenchResult{
		{OverlappedS: 10, NaiveS: 12, Speedup: 1.2, DecodeTokensPerS: 500, EngineOnlyTokensPerS: 1000, DecodeShare: 0.5, FailedToolCalls: 1, ToolCalls: 7},
		{OverlappedS: 8, NaiveS: 14, Speedup: 1.75, DecodeTokensPerS: 700, EngineOnlyTokensPerS: 800, DecodeShare: 0.875, ToolCalls: 7},
		{OverlappedS: 9, NaiveS: 9, Speedup: 1, DecodeTokensPerS: 600, EngineOnlyTokensPerS: 900, DecodeShare: 600.0 / 900, FailedToolCalls: 2, ToolCalls: 7},
	}
	res := medianResult(runs)
	if res.OverlappedS != 9 || res.NaiveS != 12 || res.Speedup != 1.2 || res.DecodeTokensPerS != 600 ||
		res.EngineOnlyTokensPerS != 900 || res.DecodeShare != 600.0/900 || res.FailedToolCalls != 3 ||
		res.ToolCalls != 7 || len(res.Runs) != 3 {
		t.Errorf("%+v", res)
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

// The CPU bound: the engine alone's time against its CPU and the tools' spread over the cores.
func TestCPUBoundShare(t *testing.T) {
	for _, c := range []struct {
		alone, engineCores, toolCPU float64
		cores                       int
		want                        float64
	}{
		{2, 1.75, 0, 2, 1},     // the tools fit in the idle quarter core and more
		{2, 1.75, 0.5, 2, 1},   // exactly the idle time
		{2, 1.75, 4.5, 2, 0.5}, // (3.5 + 4.5) / 2 = 4 s
		{2.64, 1.76, 8.6, 2, 2.64 / ((1.76*2.64 + 8.6) / 2)},
		{0, 1, 1, 2, 0},
	} {
		if got := cpuBoundShare(c.alone, c.engineCores, c.toolCPU, c.cores); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("cpuBoundShare(%v, %v, %v, %d) = %v, want %v", c.alone, c.engineCores, c.toolCPU, c.cores, got, c.want)
		}
	}
}

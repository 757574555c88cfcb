package eval

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"gorstar/chat"
	"gorstar/config"
	"gorstar/engine"
	"gorstar/internal/testmodel"
)

// BenchmarkEvalVsEngine evaluates 100 problems × 16 samples of the tiny preset natively (with the
// tool on; a random model calls none, so this is the loop's own cost: rendering, turn handling,
// grading twice, the checkpoint and the files) and then generates the same number of tokens,
// sample for sample, from the same prompts on a plain engine. It reports both rates and their
// ratio (the target is ≥ 0.8).
//
//	go test ./eval/ -run XXX -bench EvalVsEngine -benchtime 1x
func BenchmarkEvalVsEngine(b *testing.B) {
	problems, samples, maxTokens, concurrency := benchSize()
	dir := b.TempDir()
	model := testmodel.TinyDir(b)
	data := writeProblems(b, dir, problems)
	for range b.N {
		o := Options{Eval: config.Eval{Samples: samples, Temperature: 0.6, MaxTurns: 4, MaxResponseTokens: maxTokens}, TopP: 1, Seed: 3, Data: data,
			Out: filepath.Join(dir, "bench.parquet"), Model: model, Concurrency: concurrency, Version: "bench"}
		o.Progress.Quiet = true
		os.Remove(o.Out)
		res, err := Run(b.Context(), o)
		if err != nil {
			b.Fatal(err)
		}
		recs, err := ReadResults(o.Out)
		if err != nil {
			b.Fatal(err)
		}
		engineRate, tokens := plainEngine(b, model, data, recs, concurrency)
		b.ReportMetric(res.TokensPerS, "eval_tok/s")
		b.ReportMetric(engineRate, "engine_tok/s")
		b.ReportMetric(res.TokensPerS/engineRate, "ratio")
		b.ReportMetric(float64(tokens), "tokens")
	}
}

// plainEngine generates, for every evaluated sample, as many tokens as it generated, from its
// prompt with its seed, all submitted at once; it returns tokens per second.
func plainEngine(b *testing.B, model, data string, recs []Record, concurrency int) (float64, int) {
	p, err := engine.LoadPolicy(model, engine.PolicyOptions{Primer: "<reason>", Engine: engine.Options{MaxSeqs: concurrency}})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	r, err := p.Renderer(chat.DefaultOptions().Tools)
	if err != nil {
		b.Fatal(err)
	}
	ps, err := loadProblems(b.Context(), data, 0)
	if err != nil {
		b.Fatal(err)
	}
	reqs := make([]engine.Request, len(recs))
	total := 0
	for i, rec := range recs {
		if rec.Generated == 0 {
			continue // nothing to generate; MaxTokens 0 would mean "to the capacity"
		}
		ids, err := r.RenderPrompt([]chat.Message{{Role: chat.RoleUser, Content: ps[rec.ProblemIndex].Problem}})
		if err != nil {
			b.Fatal(err)
		}
		seed := rec.Seed
		reqs[i] = engine.Request{Prompt: ids, MaxTokens: rec.Generated,
			Sampling: engine.Sampling{Temperature: 0.6, TopP: 1, Seed: &seed}}
		total += rec.Generated
	}
	start := time.Now()
	kept := reqs[:0]
	for _, r := range reqs {
		if r.MaxTokens > 0 {
			kept = append(kept, r)
		}
	}
	seqs, err := p.Engine.SubmitAll(b.Context(), kept)
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range seqs {
		if _, err := s.Wait(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
	return float64(total) / time.Since(start).Seconds(), total
}

// benchSize is 100 problems × 16 samples of up to 16 tokens, 64 in flight; GORSTAR_EVAL_BENCH_PROBLEMS
// shrinks the problem count for a quick look.
func benchSize() (problems, samples, maxTokens, concurrency int) {
	problems = 100
	if n, err := strconv.Atoi(os.Getenv("GORSTAR_EVAL_BENCH_PROBLEMS")); err == nil && n > 0 {
		problems = n
	}
	return problems, 16, 16, 64
}

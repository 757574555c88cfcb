package cmd

import (
	"path/filepath"
	"testing"
)

// badModelDir makes a tiny model directory for the cases that need one.
func badModelDir(t *testing.T) (shared, dir string) {
	t.Helper()
	shared = t.TempDir()
	dir = filepath.Join(shared, "tiny")
	if r := runCLI(t, "model", "init", "--out", dir, "--preset", "tiny", "--quiet"); r.Code != 0 {
		t.Fatalf("model init: %+v", r)
	}
	return shared, dir
}

// Sizes, counts and thread-like numbers outside their range, and allocations the machine cannot
// hold, are refused before any work, with the flag to change.
func TestBadSizesAndCounts(t *testing.T) {
	shared, m := badModelDir(t)
	runBad(t, shared, []badCase{
		{args: []string{"model", "bench", "--preset", "tiny", "--seq", "1000000000"}, want: "--seq: must be in 2..4096, got 1000000000"},
		{args: []string{"model", "bench", "--preset", "tiny", "--batch", "100000000"}, want: "--batch: must be in 1..65536"},
		{args: []string{"model", "bench", "--preset", "tiny", "--batch", "60000", "--seq", "4096"}, want: "lower --batch or --seq"},
		{args: []string{"model", "bench", "--preset", "tiny", "--recompute", "99"}, want: "--recompute: must be in 0..4, got 99"},
		{args: []string{"model", "bench", "--model", m, "--steps", "0"}, want: "--steps: must be in 1.."},
		{args: []string{"model", "bench", "--preset", "tiny", "--prompt-len", "8"}, want: "--prompt-len applies to --generate"},
		{args: []string{"model", "bench", "--generate", "--preset", "tiny", "--new-tokens", "0"}, want: "--new-tokens: must be in 1.."},
		{args: []string{"model", "bench", "--generate", "--preset", "tiny", "--prompt-len", "5000"}, want: "past the context of 4096 tokens"},
		{args: []string{"model", "bench", "--generate", "--preset", "tiny", "--seq", "8"}, want: "--seq applies to --train"},
		{args: []string{"model", "bench", "--generate", "--preset", "tiny", "--batch", "0"}, want: "--batch: must be in 1.."},
		{args: []string{"serve", "--model", m, "--step-tokens", "1000000000"}, want: "--step-tokens: must be in 1..65536"},
		{args: []string{"serve", "--model", m, "--max-seqs", "100000000"}, want: "--max-seqs: must be in 1..4096"},
		{args: []string{"serve", "--model", m, "--kv-tokens", "1000000000"}, want: "--kv-tokens 1000000000: the engine needs about"},
		{args: []string{"serve", "--model", m, "--max-waiting", "-1"}, want: "--max-waiting: must be in 0.."},
		{args: []string{"exec", "serve", "--workers", "100000"}, want: "--workers 100000: at most"},
		{args: []string{"exec", "bench", "--workers", "100000"}, want: "--workers 100000: at most"},
		{args: []string{"exec", "bench", "--calls", "-5"}, want: "--calls: must be in 1.."},
		{args: []string{"exec", "bench", "--duration", "0s"}, want: "--duration: must be positive"},
		{args: []string{"exec", "bench", "--concurrency", "0"}, want: "--concurrency: must be in 1.."},
		{args: []string{"exec", "run", "--max-chars", "-5", "--code", "print(1)"}, want: "--max-chars: must be in 0.."},
		{args: []string{"chat", "--model", m, "--max-turns", "0"}, want: "--max-turns: must be in 1..1000"},
		{args: []string{"chat", "--model", m, "--max-turn-tokens", "0"}, want: "--max-turn-tokens: must be in 1.."},
		{args: []string{"chat", "--model", m, "--temperature", "-1"}, want: "--temperature: must be in 0..10"},
		{args: []string{"model", "logprobs", "--model", filepath.Join(m, "config.json"), "--text", "hi"}, want: "is a file; give the model directory"},
		{args: []string{"model", "logprobs", "--model", "nope", "--text", "hi"}, want: "--model nope: no such directory"},
	})
}

// Clients of a server fail within their timeout, naming the address, when nothing answers; flags
// that would do nothing are refused.
func TestBadClientsAndIgnoredFlags(t *testing.T) {
	addr := "http://" + freeAddr(t)
	runBad(t, "", []badCase{
		{args: []string{"exec", "bench", "--endpoint", addr, "--timeout", "2s"}, want: "exec server " + addr + ": not ready after 2s"},
		{args: []string{"chat", "--endpoint", addr}, want: "--endpoint " + addr + ": nothing answers"},
		{args: []string{"data", "synth", "--device", "rocm", "--out", "x.jsonl"}, want: "data synth: --device does nothing here"},
		{args: []string{"data", "import", "--in", "a.jsonl", "--out", "b.jsonl", "--run-dir", "r"}, want: "--run-dir does nothing here"},
		{args: []string{"--threads", "4", "exec", "run", "--code", "print(1)"}, want: "exec run: --threads does nothing here"},
		{args: []string{"data", "stats", "--seed", "3", "x.parquet"}, want: "data stats: --seed does nothing here"},
	})
}

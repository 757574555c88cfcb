package rundir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gorstar/internal/usererr"
)

func TestOpenWritesConfigMetricsAndLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "runs", "a")
	r, err := Open(dir, []byte("[run]\nname = 'a'\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Metric(map[string]any{"step": 1, "loss": 2.5}); err != nil {
		t.Fatal(err)
	}
	r.Logf("hello %d", 7)
	// Records are on disk before Close: a crash loses nothing already recorded.
	ms, err := ReadMetrics(r.Path("metrics.jsonl"))
	if err != nil || len(ms) != 1 || ms[0]["loss"] != 2.5 {
		t.Fatalf("metrics %v %v", ms, err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	cfg, _ := os.ReadFile(filepath.Join(dir, "config.toml"))
	logText, _ := os.ReadFile(filepath.Join(dir, "log.txt"))
	if !strings.Contains(string(cfg), "name = 'a'") || !strings.Contains(string(logText), "hello 7") {
		t.Fatalf("config %q log %q", cfg, logText)
	}
	// Reopening appends (resume).
	r, err = Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Metric(map[string]any{"step": 2})
	r.Close()
	ms, _ = ReadMetrics(filepath.Join(dir, "metrics.jsonl"))
	if len(ms) != 2 {
		t.Fatalf("want 2 records after resume, got %d", len(ms))
	}
}

func TestLockStopsSecondWriter(t *testing.T) {
	dir := t.TempDir()
	r, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = Open(dir, nil)
	if err == nil || !usererr.Is(err) || !strings.Contains(err.Error(), "in use by process") {
		t.Fatalf("second open: %v", err)
	}
}

func TestReadMetricsBadLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "metrics.jsonl")
	os.WriteFile(p, []byte("{\"a\":1}\n{oops\n"), 0o644)
	_, err := ReadMetrics(p)
	if err == nil || !strings.Contains(err.Error(), "metrics.jsonl:2: invalid JSON") {
		t.Fatalf("got %v", err)
	}
}

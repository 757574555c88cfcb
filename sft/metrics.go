package sft

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"gorstar/internal/atomicfile"
)

// metricsLog appends one JSON object a line to OUT/metrics.jsonl, each line written through so a
// killed run keeps every step it finished.
type metricsLog struct{ f *os.File }

// openMetrics starts OUT/metrics.jsonl at step `from`: lines of later steps (written after the
// checkpoint a resume starts from) are dropped, so every step appears once.
func openMetrics(out string, from int) (*metricsLog, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", out, err)
	}
	path := filepath.Join(out, "metrics.jsonl")
	kept, err := metricsUpTo(path, from)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteBytes(path, kept); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &metricsLog{f}, nil
}

// metricsUpTo returns the lines of path whose step is at most step (none when the file is missing).
func metricsUpTo(path string, step int) ([]byte, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) || step == 0 {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var kept bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct{ Step int }
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Step > step {
			continue // a line cut by a kill, or a step redone after the resume
		}
		kept.Write(sc.Bytes())
		kept.WriteByte('\n')
	}
	return kept.Bytes(), nil
}

func (l *metricsLog) Write(rec map[string]any) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	if _, err := l.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("write %s: %w", l.f.Name(), err)
	}
	return nil
}

func (l *metricsLog) Close() error { return l.f.Close() }
